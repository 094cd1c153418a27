// Residency planner: for a device weight budget B, which weight blobs stay resident
// on the device (uploaded once at open) and how large a ring pool streams the rest,
// chosen to minimise the latency the simulator predicts from per-layer kernel times
// and the copy profile. A budget above the minimal pool no longer buys only
// lookahead: every resident byte is a byte not copied per inference.
//
// Strategies (docs/streaming.md section 4 has the reasoning and the measurements):
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
#include "runtime/plan.h"
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

}  // namespace dlr
