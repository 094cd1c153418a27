// Residency planner: for a device weight budget B, which weight blobs stay resident
// on the device (uploaded once at open) and how large a ring pool streams the rest,
// chosen to minimise the latency the simulator predicts from per-layer kernel times
// and the copy profile. A budget above the minimal pool no longer buys only
// lookahead: every resident byte is a byte not copied per inference.
//
// Strategies (the reasoning: docs/streaming.md section 6; measurements: section 6, "The
// budget curve", and docs/results/journal.md, 2026-11-25):
//  - none: every blob streamed through a pool of B (the plan before this planner);
//  - largest-late: the obvious heuristic: the largest blobs resident, later ones first
//    on ties, while the rest still has its minimal pool;
//  - greedy (default, "greedy by simulation"): a sweep over pool sizes from the
//    streamed set's minimum to the budget, the rest of the budget filled with resident
//    blobs in four orders (earliest first, latest first, largest first, most stall per
//    byte first), each simulated; from the best, a lazy greedy that makes resident the
//    blob whose move saves the most predicted time per byte until no move helps. The
//    best of greedy, largest-late and none is kept, so the choice is never predicted
//    slower than either baseline.
// Plain C++ (no CUDA); deterministic for the same inputs.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/compile/plan.h"
#include "runtime/options.h"  // Residency
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

// The strategy is a session option: Residency (runtime/options.h).
struct ResidencyOptions {
  Residency strategy = Residency::kGreedy;
  int max_simulations = 6000;  // bounds the greedy's work
  SimOptions sim;              // checks are off while choosing
};

struct ResidencyResult {
  std::vector<char> resident;  // per weight blob; all zero: nothing resident
  StreamPlan plan;             // plan_streaming with `resident` set (equal-chunk units)
  double predicted_ms = 0;     // simulated latency of `plan`
  // Every strategy's prediction at this budget (0: not evaluated), for reports and tests.
  double none_ms = 0, largest_late_ms = 0, greedy_ms = 0;
  Residency chosen = Residency::kNone;
  int simulations = 0;
  std::string how;             // one line: what was chosen and why
};

// options.budget_bytes: the whole device weight budget B (resident + pool), > 0 and
// below the total weight bytes (a budget holding everything is plain residency; the
// caller handles it). Ring pools only: with the slots layout, or no ring on the
// target, returns the all-streamed plan. options.resident is ignored.
// layer_ms: kernel time of every step (simulate()'s contract).
Expected<ResidencyResult> plan_residency(const ExecutionPlan& plan, const CopyProfile& profile,
                                         const StreamOptions& options, const std::vector<double>& layer_ms,
                                         const ResidencyOptions& residency = {});

// The bound on simulations per plan_residency_in_ring call that a Runtime's joint plan
// (runtime/multi/ring_split.h) uses for each point of its curves, and compile() with it
// so that it plans what the joint plan predicted. With a fixed ring the fill orders
// already fill the room and the lazy greedy only tops up what is left (the bound
// matters only for rooms with much left over).
constexpr int kRingResidencySimulations = 400;

// Residency inside a ring shared with other models (a Runtime's one ring; docs/streaming.md
// section 8): the ring pool is exactly `ring_bytes` (> 0, a multiple of
// options.ring_granularity, which must be > 0) and the resident blobs take at most
// `room_bytes` (>= 0, below the total weight bytes: a room holding every blob is plain
// residency, the caller's case; invalid_argument). The plan for a resident set S is
// plan_streaming with options.resident = S and budget_bytes = ring_bytes + bytes(S)
// (S empty: budget_bytes = ring_bytes); its pool_bytes == ring_bytes, layout kRing, and
// at least one blob streams. The streamed rest must also exceed the ring (a rest the
// ring holds whole would be planned resident, copied once at open, which a ring other
// models overwrite cannot keep), so at most total - ring_bytes - 1 bytes are resident.
// Candidates: nothing resident (if the all-streamed set has its minimal ring within
// ring_bytes), the greedy sweep's four fill orders (earliest, latest, largest, most
// stall per byte) filling the room, then the lazy greedy from the best of them, bounded
// by residency.max_simulations; the fastest predicted is kept (so never slower than the
// all-streamed plan when that is feasible). residency.strategy: kNone keeps only the
// all-streamed plan, kLargestLate adds only the largest-first fill. options.budget_bytes,
// options.resident and options.unit_ends are ignored; residency.sim is used as given
// (prefetched, prefetch_limit_bytes). No feasible set (the ring below the rest's minimal
// ring whatever fits the room, or the model within the ring): out_of_memory naming the
// ring and the room in MiB. In the result, largest_late_ms is the largest-first fill's
// prediction and none_ms the all-streamed one (0: infeasible or not evaluated).
Expected<ResidencyResult> plan_residency_in_ring(const ExecutionPlan& plan, const CopyProfile& profile,
                                                 const StreamOptions& options, int64_t ring_bytes, int64_t room_bytes,
                                                 const std::vector<double>& layer_ms,
                                                 const ResidencyOptions& residency = {});

}  // namespace dlr
