// The shared-ring split's round (ring_splitter.h): every model's plan simulated with
// the prefetch window its predecessor's plan leaves it, and the local searches over the
// whole round that follow a split (joint_refine: one model's resident set at a time;
// spend_slack: the budget the coarse rooms left unused).
#include <algorithm>
#include <utility>
#include <vector>

#include "runtime/multi/ring_splitter.h"

namespace dlr::ring_search {

// Model i's point in the round: its plan with the point's set (the placement passes),
// simulated with the window its predecessor's plan leaves it; staged where it stages.
// False when the plan does not fit the ring.
bool Splitter::evaluate_in_round(size_t i, int64_t ring, const std::vector<RingPoint>& pts, Candidate* c,
                                 RingPoint* p) {
  const RingModel& m = m_models[i];
  Placement fixed;
  fixed.shared_ring_bytes = ring;
  fixed.budget_bytes = ring + p->resident;
  fixed.resident = p->set;
  fixed.resident.resize(m.plan->weights.size(), 0);
  SimOptions quiet;
  quiet.check = false;
  const Expected<PlacementEstimate> plan = estimate(i, fixed, quiet, 0, false);
  if (!plan.ok()) return false;
  SimOptions sim;
  sim.check = false;
  sim.prefetched = m.prefetched();
  if (m.prefetched()) {
    const RingWindow w = prefetch_window(window_models(), pts, i, ring);
    sim.prefetch_limit_bytes = w.total;
    c->limit[i] = w.total;
    c->early[i] = w.early;
  }
  const SimResult r = simulate(*m.plan, plan->stream, m_profiles[i], m.layer_ms, sim);
  note_releases(*m.plan, plan->stream, r, p);
  p->ms = r.latency_ms;
  if (m.options.arena_staging) {
    auto key = std::make_tuple(i, ring, sim.prefetch_limit_bytes, p->set);
    auto hit = m_staged_memo.find(key);
    if (hit == m_staged_memo.end()) hit = m_staged_memo.emplace(key, staged_ms(i, ring, *p, sim, r.latency_ms)).first;
    p->ms = hit->second;
  }
  return true;
}

// The round as it runs: every model's plan simulated with the window its predecessor's
// plan leaves it, twice around the cycle (a window depends on the predecessor's
// prediction, which depends on its own window). Not ok when a plan does not fit the ring
// or the budget.
Candidate Splitter::round_eval(int64_t ring, std::vector<RingPoint> pts) {
  Candidate c;
  c.ring = ring;
  c.limit.assign(n(), -1);
  c.early.assign(n(), 0);
  int64_t used = ring;
  for (const RingPoint& p : pts) used += p.resident;
  if (used > m_budget) return c;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < n(); ++i)
      if (!pts[i].all && !evaluate_in_round(i, ring, pts, &c, &pts[i])) return c;
  c.chosen = std::move(pts);
  score(&c);
  c.ok = true;
  return c;
}

// A move of the round's searches: model i's point replaced in `from`, the round
// evaluated, kept in *best when it beats it.
void Splitter::try_move(const Candidate& from, size_t i, RingPoint p, Candidate* best) {
  std::vector<RingPoint> pts = from.chosen;
  pts[i] = std::move(p);
  Candidate d = round_eval(from.ring, std::move(pts));
  if (better(d, *best, m_objective)) *best = std::move(d);
}

// An all-resident model copies nothing, so it has no prefetch limit.
void Splitter::drop_resident_limits(Candidate* c) const {
  for (size_t i = 0; i < n(); ++i)
    if (c->chosen[i].all) c->limit[i] = -1, c->early[i] = 0;
}

// Model i's other sets at this ring: its curve's, and the same rooms filled latest blob
// first (a stream that ends earlier in the inference frees the ring sooner for the next
// model's prefetch).
std::vector<RingPoint> Splitter::alternatives(size_t i, int64_t ring) const {
  const ExecutionPlan& plan = *m_models[i].plan;
  SimOptions sim;
  sim.check = false;
  std::vector<RingPoint> alts;
  for (const RingPoint& p : curve(i, ring, sim)) {
    if (p.all) continue;
    alts.push_back(p);
    RingPoint late;
    late.set.assign(plan.weights.size(), 0);
    size_t kept = 0;
    for (size_t b = plan.weights.size(); b-- > 0;) {
      const int64_t bytes = plan.weights[b].bytes;
      if (late.resident + bytes > p.resident || kept + 1 >= plan.weights.size()) continue;
      late.set[b] = 1;
      late.resident += bytes;
      ++kept;
    }
    if (late.set != p.set) alts.push_back(std::move(late));
  }
  return alts;
}

// Each model's own best plan ignores what it leaves the next model. From a split, a
// local search over the whole round: replace one model's resident set by another of the
// same ring, keep the best move by the round's objective, repeat.
Candidate Splitter::joint_refine(Candidate c) {
  if (c.ring <= 0) return c;
  Candidate cur = round_eval(c.ring, c.chosen);
  if (!cur.ok) return c;
  std::vector<std::vector<RingPoint>> alts(n());
  for (size_t i = 0; i < n(); ++i)
    if (!c.chosen[i].all) alts[i] = alternatives(i, c.ring);
  for (int step = 0; step < kJointSteps; ++step) {
    Candidate next = cur;
    for (size_t i = 0; i < n(); ++i)
      for (const RingPoint& a : alts[i])
        if (a.set != cur.chosen[i].set) try_move(cur, i, a, &next);
    if (!better(next, cur, m_objective)) break;
    cur = std::move(next);
  }
  drop_resident_limits(&cur);
  return better(cur, c, m_objective) ? cur : c;
}

// Model i's room planned again at the candidate's ring with the window its predecessor leaves it.
bool Splitter::room_plan(const Candidate& c, size_t i, int64_t room, RingPoint* out) const {
  SimOptions sim;
  sim.check = false;
  sim.prefetched = m_models[i].prefetched();
  sim.prefetch_limit_bytes = m_models[i].prefetched() ? std::max<int64_t>(0, c.limit[i]) : 0;
  room = std::max<int64_t>(0, std::min(room, m_bases[i].total - c.ring - 1));
  Expected<PlacementEstimate> r = settled(i, c.ring, room, sim);
  if (!r.ok()) return false;
  *out = c.chosen[i];
  out->resident = r->stream.resident_bytes;
  out->set = r->resident;
  return true;
}

// The curves' rooms are coarse, so a split leaves budget unused. A model's room grows by
// the unused bytes, or half or a quarter of them, and the move that most improves the
// round is kept, while one does. (Moving a few MiB from one model to another as well was
// tried and measured slower on the H100; docs/results/journal.md, 2026-11-26, fifth session.)
Candidate Splitter::spend_slack(Candidate c) {
  if (c.ring <= 0) return c;
  for (int step = 0; step < kSlackSteps; ++step) {
    int64_t used = c.ring;
    for (const RingPoint& p : c.chosen) used += p.resident;
    const int64_t slack = m_budget - used;
    if (slack < kQuantum) break;
    Candidate next;
    for (size_t i = 0; i < n(); ++i) {
      if (c.chosen[i].all) continue;
      RingPoint grown;
      for (int64_t more : {slack, slack / 2, slack / 4})
        if (more >= kQuantum && room_plan(c, i, c.chosen[i].resident + more, &grown) &&
            grown.resident > c.chosen[i].resident)
          try_move(c, i, grown, &next);
    }
    if (!better(next, c, m_objective)) break;
    c = std::move(next);
  }
  drop_resident_limits(&c);
  return c;
}

}  // namespace dlr::ring_search
