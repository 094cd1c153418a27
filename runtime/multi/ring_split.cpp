// split_shared_ring: one ring for every streaming model of a Runtime (ring_split.h).
#include "runtime/multi/ring_split.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>
#include <set>

#include "runtime/streaming/arena_staging.h"
#include "runtime/streaming/residency.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kQuantum = int64_t(64) << 10;  // resident bytes are split in these
constexpr int kRefineRounds = 3;                 // halvings of the ring step around the best ring
constexpr int kJointSteps = 8;                   // moves of the round's local search (joint_refine)
constexpr int kSlackSteps = 4;                   // moves that hand the unused budget to a model (spend_slack)
constexpr int kWindowRounds = 3;                 // plans again with the prefetch windows of the last choice
constexpr int64_t kWindowSlack = int64_t(1) << 20;  // a window this much short of the limit used still counts
constexpr int kStagingSimulations = 24;          // per staged prediction of a model with arena staging

std::string mib(int64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.2f MiB", double(bytes) / 1048576.0);
  return buf;
}

double bytes_per_ms(const CopyProfile& p) { return p.peak_gbps() * 1e6; }

// One candidate of a model at a ring: its resident set and predicted latency.
struct Point {
  int64_t resident = 0;     // bytes
  double ms = 0;
  std::vector<char> set;    // per blob
  bool all = false;         // every blob resident (no ring)
  // Its simulated inference as the next model's prefetch sees it: when its last copy
  // ends (ms), the bytes it streams, and per streamed blob in stream order the end of
  // the blob in the stream (bytes) and when the layer reading it ends (ms).
  double copies_end_ms = 0;
  int64_t streamed = 0;
  std::vector<std::pair<int64_t, double>> releases;
};

// Fills a point's copies_end_ms, streamed and releases from its simulated plan.
void note_releases(const ExecutionPlan& plan, const StreamPlan& stream, const SimResult& sim, Point* p) {
  p->copies_end_ms = 0;
  for (double t : sim.copy_end_ms) p->copies_end_ms = std::max(p->copies_end_ms, t);
  p->streamed = stream.ring_streamed_bytes();
  p->releases.clear();
  for (size_t b = 0; b < plan.weights.size(); ++b) {
    if (!stream.in_ring(int(b))) continue;
    const int layer = plan.weights[b].layer;
    p->releases.push_back({stream.blob_host_offset[b] + plan.weights[b].bytes, sim.layer_end_ms[size_t(layer)]});
  }
}

// What a prefetch reaches while `host` (a model's simulated inference, times from its
// start) runs: the copy engine, free from t_start, moves bw bytes per ms until `end`;
// it copies the prefetched model's bytes y0, y0 + 1, ... below `cap`, where byte y
// overwrites the ring byte that held host's stream byte host.streamed + shift + y - R
// (free when negative; else once host's layer reading it has ended). shift: the bytes of
// the models whose streams lie between host's and the prefetched model's (0: it runs
// right after host). Returns the bytes reached (>= y0, <= cap) and the time.
struct Fill {
  int64_t y = 0;
  double t = 0;
};

Fill fill_window(const Point& host, int64_t ring, double bw, double t_start, double end, int64_t shift, int64_t y0,
                 int64_t cap) {
  Fill f{y0, t_start};
  if (bw <= 0 || ring <= 0 || y0 >= cap) return f;
  // Copies `len` bytes once `ready`; false when the window ends first (y then holds what fitted).
  auto copy = [&](int64_t len, double ready) {
    f.t = std::max(f.t, ready);
    if (f.t >= end) return false;
    const double fits = (end - f.t) * bw;
    if (fits < double(len)) {
      f.y += int64_t(fits);
      f.t = end;
      return false;
    }
    f.y += len;
    f.t += double(len) / bw;
    return true;
  };
  const int64_t untouched = std::min(cap, std::max<int64_t>(0, ring - shift - host.streamed));  // host never wrote them
  if (f.y < untouched && !copy(untouched - f.y, 0)) return f;
  int64_t from = host.streamed + shift + f.y - ring;  // host's stream byte the next byte y reuses
  for (const auto& [blob_end, released] : host.releases) {
    if (blob_end <= from) continue;
    if (f.y >= cap) break;
    const int64_t len = std::min(blob_end - from, cap - f.y);
    if (!copy(len, released)) return f;
    from = blob_end;
  }
  if (f.y >= ring && f.y < cap) copy(cap - f.y, 0);  // a cap past the ring: bytes that only take time
  f.y = std::min(f.y, cap);
  return f;
}

