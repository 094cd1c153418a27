// Weight placement: where every weight blob of a plan lives (resident, streamed through
// the pool, staged in the activation arena, read from storage) and how the streamed ones
// travel (transfer units, reads), planned by named passes over one PlacementState
// (docs/architecture.md, "Placement passes"). compile() runs the whole pipeline
// (plan_placement); a Runtime's joint plan (runtime/multi) runs the same passes on its
// candidates, so nothing outside this file predicts what compile() will place.
// Plain C++ (no CUDA, no file, no device).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/compile/placement_input.h"
#include "runtime/compile/plan.h"
#include "runtime/compile/target.h"
#include "runtime/options.h"
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/read_plan.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

// How much work a pass may spend (simulations). compile() uses the defaults; a joint
// plan evaluating many candidates bounds them further.
struct PassEffort {
  int residency_simulations = 0;  // 0: ResidencyOptions' default (in a shared ring: kRingResidencySimulations)
  int staging_simulations = 0;    // 0: ArenaStagingOptions' default
};

// What the passes read and write. Inputs are not owned and must outlive the state.
struct PlacementState {
  // ---- inputs ----
  const ExecutionPlan* plan = nullptr;
  const Target* target = nullptr;
  const SessionOptions* options = nullptr;
  const std::vector<double>* layer_ms = nullptr;  // kernel time per step (empty: not measured yet)
  const Placement* placement = nullptr;           // a Runtime's decision, or null
  PassEffort effort;
  CopyProfile profile;  // what budgets, residency and units are planned with (planning_profile)
  SimOptions sim;       // how the plan runs: prefetched, prefetch limit, int8 expansions (checks off while choosing)
  // ---- the placement so far ----
  StreamOptions so;     // the stream plan's inputs as chosen
  StreamPlan stream;
  ReadPlan reads;
  bool streaming = false;     // stream mode on a GPU: `stream` holds the placement
  bool from_storage = false;  // weights read from storage each inference (`reads`)
  int64_t budget_bytes = 0;   // the resolved weight budget (0: the layout's minimum)
  double predicted_ms = 0, lower_bound_ms = 0, lower_bound_calibrated_ms = 0, auto_preload_ms = 0;
  int lower_bound_expanded_steps = 0;  // LatencyBound::expanded_steps of the bound
  std::vector<std::string> notes;  // how each choice was made, one line each
  bool wants_times = false;   // a pass deferred its choice until kernel times are measured
  // Tail copies possible (tail_prefetch): residency, staging and the unit search compare
  // plans by their steady state with tail copies (true), or as single inferences, the tail
  // added after (false). plan_placement runs both and keeps the faster.
  bool tail_aware = true;
  std::vector<char> resident_set;  // the residency pass's choice, per weight blob (empty: the pass did not run)
  bool units_chosen = false;  // the staging pass ran the units pass with each unit size it tried

  bool has_times() const { return layer_ms != nullptr && !layer_ms->empty(); }
  bool streamed_ring() const { return streaming && !stream.resident && stream.layout == PoolLayout::kRing; }
  bool in_shared_ring() const { return placement != nullptr && placement->shared_ring_bytes > 0; }
};

// The copy profile a placement is planned with: the target's, or from storage, where
// every streamed byte passes the disk and then the link one unit after the other, the
// slower of the two at each size (storage_copy_profile).
CopyProfile planning_profile(const Target& target, const SessionOptions& options);

// The storage reads the options ask for (staging = host budget, depth, block).
ReadOptions read_options(const SessionOptions& options);

// A state over these inputs, nothing placed yet (sim from the options and placement).
PlacementState placement_state(const ExecutionPlan& plan, const Target& target, const SessionOptions& options,
                               const std::vector<double>& layer_ms, const Placement* placement);

// ---- the passes, in pipeline order; each returns an error or leaves the state consistent ----
// Preload, or reads in two stages (CPU; CUDA zero copy): the whole placement.
Status preload_pass(PlacementState& s);
Status two_stage_reads_pass(PlacementState& s);
// Stream mode: the budget (options or placement) resolved, the first plan (equal chunks, nothing resident).
Status budget_pass(PlacementState& s);
// Budget auto with kernel times: the smallest budget the later passes predict within the target.
Status auto_budget_pass(PlacementState& s);
// Blobs kept resident within the budget (plan_residency; in a shared ring plan_residency_in_ring,
// or the placement's fixed set).
Status residency_pass(PlacementState& s);
// Streamed blobs staged in the activation arena's idle bytes (plan_arena_staging). Where
// the units are the planner's (a session's own ring, unit search on), it also runs the
// units pass for each equal-chunk size it stages with (the default, x2, x4) and keeps the
// fastest whole (units_chosen).
Status staging_pass(PlacementState& s);
// The ring's transfer units chosen by simulation (search_ring_units).
Status units_pass(PlacementState& s);
// The next inference's leading units copied under this one's tail, as many as the
// simulated steady state gains most from (SessionOptions::tail_prefetch); predicted_ms
// becomes that steady state's latency.
Status tail_pass(PlacementState& s);
// Weights from storage, three stages: the read plan of the streamed units.
Status reads_pass(PlacementState& s);
// The prefetch limit, the simulated latency and its checks.
Status predict_pass(PlacementState& s);
// The latency no ring plan within the budget can be predicted below (lower_bound.h).
Status bound_pass(PlacementState& s);

// The whole pipeline for the state's inputs (compile() calls it).
Status plan_placement(PlacementState& s);

// ---- a Runtime's candidates (runtime/multi/ring_split.h) ----
// One model as a Runtime's joint plan places it: what compile() places it with.
// Not owned; everything must outlive the call.
struct PlacementModel {
  const ExecutionPlan* plan = nullptr;
  const Target* target = nullptr;             // the runtime's
  const SessionOptions* options = nullptr;    // the model's, as the runtime opens it
  const std::vector<double>* layer_ms = nullptr;  // measured at open
};

// What compile()'s passes give for a candidate placement in a shared ring: the
// residency pass (the candidate's set, or one chosen within its room) and, when asked,
// arena staging on top. A candidate without a ring (every weight resident) is planned
// by the budget pass and simulated.
struct PlacementEstimate {
  StreamPlan stream;           // the residency pass's plan (staging not applied)
  std::vector<char> resident;  // its resident set, per weight blob
  double residency_ms = 0;     // the residency pass's prediction (a given set: 0, not simulated)
  bool staged = false;         // staging predicted faster (staged_ms holds it)
  double staged_ms = 0;
};
// `sim`: the prefetch window and checks the candidate is evaluated with; `effort`: the
// simulations each pass may spend.
Expected<PlacementEstimate> estimate_placement(const PlacementModel& model, const Placement& candidate,
                                               const SimOptions& sim, const PassEffort& effort, bool stage);

// The latency the passes after the budget (residency, staging, units) predict at
// `budget_bytes` (>= the weights: the all-resident prediction). Used by the auto budget.
Expected<double> predict_at_budget(const PlacementState& s, int64_t budget_bytes, double all_resident_ms);

}  // namespace dlr
