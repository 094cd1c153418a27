// Transfer units chosen by simulation (ring pool). plan_streaming cuts the weight
// byte stream into equal chunks; the best cut depends on where compute is heavy and
// where weights are heavy, which only per-layer kernel times tell. search_ring_units
// starts from equal chunks of several sizes, keeps the one the simulator predicts to
// be fastest, then improves its boundaries one at a time (merge two units, split one,
// move a boundary to a neighbouring blob end) while the predicted latency drops.
// Plain C++; deterministic for the same inputs. The reasoning: docs/streaming.md
// section 1 ("Units chosen by simulation"); the measured effect: section 3, "Searched
// units against equal chunks".
#pragma once

#include <vector>

#include "runtime/core/status.h"
#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

struct UnitSearchOptions {
  int max_simulations = 4000;  // bounds the work (each simulation is O(layers + units))
  // The searched cut replaces the equal chunks only when predicted at least this
  // fraction faster: smaller predicted gains are within the simulator's error
  // (docs/streaming.md section 3, "Searched units against equal chunks").
  double min_gain = 0.01;
  SimOptions sim;              // launch cost etc.; checks are off during the search
};

struct UnitSearchResult {
  StreamPlan plan;            // the chosen plan (plan_streaming's own unless the search gained min_gain)
  double predicted_ms = 0;    // simulated latency of `plan`
  double default_ms = 0;      // simulated latency of plan_streaming's equal chunks
  int simulations = 0;
  // No search ran: the equal chunks are predicted within min_gain of the sum of the
  // kernel times, which no cut can beat (plan is plan_streaming's own).
  bool skipped = false;
};

// `options` as for plan_streaming (its unit_ends are ignored). When the plan is not a
// streamed ring (slots, resident), returns plan_streaming's plan with its prediction.
// layer_ms: kernel time of every step (simulate()'s contract).
Expected<UnitSearchResult> search_ring_units(const ExecutionPlan& plan, const CopyProfile& profile,
                                             const StreamOptions& options, const std::vector<double>& layer_ms,
                                             const UnitSearchOptions& search = {});

}  // namespace dlr
