// split_shared_ring: one ring for every streaming model of a Runtime (ring_split.h).
// Every candidate placement of a model is evaluated by the placement passes compile()
// runs (estimate_placement, runtime/compile/placement.h); this file searches over them
// (rings, rooms, sets); ring_round.cpp evaluates the round's prefetch windows and
// searches over the round (ring_splitter.h has the class).
#include "runtime/multi/ring_split.h"

#include <algorithm>
#include <cstdio>

#include "runtime/multi/ring_splitter.h"
#include "runtime/streaming/residency.h"
#include "runtime/core/units.h"

namespace dlr {
namespace ring_search {
namespace {

Status check_model(const RingModel& m) {
  if (!m.plan) return invalid_argument("ring split: model " + m.name + " has no plan");
  if (!(m.weight > 0)) return invalid_argument("ring split: model " + m.name + " needs a weight > 0");
  if (!(m.options.alone_ms >= 0 && m.options.alone_ms < 1e9))
    return invalid_argument("ring split: model " + m.name + ": its latency alone must be >= 0 ms (0: unknown)");
  if (m.layer_ms.size() != m.plan->steps.size())
    return invalid_argument("ring split: model " + m.name + ": " + std::to_string(m.layer_ms.size()) +
                            " layer times for " + std::to_string(m.plan->steps.size()) + " layers");
  return Status();
}

}  // namespace

void note_releases(const ExecutionPlan& plan, const StreamPlan& stream, const SimResult& sim, RingPoint* p) {
  p->copies_end_ms = 0;
  for (double t : sim.copy_end_ms) p->copies_end_ms = std::max(p->copies_end_ms, t);
  p->streamed = stream.ring_streamed_bytes();
  p->releases.clear();
  for (size_t b = 0; b < plan.weights.size(); ++b) {
    if (!stream.in_ring(int(b))) continue;
    const int layer = plan.weights[b].step;
    p->releases.push_back({stream.blob_host_offset[b] + plan.weights[b].bytes, sim.layer_end_ms[size_t(layer)]});
  }
}

bool better(const Candidate& a, const Candidate& b, SplitObjective objective) {
  if (!a.ok) return false;
  if (!b.ok) return true;
  constexpr double kTie = 1e-12;
  if (objective == SplitObjective::kMaxSlowdown) {
    if (a.slowdown < b.slowdown - kTie) return true;
    if (a.slowdown > b.slowdown + kTie) return false;
  }
  return a.sum < b.sum - kTie;
}

Status Splitter::init() {
  for (size_t i = 0; i < n(); ++i) {
    const RingModel& m = m_models[i];
    DLR_RETURN_IF_ERROR(check_model(m));
    m_profiles.push_back(m.profile());
    ModelBase b;
    b.total = m.plan->weight_bytes();
    Placement all;
    all.budget_bytes = b.total;
    SimOptions quiet;
    quiet.check = false;
    DLR_ASSIGN_OR_RETURN(const PlacementEstimate e, estimate(i, all, quiet, 0, false));
    b.all.resident = b.total;
    b.all.ms = e.residency_ms;
    b.all.set.assign(m.plan->weights.size(), 1);
    b.all.all = true;
    m_sum_total += b.total;
    m_max_total = std::max(m_max_total, b.total);
    m_bases.push_back(std::move(b));
  }
  m_lo = 2 * m_gran;
  m_hi = std::min(m_budget, m_max_total - 1) / m_gran * m_gran;
  return Status();
}

RingWindowModel Splitter::window_model(size_t i) const {
  const RingModel& m = m_models[i];
  return {m_profiles[i].peak_gbps() * 1e6, m.prefetched(), m.two_ahead, m.options.prefetch_lead_ms, m.input_bytes};
}

std::vector<RingWindowModel> Splitter::window_models() const {
  std::vector<RingWindowModel> w;
  for (size_t i = 0; i < n(); ++i) w.push_back(window_model(i));
  return w;
}

Expected<PlacementEstimate> Splitter::estimate(size_t i, const Placement& p, const SimOptions& sim, int residency_sims,
                                               bool stage) const {
  PassEffort effort;
  effort.residency_simulations = residency_sims;
  effort.staging_simulations = kStagingSimulations;
  return estimate_placement(m_models[i].inputs(), p, sim, effort, stage);
}

// The residency pass in the ring at `room`, repeated at the resident bytes it chose until
// they are the room itself (at most 4 plans), so that the chosen set is the one the pass
// gives back for its own bytes. Not settled: an error (the point is skipped).
Expected<PlacementEstimate> Splitter::settled(size_t i, int64_t ring, int64_t room, const SimOptions& sim) const {
  Placement p;
  p.shared_ring_bytes = ring;
  p.prefetch_limit_bytes = sim.prefetch_limit_bytes;
  p.budget_bytes = ring + room;
  Expected<PlacementEstimate> r = estimate(i, p, sim, kRingResidencySimulations, false);
  for (int k = 0; k < 3 && r.ok(); ++k) {
    if (r->stream.resident_bytes == room) return r;
    room = r->stream.resident_bytes;
    p.budget_bytes = ring + room;
    r = estimate(i, p, sim, kRingResidencySimulations, false);
  }
  if (r.ok() && r->stream.resident_bytes != room) return internal_error("ring split: the resident set does not settle");
  return r;
}

// A model with arena staging: the latency the staging pass predicts on top of the ring
// plan with the point's set; `unstaged_ms` when it stages nothing or fails.
double Splitter::staged_ms(size_t i, int64_t ring, const RingPoint& pt, const SimOptions& sim,
                           double unstaged_ms) const {
  if (!m_models[i].options.arena_staging || ring <= 0) return unstaged_ms;
  Placement p;
  p.shared_ring_bytes = ring;
  p.prefetch_limit_bytes = sim.prefetch_limit_bytes;
  p.budget_bytes = ring + pt.resident;
  p.resident = pt.set;
  p.resident.resize(m_models[i].plan->weights.size(), 0);
  Expected<PlacementEstimate> e = estimate(i, p, sim, 0, true);
  return e.ok() && e->staged ? std::min(unstaged_ms, e->staged_ms) : unstaged_ms;
}

// Model i's candidates at ring R with the given simulation options: increasing in
// resident bytes, each strictly faster than every smaller one, the all-resident point
// last (kept whatever its latency: split_budget reads the slowdown against it).
std::vector<RingPoint> Splitter::curve(size_t i, int64_t ring, const SimOptions& sim) const {
  const RingModel& m = m_models[i];
  std::vector<RingPoint> pts;
  // Rooms up to the largest one that leaves more than the ring streamed; a model whose
  // weights the ring holds may still stream all of them through it (room 0), freeing its
  // bytes for the others' resident blobs.
  const int64_t hi = std::max<int64_t>(0, m_bases[i].total - ring - 1);
  if (ring > 0) {
    const int k = m_resident_points - 1;
    std::set<int64_t> rooms;
    for (int j = 0; j < k; ++j) rooms.insert(k == 1 ? 0 : hi * j / (k - 1));
    std::set<int64_t> seen;  // resident bytes already planned as a settled room
    for (int64_t room : rooms) {
      Expected<PlacementEstimate> r = settled(i, ring, room, sim);
      if (!r.ok() || !seen.insert(r->stream.resident_bytes).second) continue;
      RingPoint p;
      p.resident = r->stream.resident_bytes;
      p.set = r->resident;
      SimOptions quiet = sim;
      quiet.check = false;
      note_releases(*m.plan, r->stream, simulate(*m.plan, r->stream, m_profiles[i], m.layer_ms, quiet), &p);
      p.ms = staged_ms(i, ring, p, quiet, r->residency_ms);
      pts.push_back(std::move(p));
    }
  }
  std::sort(pts.begin(), pts.end(), [](const RingPoint& a, const RingPoint& b) {
    return a.resident != b.resident ? a.resident < b.resident : a.ms < b.ms;
  });
  std::vector<RingPoint> kept;
  for (RingPoint& p : pts)
    if (kept.empty() || p.ms < kept.back().ms) kept.push_back(std::move(p));
  kept.push_back(m_bases[i].all);
  return kept;
}

void Splitter::score(Candidate* c) const {
  c->sum = 0;
  c->slowdown = 0;
  for (size_t i = 0; i < n(); ++i) {
    c->sum += m_models[i].weight * c->chosen[i].ms;
    if (baseline(i) > 0) c->slowdown = std::max(c->slowdown, c->chosen[i].ms / baseline(i));
  }
}

// The conservative first guess of model i's prefetch limit: the copy engine's free time
// while the previous model computes its all-resident latency with every byte streamed,
// plus the lead less its input.
SimOptions Splitter::first_guess_sim(size_t i, int64_t ring, Candidate* c) const {
  const RingModel& m = m_models[i];
  const size_t prev = (i + n() - 1) % n();
  const double bw_prev = m_profiles[prev].peak_gbps() * 1e6;
  const double free_ms =
      m_bases[prev].all.ms - (bw_prev > 0 ? double(m_bases[prev].total) / bw_prev : m_bases[prev].all.ms);
  SimOptions sim;
  sim.check = false;
  sim.prefetched = m.prefetched();
  if (m.prefetched()) {
    const double bw = m_profiles[i].peak_gbps() * 1e6;
    const double limit =
        std::max({0.0, bw * free_ms, bw * (free_ms + m.options.prefetch_lead_ms) - double(m.input_bytes)});
    sim.prefetch_limit_bytes = limit >= double(ring) ? ring : int64_t(limit);
    c->limit[i] = sim.prefetch_limit_bytes;
  }
  return sim;
}

// One ring: every model's curve, then split_budget over the resident bytes. prev_choice:
// the limits come from these choices (the window each model's predecessor leaves);
// nullptr: the conservative first guess.
Candidate Splitter::try_ring(int64_t ring, const std::vector<RingPoint>* prev_choice) {
  Candidate c;
  c.ring = ring;
  c.limit.assign(n(), -1);
  c.early.assign(n(), 0);
  if (ring == 0) {  // every model all resident
    if (m_sum_total > m_budget) return c;
    for (const ModelBase& b : m_bases) c.chosen.push_back(b.all);
  } else {
    std::vector<ModelCurve> curves(n());
    std::vector<std::vector<RingPoint>> points(n());
    const std::vector<RingWindowModel> wm = window_models();
    for (size_t i = 0; i < n(); ++i) {
      SimOptions sim = first_guess_sim(i, ring, &c);
      if (m_models[i].prefetched() && prev_choice) {
        const RingWindow w = prefetch_window(wm, *prev_choice, i, ring);
        sim.prefetch_limit_bytes = w.total;
        c.limit[i] = w.total;
        c.early[i] = w.early;
      }
      points[i] = curve(i, ring, sim);
      curves[i].name = m_models[i].name;
      curves[i].weight = m_models[i].weight;
      curves[i].baseline_ms = m_models[i].options.alone_ms;
      for (const RingPoint& p : points[i]) {
        curves[i].budget_bytes.push_back(p.resident + kQuantum);  // > 0 for split_budget
        curves[i].predicted_ms.push_back(p.ms);
      }
    }
    Expected<BudgetSplit> s = split_budget(curves, m_budget - ring + int64_t(n()) * kQuantum, kQuantum, m_objective);
    if (!s.ok()) return c;
    for (size_t i = 0; i < n(); ++i) c.chosen.push_back(points[i][size_t(s->choice[i])]);
  }
  score(&c);
  for (size_t i = 0; i < n(); ++i)
    if (c.chosen[i].all) c.limit[i] = -1, c.early[i] = 0;
  c.ok = true;
  return c;
}

// A choice's own windows are at least the ones it was predicted with (its prediction is
// one it can deliver).
bool Splitter::delivers(const Candidate& d, int64_t ring) const {
  const std::vector<RingWindowModel> wm = window_models();
  for (size_t i = 0; i < n(); ++i) {
    if (d.limit[i] < 0) continue;
    if (prefetch_window(wm, d.chosen, i, ring).total + kWindowSlack < d.limit[i]) return false;
  }
  return true;
}

// One ring: the first guess, planned again with the windows of the last choice while
// that is better and delivers, then the round's refinements; kept when best so far.
void Splitter::consider(int64_t ring) {
  if (ring < 0 || (ring > 0 && (ring < m_lo || ring > m_hi)) || !m_tried.insert(ring).second) return;
  Candidate c = try_ring(ring, nullptr);
  m_feasible += c.ok;
  for (int round = 0; round < kWindowRounds && c.ok; ++round) {
    Candidate d = try_ring(ring, &c.chosen);
    if (!d.ok || !better(d, c, m_objective) || !delivers(d, ring)) break;
    c = std::move(d);
  }
  if (c.ok) c = spend_slack(joint_refine(c));
  if (better(c, m_best, m_objective)) m_best = std::move(c);
}

RingSplit Splitter::result() const {
  const Candidate& best = m_best;
  RingSplit r;
  bool streams = false;
  for (const RingPoint& p : best.chosen) streams |= !p.all;
  r.ring_bytes = streams ? best.ring : 0;
  r.cost = m_objective == SplitObjective::kMaxSlowdown ? best.slowdown : best.sum;
  int64_t resident_sum = 0;
  for (size_t i = 0; i < n(); ++i) {
    const RingPoint& p = best.chosen[i];
    const RingModel& m = m_models[i];
    r.budget.push_back(p.all ? m_bases[i].total : best.ring + p.resident);
    r.in_ring.push_back(p.all ? 0 : 1);
    r.resident.push_back(p.resident);
    r.resident_set.push_back(p.set);
    r.prefetch_limit.push_back(best.limit[i]);
    r.prefetch_early.push_back(best.limit[i] < 0 ? 0 : best.early[i]);
    r.predicted_ms.push_back(p.ms);
    r.all_resident_ms.push_back(m_bases[i].all.ms);
    r.baseline_ms.push_back(baseline(i));
    resident_sum += p.resident;
    char line[320];
    if (p.all)
      std::snprintf(line, sizeof(line), "%s: all resident (%s), predicted %.3f ms (weight %g)", m.name.c_str(),
                    mib_text(p.resident).c_str(), p.ms, m.weight);
    else
      std::snprintf(line, sizeof(line),
                    "%s: %s resident + the shared ring, predicted %.3f ms, %.2f x its %s %.3f ms "
                    "(weight %g; prefetch limit %s%s%s)",
                    m.name.c_str(), mib_text(p.resident).c_str(), p.ms, p.ms / baseline(i),
                    m.options.alone_ms > 0 ? "latency alone" : "all-resident", baseline(i), m.weight,
                    r.prefetch_limit[i] < 0 ? "none" : mib_text(r.prefetch_limit[i]).c_str(),
                    r.prefetch_early[i] > 0 ? (", " + mib_text(r.prefetch_early[i]) + " of it two models ahead").c_str()
                                            : "",
                    m.options.slot_bytes > 0 ? ("; slots of " + mib_text(m.options.slot_bytes)).c_str() : "");
    r.how += std::string(line) + "\n";
  }
  char line[320];
  std::snprintf(line, sizeof(line), "shared ring: %s + %s resident of a %s budget; %s %.3f (%d of %zu rings feasible)",
                mib_text(r.ring_bytes).c_str(), mib_text(resident_sum).c_str(), mib_text(m_budget).c_str(),
                m_objective == SplitObjective::kMaxSlowdown ? "largest slowdown" : "weighted sum of ms", r.cost,
                m_feasible, m_tried.size());
  r.how += line;
  return r;
}

Expected<RingSplit> Splitter::run() {
  std::vector<int64_t> rings = {0};
  if (m_hi >= m_lo)
    for (int i = 0; i < m_ring_points; ++i)
      rings.push_back((m_lo + (m_hi - m_lo) * i / (m_ring_points - 1)) / m_gran * m_gran);
  rings.erase(std::unique(rings.begin(), rings.end()), rings.end());
  for (int64_t ring : rings) consider(ring);
  // Around the best ring, the midpoints to its neighbours, halving the step.
  int64_t step = m_ring_points > 1 && m_hi > m_lo ? (m_hi - m_lo) / (m_ring_points - 1) : 0;
  for (int round = 0; round < kRefineRounds && m_best.ok && m_best.ring > 0 && step > m_gran; ++round) {
    step = std::max(m_gran, step / 2 / m_gran * m_gran);
    const int64_t center = m_best.ring;
    consider(center - step);
    consider(center + step);
  }
  if (!m_best.ok) {
    std::string whole;  // the models without a slot
    for (const RingModel& m : m_models)
      if (m.options.slot_bytes == 0) whole += (whole.empty() ? "" : ", ") + m.name;
    char buf[360];
    std::snprintf(buf, sizeof(buf),
                  "ring split: the weight budget %.2f MiB holds no shared ring with the models' resident blobs "
                  "(%zu rings tried; all weights %.2f MiB)",
                  double(m_budget) / 1048576.0, m_tried.size(), double(m_sum_total) / 1048576.0);
    std::string why = buf;
    if (!whole.empty())
      why += "; slot_bytes on " + whole + " would slice the layers above the slot, so that a ring of two slots runs";
    return out_of_memory(why);
  }
  // The limits and predictions of the choice as the round runs it (each model's window
  // from its predecessors' simulated plans, two ahead included): the search may have
  // kept a first guess's (a conservative formula) where no round evaluation beat it.
  if (m_best.ring > 0) {
    Candidate as_run = round_eval(m_best.ring, m_best.chosen);
    if (as_run.ok) {
      drop_resident_limits(&as_run);
      m_best = std::move(as_run);
    }
  }
  return result();
}

}  // namespace ring_search

Expected<RingSplit> split_shared_ring(const std::vector<RingModel>& models, int64_t weight_budget, int64_t granularity,
                                      SplitObjective objective, int ring_points, int resident_points) {
  if (granularity <= 0 || granularity % 256 != 0)
    return invalid_argument("ring split: the mapping granularity " + std::to_string(granularity) +
                            " bytes must be a positive multiple of 256");
  if (ring_points < 2 || resident_points < 2) return invalid_argument("ring split: at least 2 ring and resident points");
  if (weight_budget < 0) return invalid_argument("ring split: negative weight budget");
  if (models.empty()) return RingSplit{};
  ring_search::Splitter s(models, weight_budget, granularity, objective, ring_points, resident_points);
  DLR_RETURN_IF_ERROR(s.init());
  return s.run();
}

Placement placement_of(const RingSplit& split, size_t i) {
  Placement p;
  p.budget_bytes = split.budget[i];
  p.shared_ring_bytes = split.in_ring[i] ? split.ring_bytes : 0;
  p.prefetch_limit_bytes = split.prefetch_limit[i];
  if (p.shared_ring_bytes > 0) p.resident = split.resident_set[i];
  return p;
}

}  // namespace dlr
