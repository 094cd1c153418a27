// plan_arena_staging (arena_staging.h): greedy, largest blob first, by simulation.
#include "runtime/streaming/arena_staging.h"

#include "runtime/streaming/tail_choice.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace dlr {
namespace {

constexpr int64_t kAlign = 256;

// Bytes [offset, offset + bytes) of the arena taken from step `first` through step `last`.
struct Taken {
  int64_t offset = 0, bytes = 0;
  int first = 0, last = 0;
};

// The offset where `bytes` for a reader at step `reader` are free earliest: the step
// after which they are (*free_after), or -1 when no offset is free before the reader.
int64_t place(const std::vector<Taken>& taken, int64_t arena, int64_t bytes, int reader, int* free_after) {
  std::vector<int64_t> offsets = {0};
  for (const Taken& t : taken) offsets.push_back(align_up(t.offset + t.bytes, kAlign));
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  int64_t best = -1;
  int best_f = std::numeric_limits<int>::max();
  for (int64_t o : offsets) {
    if (o + bytes > arena) break;
    int f = 0;  // after step 0 at the earliest: after the input's upload and the arena's clearing
    bool ok = true;
    for (const Taken& t : taken) {
      if (t.offset >= o + bytes || o >= t.offset + t.bytes || t.first > reader) continue;
      if (t.last >= reader) {
        ok = false;
        break;
      }
      f = std::max(f, t.last);
    }
    if (ok && f < reader && f < best_f) {
      best = o;
      best_f = f;
    }
  }
  *free_after = best_f;
  return best;
}

}  // namespace

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
  std::vector<Taken> taken;
  for (const Buffer& b : plan.buffers) taken.push_back({b.offset, b.bytes, b.first_step, b.last_step});
  std::vector<int> order;
  for (size_t b = 0; b < n; ++b)
    if (r.plan.in_ring(int(b)) && plan.weights[b].bytes >= staging.min_blob_bytes) order.push_back(int(b));
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return plan.weights[size_t(a)].bytes > plan.weights[size_t(b)].bytes; });
  for (int b : order) {
    if (r.simulations >= staging.max_simulations) break;
    const WeightBlob& w = plan.weights[size_t(b)];
    int free_after = 0;
    const int64_t o = place(taken, plan.arena_bytes, w.bytes, w.step, &free_after);
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
