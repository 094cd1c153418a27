// plan_arena_staging (arena_staging.h): greedy, largest blob first, by simulation.
#include "runtime/streaming/arena_staging.h"

#include "runtime/streaming/arena_room.h"
#include "runtime/streaming/tail_choice.h"

#include <algorithm>
#include <cstdio>

namespace dlr {
namespace {

// Staged blobs [first, last], copied as one unit into arena bytes [offset, offset + bytes)
// free after step free_after.
struct Candidate {
  int first = 0, last = 0;
  int64_t offset = -1, bytes = 0;
  int free_after = 0;
};

// The ends of the runs tried from blob b: the ring blobs after it, none staged, each but
// the last a multiple of 256 bytes (so that every blob's arena offset is), up to about
// two and four times b's bytes, within max_bytes.
std::vector<int> run_ends(const ExecutionPlan& plan, const StreamPlan& sp, const std::vector<int64_t>& offset, int b,
                          int64_t max_bytes) {
  std::vector<int> ends;
  const int64_t own = plan.weights[size_t(b)].bytes;
  int64_t bytes = own;
  int e = b;
  for (int64_t target : {2 * own, 4 * own}) {
    while (bytes < target && size_t(e + 1) < plan.weights.size()) {
      const int k = e + 1;
      const int64_t next = bytes + plan.weights[size_t(k)].bytes;
      if (!sp.in_ring(k) || offset[size_t(k)] >= 0 || plan.weights[size_t(e)].bytes % 256 != 0 || next > max_bytes)
        break;
      bytes = next;
      e = k;
    }
    if (e > b && (ends.empty() || ends.back() != e)) ends.push_back(e);
  }
  return ends;
}

bool same_taken(const ArenaTaken& a, const ArenaTaken& b) {
  return a.offset == b.offset && a.bytes == b.bytes && a.first == b.first && a.last == b.last;
}

ArenaTaken taken_by(const ExecutionPlan& plan, const Candidate& c) {
  return {c.offset, c.bytes, c.free_after + 1, plan.weights[size_t(c.last)].step};
}

// `taken` without the bytes runs a and b take.
std::vector<ArenaTaken> without(std::vector<ArenaTaken> taken, const ExecutionPlan& plan, const Candidate& a,
                                const Candidate& b) {
  const ArenaTaken ta = taken_by(plan, a), tb = taken_by(plan, b);
  taken.erase(std::remove_if(taken.begin(), taken.end(),
                             [&](const ArenaTaken& t) { return same_taken(t, ta) || same_taken(t, tb); }),
              taken.end());
  return taken;
}

// r takes the staging of t and its plan, predicted at ms.
void adopt(ArenaStagingResult& r, StreamOptions&& t, StreamPlan&& plan, double ms) {
  r.offset = std::move(t.arena_offset);
  r.wait = std::move(t.arena_wait);
  r.early = std::move(t.arena_early);
  r.joined = std::move(t.arena_joined);
  r.plan = std::move(plan);
  r.predicted_ms = ms;
}

// The options of `r` with blobs [c.first, c.last] staged as one unit at c.offset.
StreamOptions with_run(const ExecutionPlan& plan, const StreamOptions& so, const ArenaStagingResult& r,
                       const Candidate& c, char early) {
  StreamOptions t = so;
  t.arena_offset = r.offset;
  t.arena_wait = r.wait;
  t.arena_early = r.early;
  t.arena_joined = r.joined;
  int64_t at = c.offset;
  for (int k = c.first; k <= c.last; ++k) {
    t.arena_offset[size_t(k)] = at;
    t.arena_wait[size_t(k)] = c.free_after;
    t.arena_early[size_t(k)] = early;
    t.arena_joined[size_t(k)] = k > c.first;
    at += plan.weights[size_t(k)].bytes;
  }
  return t;
}

// Blob b alone, then as the first of each run run_ends gives, where the arena has room.
std::vector<Candidate> candidates(const ExecutionPlan& plan, const StreamPlan& sp, const std::vector<int64_t>& offset,
                                  const std::vector<ArenaTaken>& taken, int b, int64_t max_run_bytes) {
  std::vector<int> ends = {b};
  if (max_run_bytes > 0)
    for (int e : run_ends(plan, sp, offset, b, max_run_bytes)) ends.push_back(e);
  std::vector<Candidate> out;
  for (int e : ends) {
    Candidate c;
    c.first = b;
    c.last = e;
    for (int k = b; k <= e; ++k) c.bytes += plan.weights[size_t(k)].bytes;
    c.offset = place_run_in_arena(taken, plan.arena_bytes, c.bytes, plan.weights[size_t(b)].step,
                                  plan.weights[size_t(e)].step, &c.free_after);
    if (c.offset >= 0) out.push_back(c);
  }
  return out;
}

// Blobs [a.first, b.last] as one run: a and b staged, every blob between them in the ring
// and not staged, each but the last a multiple of 256 bytes; placed with a's and b's bytes
// given back. offset -1 when it cannot be.
Candidate joined_run(const ExecutionPlan& plan, const StreamPlan& sp, const std::vector<ArenaTaken>& taken,
                     const Candidate& a, const Candidate& b, int64_t max_bytes) {
  Candidate c;
  c.first = a.first;
  c.last = b.last;
  for (int k = c.first; k <= c.last; ++k) {
    const bool between = k > a.last && k < b.first;
    if ((between && !sp.in_ring(k)) || (k < c.last && plan.weights[size_t(k)].bytes % 256 != 0)) return c;
    c.bytes += plan.weights[size_t(k)].bytes;
  }
  if (c.bytes > max_bytes) return c;
  c.offset = place_run_in_arena(without(taken, plan, a, b), plan.arena_bytes, c.bytes, plan.weights[size_t(c.first)].step,
                                plan.weights[size_t(c.last)].step, &c.free_after);
  return c;
}

// Neighbouring staged units joined into one copy, with the ring blobs between them, where
// the simulator predicts the inference faster (a copy costs a fixed time besides its
// bytes, and the greedy pass only grows a run forward from its largest blob). A joined
// run is tried again with the next.
void join_neighbours(const ExecutionPlan& plan, const CopyProfile& profile, const StreamOptions& so,
                     const std::vector<double>& layer_ms, const SimOptions& sim, int64_t max_run_bytes, bool try_early,
                     std::vector<Candidate>& runs, std::vector<ArenaTaken>& taken, ArenaStagingResult& r) {
  std::sort(runs.begin(), runs.end(), [](const Candidate& x, const Candidate& y) { return x.first < y.first; });
  for (size_t i = 0; i + 1 < runs.size();) {
    const Candidate c = joined_run(plan, r.plan, taken, runs[i], runs[i + 1], max_run_bytes);
    bool joined = false;
    for (char early : {char(0), char(1)}) {
      if (c.offset < 0 || (early && !try_early)) break;
      StreamOptions t = with_run(plan, so, r, c, early);
      Expected<StreamPlan> p = plan_streaming(plan, profile, t);
      if (!p.ok()) continue;
      const double ms = planned_latency(plan, *p, profile, layer_ms, sim);
      ++r.simulations;
      if (!(ms < r.predicted_ms - 1e-6)) continue;
      adopt(r, std::move(t), std::move(p).value(), ms);
      joined = true;
    }
    if (!joined) {
      ++i;
      continue;
    }
    ++r.joins;
    taken = without(std::move(taken), plan, runs[i], runs[i + 1]);
    taken.push_back(taken_by(plan, c));
    runs[i] = c;
    runs.erase(runs.begin() + std::ptrdiff_t(i) + 1);
  }
}

// The greedy pass with runs up to max_run_bytes (0: each blob alone); r.how unset.
Expected<ArenaStagingResult> greedy_staging(const ExecutionPlan& plan, const CopyProfile& profile,
                                            const StreamOptions& options, const std::vector<double>& layer_ms,
                                            const ArenaStagingOptions& staging, int64_t max_run_bytes) {
  const size_t n = plan.weights.size();
  StreamOptions so = options;
  so.arena_offset.clear();
  so.arena_wait.clear();
  so.arena_early.clear();
  so.arena_joined.clear();
  ArenaStagingResult r;
  r.offset.assign(n, -1);
  r.wait.assign(n, -1);
  r.early.assign(n, 0);
  r.joined.assign(n, 0);
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
  std::vector<Candidate> runs;  // the units kept
  std::vector<int> order;
  for (size_t b = 0; b < n; ++b)
    if (r.plan.in_ring(int(b)) && plan.weights[b].bytes >= staging.min_blob_bytes) order.push_back(int(b));
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return plan.weights[size_t(a)].bytes > plan.weights[size_t(b)].bytes; });
  for (int b : order) {
    if (r.simulations >= staging.max_simulations) break;
    if (r.offset[size_t(b)] >= 0 || !r.plan.in_ring(b)) continue;  // staged in an earlier run
    // Each candidate with its copy queued late (just before the ring units after its
    // reader), then early (as soon as its bytes are free): the fastest is kept, if
    // faster than without it.
    StreamOptions best;
    const Candidate* kept = nullptr;
    const std::vector<Candidate> cands = candidates(plan, r.plan, r.offset, taken, b, max_run_bytes);
    for (const Candidate& c : cands) {
      for (char early : {char(0), char(1)}) {
        if (r.simulations >= staging.max_simulations || (early && !staging.early)) break;
        StreamOptions t = with_run(plan, so, r, c, early);
        Expected<StreamPlan> p = plan_streaming(plan, profile, t);
        if (!p.ok()) continue;  // e.g. the rest would no longer stream
        const double ms = planned_latency(plan, *p, profile, layer_ms, sim);
        ++r.simulations;
        if (!(ms < r.predicted_ms - 1e-6)) continue;
        best = std::move(t);
        r.plan = std::move(p).value();
        r.predicted_ms = ms;
        kept = &c;
      }
    }
    if (!kept) continue;
    r.offset = std::move(best.arena_offset);
    r.wait = std::move(best.arena_wait);
    r.early = std::move(best.arena_early);
    r.joined = std::move(best.arena_joined);
    taken.push_back(taken_by(plan, *kept));
    runs.push_back(*kept);
  }
  if (max_run_bytes > 0 && staging.join)
    join_neighbours(plan, profile, so, layer_ms, sim, max_run_bytes, staging.early, runs, taken, r);
  for (size_t b = 0; b < n; ++b)
    if (r.offset[b] >= 0) {
      ++r.staged;
      r.early_copies += r.early[b];
      r.staged_bytes += plan.weights[b].bytes;
      r.runs += (b + 1 < n && r.joined[b + 1] && !r.joined[b]) ? 1 : 0;
    }
  return r;
}

}  // namespace