// A model's prefetch window in the round: `total` bytes in all, `early` of them copied
// two models ahead (RingSplit::prefetch_early).
struct Window {
  int64_t total = 0;
  int64_t early = 0;
};

// Model i's prefetch window in the round `pts` (round-robin order; i's predecessor
// prev = i - 1, the one before it pp = i - 2):
//  - two ahead (two_ahead, >= 3 models): while pp runs, after pp's copies and prev's own
//    prefetch (as if prev prefetched a whole ring of its stream, or all of a shorter one),
//    up to R - S_prev bytes (prev's whole stream comes after them in the ring
//    and must not overwrite them);
//  - then while prev runs, after prev's copies, until prev ends, or through i's lead
//    less the bytes of its input upload (which shares the link), whichever is more.
Window prefetch_window(const std::vector<RingModel>& models, const std::vector<Point>& pts, size_t i, int64_t ring) {
  const size_t n = pts.size();
  const RingModel& m = models[i];
  const Point& prev = pts[(i + n - 1) % n];
  const double bw = bytes_per_ms(m.profile);
  Window w;
  if (m.two_ahead && n >= 3) {
    const size_t ip = (i + n - 1) % n;
    const Point& pp = pts[(i + n - 2) % n];
    double t = pp.copies_end_ms;
    if (!prev.all && models[ip].prefetched)  // its leading units: at most a ring of its stream
      t = fill_window(pp, ring, bytes_per_ms(models[ip].profile), pp.copies_end_ms, pp.ms, 0, 0,
                      std::min(prev.streamed, ring)).t;
    w.early = fill_window(pp, ring, bw, t, pp.ms, prev.streamed, 0, std::max<int64_t>(0, ring - prev.streamed)).y;
  }
  w.total = fill_window(prev, ring, bw, prev.copies_end_ms, prev.ms, 0, w.early, ring).y;
  if (m.lead_ms > 0)  // the upload's bytes as if they followed the prefetch's
    w.total = std::max(w.total, std::min(ring, fill_window(prev, ring, bw, prev.copies_end_ms, prev.ms + m.lead_ms, 0,
                                                           w.early, ring + m.input_bytes)
                                                       .y -
                                                   m.input_bytes));
  w.early = std::min(w.early, w.total);
  return w;
}

// A model with arena staging (RingModel::arena_staging): the latency compile() will
// predict once it stages blobs in the arena's idle bytes on top of the ring plan with
// `set` (plan_arena_staging, at most kStagingSimulations simulations); `unstaged_ms`
// when it stages nothing or the staging fails.
double staged_ms(const RingModel& m, int64_t ring, int64_t granularity, int64_t resident, const std::vector<char>& set,
                 const SimOptions& sim, double unstaged_ms) {
  if (!m.arena_staging || ring <= 0) return unstaged_ms;
  StreamOptions so;
  so.layout = PoolLayout::kRing;
  so.ring_granularity = granularity;
  so.never_resident = true;
  so.budget_bytes = ring + resident;
  if (resident > 0) so.resident = set;
  ArenaStagingOptions st;
  st.sim = sim;
  st.max_simulations = kStagingSimulations;
  Expected<ArenaStagingResult> r = plan_arena_staging(*m.plan, m.profile, so, m.layer_ms, st);
  return r.ok() && r->staged > 0 ? std::min(unstaged_ms, r->predicted_ms) : unstaged_ms;
}

// Per model, computed once: the all-resident point.
struct ModelBase {
  int64_t total = 0;
  Point all;
};

// plan_residency_in_ring at `room`, repeated at the resident bytes it chose until they
// are the room itself (at most 4 plans), so that planning again with room = the chosen
// resident bytes (what compile() does with budget - ring) gives back the same set.
// Not settled: an error (the point is skipped).
Expected<ResidencyResult> settled_plan(const RingModel& m, const StreamOptions& so, int64_t ring, int64_t room,
                                       const ResidencyOptions& ro) {
  Expected<ResidencyResult> r = plan_residency_in_ring(*m.plan, m.profile, so, ring, room, m.layer_ms, ro);
  for (int i = 0; i < 3 && r.ok(); ++i) {
    if (r->plan.resident_bytes == room) return r;
    room = r->plan.resident_bytes;
    r = plan_residency_in_ring(*m.plan, m.profile, so, ring, room, m.layer_ms, ro);
  }
  if (r.ok() && r->plan.resident_bytes != room) return internal_error("ring split: the resident set does not settle");
  return r;
}

