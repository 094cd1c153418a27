// plan_arena_staging (arena_staging.h): greedy, largest blob first, by simulation.
#include "runtime/streaming/arena_staging.h"

#include "runtime/streaming/arena_room.h"
#include "runtime/streaming/tail_choice.h"

#include <algorithm>
#include <cstdio>

namespace dlr {

Expected<ArenaStagingResult> plan_arena_staging(const ExecutionPlan& plan, const CopyProfile& profile,
                                                const StreamOptions& options, const std::vector<double>& layer_ms,
                                                const ArenaStagingOptions& staging) {
  const size_t n = plan.weights.size();
  StreamOptions so = options;
  so.arena_offset.clear();
  so.arena_wait.clear();
  so.arena_early.clear();
  ArenaStagingResult r;
  r.offset.assign(n, -1);
  r.wait.assign(n, -1);
  r.early.assign(n, 0);
  DLR_ASSIGN_OR_RETURN(r.plan, plan_streaming(plan, profile, so));
  SimOptions sim = staging.sim;
  sim.check = false;
  r.unstaged_ms = r.predicted_ms = planned_latency(plan, r.plan, profile, layer_ms, sim);
  ++r.simulations;
  if (r.plan.resident || r.plan.layout != PoolLayout::kRing || plan.arena_bytes <= 0 || plan.buffers.empty()) {
    r.how = "arena staging: none (the plan does not stream through a ring)";
    return r;
  }
  std::vector<ArenaTaken> taken = arena_taken(plan);  // the buffers and the blobs staged whole
  std::vector<int> order;
  for (size_t b = 0; b < n; ++b)
    if (r.plan.in_ring(int(b)) && plan.weights[b].bytes >= staging.min_blob_bytes) order.push_back(int(b));
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return plan.weights[size_t(a)].bytes > plan.weights[size_t(b)].bytes; });
  for (int b : order) {
    if (r.simulations >= staging.max_simulations) break;
    const WeightBlob& w = plan.weights[size_t(b)];
    int free_after = 0;
    const int64_t o = place_in_arena(taken, plan.arena_bytes, w.bytes, w.step, &free_after);
    if (o < 0) continue;
    // Its copy queued late (just before the ring units after its reader), then early (as
    // soon as its bytes are free): the faster is kept, if faster than without it.
    bool kept = false;
    for (char early : {char(0), char(1)}) {
      if (r.simulations >= staging.max_simulations || (early && !staging.early)) break;
      StreamOptions t = so;
      t.arena_offset = r.offset;
      t.arena_wait = r.wait;
      t.arena_early = r.early;
      t.arena_offset[size_t(b)] = o;
      t.arena_wait[size_t(b)] = free_after;
      t.arena_early[size_t(b)] = early;
      Expected<StreamPlan> p = plan_streaming(plan, profile, t);
      if (!p.ok()) continue;  // e.g. the rest would no longer stream
      const double ms = planned_latency(plan, *p, profile, layer_ms, sim);
      ++r.simulations;
      if (!(ms < r.predicted_ms - 1e-6)) continue;
      r.offset = std::move(t.arena_offset);
      r.wait = std::move(t.arena_wait);
      r.early = std::move(t.arena_early);
      r.plan = std::move(p).value();
      r.predicted_ms = ms;
      kept = true;
    }
    if (kept) taken.push_back({o, w.bytes, free_after + 1, w.step});
  }
  for (size_t b = 0; b < n; ++b)
    if (r.offset[b] >= 0) {
      ++r.staged;
      r.early_copies += r.early[b];
      r.staged_bytes += plan.weights[b].bytes;
    }
  if (r.staged > 0) {
    SimOptions checked = staging.sim;
    checked.check = true;
    const SimResult c = simulate(plan, r.plan, profile, layer_ms, checked);
    if (!c.violations.empty())
      return internal_error("arena staging: the plan fails a check: " + c.violations.front());
  }
  char buf[280];
  std::snprintf(buf, sizeof(buf),
                "arena staging: %d blobs (%.2f MiB) copied into idle activation bytes, %d of them as soon as their "
                "bytes are free, predicted %.3f ms (without %.3f ms; %d simulations)",
                r.staged, double(r.staged_bytes) / 1048576.0, r.early_copies, r.predicted_ms, r.unstaged_ms,
                r.simulations);
  r.how = buf;
  return r;
}

}  // namespace dlr
