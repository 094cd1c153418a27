// The joint plan of a Runtime with ONE ring shared by its streaming models (they never
// run at the same moment): the weight budget W is split into a shared ring of R bytes
// (a multiple of the mapping granularity) plus each model's resident blobs,
// R + sum(resident_i) <= W. A streaming model's plan is plan_residency_in_ring with the
// ring R and its own room for resident blobs (runtime/streaming/residency.h); a model
// may also keep every blob resident (it then does not use the ring). Unlike the split
// among per-model rings (budget_split.h), every byte of the ring is lookahead for
// whichever model runs. Plain C++ (no CUDA); deterministic for the same inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/multi/budget_split.h"
#include "runtime/compile/placement.h"
#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"

namespace dlr {

struct RingModel {               // one model's inputs to the shared-ring plan
  std::string name;
  double weight = 1;             // priority or expected rate (> 0)
  const ExecutionPlan* plan = nullptr;  // not owned; must outlive the call
  std::vector<double> layer_ms;  // kernel time per step (measured at open), ms
  // What compile() places the model with (runtime/compile/placement.h): the runtime's
  // target (map granularity, copy profile) and the model's options as the runtime opens
  // it. Of the options the plan reads: prefetch_next (its leading units are copied while
  // the previous model runs), prefetch_lead_ms (host time between the previous model's
  // end and this model's run() during which the prefetch goes on), alone_ms (its latency
  // alone, kMaxSlowdown's denominator; 0: the all-resident prediction), and what the
  // placement passes read (residency, arena_staging, reads from storage, ...).
  Target target;
  SessionOptions options;
  // The bytes of its input's upload, which share the link with a prefetch in the lead.
  int64_t input_bytes = 0;
  // Its prefetch may begin two models ahead: while the model before its predecessor
  // runs, behind that predecessor's own prefetch (RuntimeOptions::prefetch_depth 2).
  bool two_ahead = false;

  CopyProfile profile() const { return planning_profile(target, options); }  // what it is planned with
  bool prefetched() const { return options.prefetch_next; }
  PlacementModel inputs() const { return {plan, &target, &options, &layer_ms}; }
};

struct RingSplit {
  int64_t ring_bytes = 0;            // the shared ring (0: no model streams)
  // Per model (the order of the models): its weight budget = ring_bytes + resident
  // bytes, or plan->weight_bytes() when every blob is resident (it then does not use
  // the ring). plan_streaming with the ring layout, this budget and `resident_set`,
  // simulated with `prefetch_limit`, gives `predicted_ms`: the runtime hands the set to
  // compile() (Placement::resident); a unit search after it only lowers
  // the prediction.
  std::vector<int64_t> budget;
  // Per model: 1 when it streams through the ring (its budget may then reach or pass its
  // weight bytes: a small model streaming all of them, StreamOptions::never_resident).
  std::vector<char> in_ring;
  std::vector<int64_t> resident;     // per model: resident bytes (== weight bytes when all resident)
  std::vector<std::vector<char>> resident_set;  // per model, per weight blob: 1 = resident (all 1: all resident)
  // Per model: the SimOptions::prefetch_limit_bytes its prediction used; -1 when no
  // limit applies (the model is all resident, or not prefetched).
  std::vector<int64_t> prefetch_limit;
  // Per model: of prefetch_limit, the bytes its prediction counts as copied two models
  // ahead (RingModel::two_ahead; the runtime prefetches that much of it while the model
  // before its predecessor runs); 0 for none.
  std::vector<int64_t> prefetch_early;
  std::vector<double> predicted_ms;  // per model, simulated latency of its plan (ms)
  std::vector<double> all_resident_ms;  // per model, its latency with every blob resident (ms)
  std::vector<double> baseline_ms;      // per model, kMaxSlowdown's denominator (alone_ms, else all_resident_ms)
  // The objective's value: kSum: sum(weight_i * ms_i); kMaxSlowdown: the largest
  // ms_i / baseline_ms_i.
  double cost = 0;
  std::string how;                   // one line per model plus one for the ring
};

// The split. Rings tried: R = 0 (every model all resident; only when everything fits)
// and `ring_points` multiples of `granularity` spread evenly from 2 x granularity up to
// min(weight_budget, the largest model's weight bytes - 1), then around the best one the midpoints to its
// neighbours, halving the step up to 3 times (the optimum is sharp in R).
// For each R, each model's curve over its resident bytes: rooms spread evenly over
// [0, weight bytes - R) at resident_points - 1 points (only room 0 for a model the ring
// holds whole: it streams every blob through the ring), each planned with
// plan_residency_in_ring (at most kRingResidencySimulations simulations each; infeasible
// points are skipped), plus the all-resident point (plan_streaming with a budget of
// every weight, as model_curve). The cost of a split grows with models x points x
// rings; tests/runtime/ring_split_test.cpp (RingSplit.YoloModelsSplitQuickly) bounds it
// for the benchmark models. One point per model is picked by split_budget
// with the objective: resident bytes in 64 KiB quanta (rounded up), each candidate
// shifted by one quantum because split_budget needs budgets > 0 (the capacity passed is
// W - R + models x quantum, so the shift cancels). The R with the best objective wins
// (kMaxSlowdown: ties by the weighted sum); ties go to the smaller R.
//
// Prefetch: model i's prediction uses SimOptions{prefetched = models[i].prefetched,
// prefetch_limit_bytes = L_i}, the copy engine's free time while the previous model
// (round-robin order = the models vector; model 0's previous is the last) computes and
// during model i's lead (lead_ms, less its input's bytes):
//   L_i = min(R, max(0, bw_i x (T_prev - S_prev / bw_prev + lead_i) - input_i))   [bytes]
// with T_prev the previous model's all-resident latency (ms: the least it computes),
// S_prev its weight bytes (every byte streamed: conservative), bw the profile's peak
// pinned bandwidth in bytes per ms (peak_gbps() x 1e6).
//
// Then the round as a whole (joint_refine): each model's own best set ignores what it
// leaves the next model, so from the split a local search replaces one model's set at a
// time (its curve's sets, and the same rooms filled latest blob first, whose stream ends
// earlier in the inference) and keeps the move that most improves the objective, every
// candidate round simulated twice around the cycle with each model's limit the window
// its predecessor's simulated plan leaves: the copy engine starts after the
// predecessor's last copy and fills each ring byte once the predecessor's layer reading
// it has ended (the next model's stream starts where the predecessor's ended).
// A model with two_ahead (and >= 3 models) may start its prefetch one model earlier:
// while the model before its predecessor runs, after that model's copies and the
// predecessor's own prefetch, at most R - S_prev bytes (the predecessor's whole stream
// follows them in the ring), each once that model has released the ring byte; the rest
// of its window follows while the predecessor runs (prefetch_early: the first part).
//
// Last (spend_slack): the rooms are coarse, so a split leaves budget unused; a model's
// room grows by the unused bytes (or half or a quarter of them), planned again at the
// ring, and the move that most improves the round (evaluated as joint_refine does) is
// kept, up to 4 times.
//
// Errors: invalid_argument for bad inputs (no plan, layer times of the wrong size,
// weight <= 0, granularity <= 0 or not a multiple of 256, points < 2); out_of_memory
// naming the budget in MiB when no ring and no split fits.
Expected<RingSplit> split_shared_ring(const std::vector<RingModel>& models, int64_t weight_budget, int64_t granularity,
                                      SplitObjective objective, int ring_points = 8, int resident_points = 12);

// Model i's placement in `split`, as the runtime hands it to compile()
// (CompileInputs::placement).
Placement placement_of(const RingSplit& split, size_t i);

}  // namespace dlr