// Model m's candidates at ring R with the given simulation options: increasing in
// resident bytes, each strictly faster than every smaller one, the all-resident point
// last (kept whatever its latency: split_budget reads the slowdown against it).
std::vector<Point> ring_curve(const RingModel& m, const ModelBase& base, int64_t ring, int64_t granularity,
                              const SimOptions& sim, int resident_points) {
  std::vector<Point> pts;
  // Rooms up to the largest one that leaves more than the ring streamed; a model whose
  // weights the ring holds may still stream all of them through it (room 0), freeing its
  // bytes for the others' resident blobs.
  const int64_t hi = std::max<int64_t>(0, base.total - ring - 1);
  if (ring > 0) {
    StreamOptions so;
    so.layout = PoolLayout::kRing;
    so.ring_granularity = granularity;
    so.never_resident = true;
    ResidencyOptions ro;
    ro.sim = sim;
    ro.max_simulations = kRingResidencySimulations;
    const int k = resident_points - 1;
    std::set<int64_t> rooms;
    for (int i = 0; i < k; ++i) rooms.insert(k == 1 ? 0 : hi * i / (k - 1));
    std::set<int64_t> seen;  // resident bytes already planned as a settled room
    for (int64_t room : rooms) {
      Expected<ResidencyResult> r = settled_plan(m, so, ring, room, ro);
      if (!r.ok() || !seen.insert(r->plan.resident_bytes).second) continue;
      Point p;
      p.resident = r->plan.resident_bytes;
      p.set = r->resident;
      SimOptions quiet = sim;
      quiet.check = false;
      note_releases(*m.plan, r->plan, simulate(*m.plan, r->plan, m.profile, m.layer_ms, quiet), &p);
      p.ms = staged_ms(m, ring, granularity, p.resident, p.set, quiet, r->predicted_ms);
      pts.push_back(std::move(p));
    }
  }
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
    return a.resident != b.resident ? a.resident < b.resident : a.ms < b.ms;
  });
  std::vector<Point> kept;
  for (Point& p : pts)
    if (kept.empty() || p.ms < kept.back().ms) kept.push_back(std::move(p));
  kept.push_back(base.all);
  return kept;
}

struct Candidate {
  int64_t ring = 0;
  std::vector<Point> chosen;        // per model
  std::vector<int64_t> limit;       // per model: prefetch limit used (-1 none)
  std::vector<int64_t> early;       // per model: of it, the bytes copied two models ahead
  double sum = kInf;                // sum(weight * ms)
  double slowdown = kInf;           // max(ms / all-resident ms)
  bool ok = false;
};

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

}  // namespace