Expected<ArenaStagingResult> plan_arena_staging(const ExecutionPlan& plan, const CopyProfile& profile,
                                                const StreamOptions& options, const std::vector<double>& layer_ms,
                                                const ArenaStagingOptions& staging) {
  DLR_ASSIGN_OR_RETURN(ArenaStagingResult r,
                       greedy_staging(plan, profile, options, layer_ms, staging, staging.max_run_bytes));
  if (!r.how.empty()) return r;  // nothing to stage into
  if (r.staged > 0) {
    SimOptions checked = staging.sim;
    checked.check = true;
    const SimResult c = simulate(plan, r.plan, profile, layer_ms, checked);
    if (!c.violations.empty())
      return internal_error("arena staging: the plan fails a check: " + c.violations.front());
  }
  char buf[400];
  std::snprintf(buf, sizeof(buf),
                "arena staging: %d blobs (%.2f MiB) copied into idle activation bytes, %d runs of several in one copy "
                "(%d joined with a neighbour), %d of them as soon as their bytes are free, predicted %.3f ms (without "
                "%.3f ms; %d simulations)",
                r.staged, double(r.staged_bytes) / 1048576.0, r.runs, r.joins, r.early_copies, r.predicted_ms,
                r.unstaged_ms, r.simulations);
  r.how = buf;
  return r;
}

}  // namespace dlr
