// How many of the next inference's leading units a ring plan copies under its own tail
// (StreamPlan::tail_units; docs/streaming.md, "The next inference under this one's tail"),
// chosen by simulating the steady state (SimOptions::tail) for every count. Plain C++.
#pragma once

#include <vector>

#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

struct TailChoice {
  int units = 0;          // the count kept (0: none)
  int candidates = 0;     // leading units that could go under the tail (tail_wait_steps)
  double ms = 0;          // the steady-state latency with `units`
  double without_ms = 0;  // ... with none (simulate()'s latency of the plan without a tail)
};

// The fastest count, kept only where it is predicted at least `min_gain` (a fraction)
// faster than none. `stream`'s own tail is ignored. Simulates candidates + 1 times, checks off.
// expand_ms: SimOptions::expand_ms (empty: expansions in layer_ms).
TailChoice choose_tail(const ExecutionPlan& plan, const StreamPlan& stream, const CopyProfile& profile,
                       const std::vector<double>& layer_ms, double min_gain,
                       const std::vector<double>& expand_ms = {});

// The latency the placement passes compare plans by: simulate()'s, or with sim.tail the
// steady state with the best tail count, the counts scanned until one's tail copies end
// after the best latency so far (cheaper than choose_tail, which scans them all). Checks off.
double planned_latency(const ExecutionPlan& plan, const StreamPlan& stream, const CopyProfile& profile,
                       const std::vector<double>& layer_ms, const SimOptions& sim);

}  // namespace dlr