Expected<RingSplit> split_shared_ring(const std::vector<RingModel>& models, int64_t weight_budget, int64_t granularity,
                                      SplitObjective objective, int ring_points, int resident_points) {
  if (granularity <= 0 || granularity % 256 != 0)
    return invalid_argument("ring split: the mapping granularity " + std::to_string(granularity) +
                            " bytes must be a positive multiple of 256");
  if (ring_points < 2 || resident_points < 2) return invalid_argument("ring split: at least 2 ring and resident points");
  if (weight_budget < 0) return invalid_argument("ring split: negative weight budget");
  const size_t n = models.size();
  if (n == 0) return RingSplit{};
  std::vector<ModelBase> bases(n);
  int64_t sum_total = 0, max_total = 0;
  for (size_t i = 0; i < n; ++i) {
    const RingModel& m = models[i];
    if (!m.plan) return invalid_argument("ring split: model " + m.name + " has no plan");
    if (!(m.weight > 0)) return invalid_argument("ring split: model " + m.name + " needs a weight > 0");
    if (!(m.alone_ms >= 0 && m.alone_ms < 1e9))
      return invalid_argument("ring split: model " + m.name + ": its latency alone must be >= 0 ms (0: unknown)");
    if (m.layer_ms.size() != m.plan->steps.size())
      return invalid_argument("ring split: model " + m.name + ": " + std::to_string(m.layer_ms.size()) +
                              " layer times for " + std::to_string(m.plan->steps.size()) + " layers");
    ModelBase& b = bases[i];
    b.total = m.plan->weight_bytes();
    StreamOptions so;
    so.layout = PoolLayout::kRing;
    so.ring_granularity = granularity;
    so.budget_bytes = b.total;
    DLR_ASSIGN_OR_RETURN(StreamPlan all, plan_streaming(*m.plan, m.profile, so));
    SimOptions quiet;
    quiet.check = false;
    b.all.resident = b.total;
    b.all.ms = simulate(*m.plan, all, m.profile, m.layer_ms, quiet).latency_ms;
    b.all.set.assign(m.plan->weights.size(), 1);
    b.all.all = true;
    sum_total += b.total;
    max_total = std::max(max_total, b.total);
  }

  // kMaxSlowdown's denominator: the latency alone the application gave, else the
  // all-resident prediction.
  auto baseline = [&](size_t i) { return models[i].alone_ms > 0 ? models[i].alone_ms : bases[i].all.ms; };

  // One ring: every model's curve, then split_budget over the resident bytes.
  // prev_choice: the limits come from these choices (prefetch_window of each model's
  // predecessor); nullptr: the conservative first guess (every byte of the predecessor
  // streamed from the start of its all-resident latency).
  auto try_ring = [&](int64_t ring, const std::vector<Point>* prev_choice) {
    Candidate c;
    c.ring = ring;
    c.limit.assign(n, -1);
    c.early.assign(n, 0);
    if (ring == 0) {  // every model all resident
      if (sum_total > weight_budget) return c;
      for (const ModelBase& b : bases) c.chosen.push_back(b.all);
    } else {
      std::vector<ModelCurve> curves(n);
      std::vector<std::vector<Point>> points(n);
      for (size_t i = 0; i < n; ++i) {
        const RingModel& m = models[i];
        const size_t prev = (i + n - 1) % n;
        const double bw_prev = bytes_per_ms(models[prev].profile);
        const double free_ms =
            bases[prev].all.ms - (bw_prev > 0 ? double(bases[prev].total) / bw_prev : bases[prev].all.ms);
        SimOptions sim;
        sim.check = false;
        sim.prefetched = m.prefetched;
        if (m.prefetched && prev_choice) {
          const Window w = prefetch_window(models, *prev_choice, i, ring);
          sim.prefetch_limit_bytes = w.total;
          c.limit[i] = w.total;
          c.early[i] = w.early;
        } else if (m.prefetched) {
          const double bw = bytes_per_ms(m.profile);
          const double limit = std::max({0.0, bw * free_ms, bw * (free_ms + m.lead_ms) - double(m.input_bytes)});
          sim.prefetch_limit_bytes = limit >= double(ring) ? ring : int64_t(limit);
          c.limit[i] = sim.prefetch_limit_bytes;
        }
        points[i] = ring_curve(m, bases[i], ring, granularity, sim, resident_points);
        curves[i].name = m.name;
        curves[i].weight = m.weight;
        curves[i].baseline_ms = m.alone_ms;
        for (const Point& p : points[i]) {
          curves[i].budget_bytes.push_back(p.resident + kQuantum);  // > 0 for split_budget
          curves[i].predicted_ms.push_back(p.ms);
        }
      }
      Expected<BudgetSplit> s =
          split_budget(curves, weight_budget - ring + int64_t(n) * kQuantum, kQuantum, objective);
      if (!s.ok()) return c;
      for (size_t i = 0; i < n; ++i) c.chosen.push_back(points[i][size_t(s->choice[i])]);
    }
    c.sum = 0;
    c.slowdown = 0;
    for (size_t i = 0; i < n; ++i) {
      c.sum += models[i].weight * c.chosen[i].ms;
      if (baseline(i) > 0) c.slowdown = std::max(c.slowdown, c.chosen[i].ms / baseline(i));
      if (c.chosen[i].all) c.limit[i] = -1, c.early[i] = 0;
    }
    c.ok = true;
    return c;
  };

  // Staged predictions already made by round_eval: (model, ring, prefetch limit, set) -> ms.
  std::map<std::tuple<size_t, int64_t, int64_t, std::vector<char>>, double> staged_memo;
  // The round as it runs: every model's plan simulated with the window its predecessor's
  // plan leaves it, twice around the cycle (a window depends on the predecessor's
  // prediction, which depends on its own window). Fills ms, releases and the limits;
  // not ok when a plan does not fit the ring or the budget.
  auto round_eval = [&](int64_t ring, std::vector<Point> pts) {
    Candidate c;
    c.ring = ring;
    c.limit.assign(n, -1);
    c.early.assign(n, 0);
    int64_t used = ring;
    for (const Point& p : pts) used += p.resident;
    if (used > weight_budget) return c;
    for (int pass = 0; pass < 2; ++pass)
      for (size_t i = 0; i < n; ++i) {
        if (pts[i].all) continue;
        const RingModel& m = models[i];
        StreamOptions so;
        so.layout = PoolLayout::kRing;
        so.ring_granularity = granularity;
        so.budget_bytes = ring + pts[i].resident;
        so.never_resident = true;
        if (pts[i].resident > 0) so.resident = pts[i].set;
        Expected<StreamPlan> plan = plan_streaming(*m.plan, m.profile, so);
        if (!plan.ok() || plan->pool_bytes != ring || plan->resident) return c;
        SimOptions sim;
        sim.check = false;
        sim.prefetched = m.prefetched;
        if (m.prefetched) {
          const Window w = prefetch_window(models, pts, i, ring);
          sim.prefetch_limit_bytes = w.total;
          c.limit[i] = w.total;
          c.early[i] = w.early;
        }
        const SimResult r = simulate(*m.plan, *plan, m.profile, m.layer_ms, sim);
        note_releases(*m.plan, *plan, r, &pts[i]);
        pts[i].ms = r.latency_ms;
        if (m.arena_staging) {
          auto key = std::make_tuple(i, ring, sim.prefetch_limit_bytes, pts[i].set);
          auto hit = staged_memo.find(key);
          if (hit == staged_memo.end())
            hit = staged_memo.emplace(key, staged_ms(m, ring, granularity, pts[i].resident, pts[i].set, sim,
                                                      r.latency_ms))
                      .first;
          pts[i].ms = hit->second;
        }
      }
    c.chosen = std::move(pts);
    c.sum = 0;
    c.slowdown = 0;
    for (size_t i = 0; i < n; ++i) {
      c.sum += models[i].weight * c.chosen[i].ms;
      if (baseline(i) > 0) c.slowdown = std::max(c.slowdown, c.chosen[i].ms / baseline(i));
    }
    c.ok = true;
    return c;
  };
  // A move of the round's searches: model i's point replaced in `from`, the round
  // evaluated, kept in *best when it beats it.
  auto try_move = [&](const Candidate& from, size_t i, Point p, Candidate* best) {
    std::vector<Point> pts = from.chosen;
    pts[i] = std::move(p);
    Candidate d = round_eval(from.ring, std::move(pts));
    if (better(d, *best, objective)) *best = std::move(d);
  };
  // An all-resident model copies nothing, so it has no prefetch limit.
  auto drop_resident_limits = [&](Candidate* c) {
    for (size_t i = 0; i < n; ++i)
      if (c->chosen[i].all) c->limit[i] = -1, c->early[i] = 0;
  };
  // Each model's own best plan ignores what it leaves the next model. From a split, a
  // local search over the whole round: replace one model's resident set by another of
  // the same ring (its curve's sets, and the same rooms filled latest blob first: a
  // stream that ends earlier in the inference frees the ring sooner for the next
  // model's prefetch), keep the best move by the round's objective, repeat.
  auto joint_refine = [&](Candidate c) {
    if (c.ring <= 0) return c;
    Candidate cur = round_eval(c.ring, c.chosen);
    if (!cur.ok) return c;
    std::vector<std::vector<Point>> alts(n);
    for (size_t i = 0; i < n; ++i) {
      if (c.chosen[i].all) continue;
      const ExecutionPlan& plan = *models[i].plan;
      SimOptions sim;
      sim.check = false;
      for (const Point& p : ring_curve(models[i], bases[i], c.ring, granularity, sim, resident_points)) {
        if (p.all) continue;
        alts[i].push_back(p);
        Point late;  // the same room, latest blobs first
        late.set.assign(plan.weights.size(), 0);
        size_t kept = 0;
        for (size_t b = plan.weights.size(); b-- > 0;) {
          const int64_t bytes = plan.weights[b].bytes;
          if (late.resident + bytes > p.resident || kept + 1 >= plan.weights.size()) continue;
          late.set[b] = 1;
          late.resident += bytes;
          ++kept;
        }
        if (late.set != p.set) alts[i].push_back(std::move(late));
      }
    }
    for (int step = 0; step < kJointSteps; ++step) {
      Candidate next = cur;
      for (size_t i = 0; i < n; ++i)
        for (const Point& a : alts[i])
          if (a.set != cur.chosen[i].set) try_move(cur, i, a, &next);
      if (!better(next, cur, objective)) break;
      cur = std::move(next);
    }
    drop_resident_limits(&cur);
    return better(cur, c, objective) ? cur : c;
  };

  // The curves' rooms are coarse (resident_points over each model's weights: ~7 MiB
  // apart for yolov4 @608), so a split leaves budget unused. A model's room grows by the
  // unused bytes, or half or a quarter of them (a room planned again at this ring, with
  // the window its predecessor leaves it), and the move that most improves the round is
  // kept, while one does. (Moving a few MiB from one model to another as well chose, at
  // 40 % with the sum objective on the H100, a plan whose two large models measured 8 %
  // slower together than the plan chosen without those moves; docs/streaming.md section 8.)
  auto room_plan = [&](const Candidate& c, size_t i, int64_t room, Point* out) {
    StreamOptions so;
    so.layout = PoolLayout::kRing;
    so.ring_granularity = granularity;
    so.never_resident = true;
    ResidencyOptions ro;
    ro.sim.check = false;
    ro.sim.prefetched = models[i].prefetched;
    ro.sim.prefetch_limit_bytes = models[i].prefetched ? std::max<int64_t>(0, c.limit[i]) : 0;
    ro.max_simulations = kRingResidencySimulations;
    room = std::max<int64_t>(0, std::min(room, bases[i].total - c.ring - 1));
    Expected<ResidencyResult> r = settled_plan(models[i], so, c.ring, room, ro);
    if (!r.ok()) return false;
    *out = c.chosen[i];
    out->resident = r->plan.resident_bytes;
    out->set = r->resident;
    return true;
  };
  auto spend_slack = [&](Candidate c) {
    if (c.ring <= 0) return c;
    for (int step = 0; step < kSlackSteps; ++step) {
      int64_t used = c.ring;
      for (const Point& p : c.chosen) used += p.resident;
      const int64_t slack = weight_budget - used;
      if (slack < kQuantum) break;
      Candidate next;
      for (size_t i = 0; i < n; ++i) {
        if (c.chosen[i].all) continue;
        Point grown;
        for (int64_t more : {slack, slack / 2, slack / 4})
          if (more >= kQuantum && room_plan(c, i, c.chosen[i].resident + more, &grown) &&
              grown.resident > c.chosen[i].resident)
            try_move(c, i, grown, &next);
      }
      if (!better(next, c, objective)) break;
      c = std::move(next);
    }
    drop_resident_limits(&c);
    return c;
  };

  const int64_t g = granularity;
  const int64_t lo = 2 * g;
  const int64_t hi = std::min(weight_budget, max_total - 1) / g * g;
  std::vector<int64_t> rings = {0};
  if (hi >= lo)
    for (int i = 0; i < ring_points; ++i) rings.push_back((lo + (hi - lo) * i / (ring_points - 1)) / g * g);
  rings.erase(std::unique(rings.begin(), rings.end()), rings.end());
  std::set<int64_t> tried;
  Candidate best;
  int feasible = 0;
  auto consider = [&](int64_t ring) {
    if (ring < 0 || (ring > 0 && (ring < lo || ring > hi)) || !tried.insert(ring).second) return;
    Candidate c = try_ring(ring, nullptr);
    feasible += c.ok;
    // The prefetch each choice leaves its successor (prefetch_window): plan again with
    // the windows of the last choice, keeping a new choice only when it is better and
    // its own windows are at least the ones it was predicted with (the prediction stays
    // one the choice can deliver).
    for (int round = 0; round < kWindowRounds && c.ok; ++round) {
      Candidate d = try_ring(ring, &c.chosen);
      if (!d.ok || !better(d, c, objective)) break;
      bool delivers = true;
      for (size_t i = 0; i < n; ++i) {
        if (d.limit[i] < 0) continue;
        if (prefetch_window(models, d.chosen, i, ring).total + kWindowSlack < d.limit[i]) delivers = false;
      }
      if (!delivers) break;
      c = std::move(d);
    }
    if (c.ok) c = spend_slack(joint_refine(c));
    if (better(c, best, objective)) best = std::move(c);
  };
  for (int64_t ring : rings) consider(ring);
  // Around the best ring, the midpoints to its neighbours, halving the step.
  int64_t step = ring_points > 1 && hi > lo ? (hi - lo) / (ring_points - 1) : 0;
  for (int round = 0; round < kRefineRounds && best.ok && best.ring > 0 && step > g; ++round) {
    step = std::max(g, step / 2 / g * g);
    const int64_t center = best.ring;
    consider(center - step);
    consider(center + step);
  }
  if (!best.ok) {
    char buf[240];
    std::snprintf(buf, sizeof(buf),
                  "ring split: the weight budget %.2f MiB holds no shared ring with the models' resident blobs "
                  "(%zu rings tried; all weights %.2f MiB)",
                  double(weight_budget) / 1048576.0, tried.size(), double(sum_total) / 1048576.0);
    return out_of_memory(buf);
  }

  // The limits and predictions of the choice as the round runs it (each model's window
  // from its predecessors' simulated plans, two ahead included): the search may have kept
  // a first guess's (a conservative formula) where no round evaluation beat it.
  if (best.ring > 0) {
    Candidate as_run = round_eval(best.ring, best.chosen);
    if (as_run.ok) {
      drop_resident_limits(&as_run);
      best = std::move(as_run);
    }
  }
  RingSplit r;
  bool streams = false;
  for (const Point& p : best.chosen) streams |= !p.all;
  r.ring_bytes = streams ? best.ring : 0;
  r.cost = objective == SplitObjective::kMaxSlowdown ? best.slowdown : best.sum;
  int64_t resident_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const Point& p = best.chosen[i];
    r.budget.push_back(p.all ? bases[i].total : best.ring + p.resident);
    r.in_ring.push_back(p.all ? 0 : 1);
    r.resident.push_back(p.resident);
    r.resident_set.push_back(p.set);
    r.prefetch_limit.push_back(best.limit[i]);
    r.prefetch_early.push_back(best.limit[i] < 0 ? 0 : best.early[i]);
    r.predicted_ms.push_back(p.ms);
    r.all_resident_ms.push_back(bases[i].all.ms);
    r.baseline_ms.push_back(baseline(i));
    resident_sum += p.resident;
    char line[320];
    if (p.all)
      std::snprintf(line, sizeof(line), "%s: all resident (%s), predicted %.3f ms (weight %g)", models[i].name.c_str(),
                    mib(p.resident).c_str(), p.ms, models[i].weight);
    else
      std::snprintf(line, sizeof(line),
                    "%s: %s resident + the shared ring, predicted %.3f ms, %.2f x its %s %.3f ms "
                    "(weight %g; prefetch limit %s%s)",
                    models[i].name.c_str(), mib(p.resident).c_str(), p.ms, p.ms / baseline(i),
                    models[i].alone_ms > 0 ? "latency alone" : "all-resident", baseline(i),
                    models[i].weight, r.prefetch_limit[i] < 0 ? "none" : mib(r.prefetch_limit[i]).c_str(),
                    r.prefetch_early[i] > 0 ? (", " + mib(r.prefetch_early[i]) + " of it two models ahead").c_str()
                                            : "");
    r.how += std::string(line) + "\n";
  }
  char line[320];
  std::snprintf(line, sizeof(line),
                "shared ring: %s + %s resident of a %s budget; %s %.3f (%d of %zu rings feasible)",
                mib(r.ring_bytes).c_str(), mib(resident_sum).c_str(), mib(weight_budget).c_str(),
                objective == SplitObjective::kMaxSlowdown ? "largest slowdown" : "weighted sum of ms", r.cost, feasible,
                tried.size());
  r.how += line;
  return r;
}

}  // namespace dlr
