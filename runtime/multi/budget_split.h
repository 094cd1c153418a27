// The joint plan of a Runtime: how one device weight budget is split among several
// models. Each model brings its predicted latency at candidate budgets (a curve from
// the residency planner, kernel times measured at open); the split picks one budget
// per model so that their sum fits and the weighted sum of predicted latencies,
// sum(weight_i * ms_i), is smallest: with weights equal to the models' expected
// rates, the device time a second of the workload takes. An exact multiple-choice
// knapsack over the candidates (dynamic programming on the bytes in `quantum` steps).
// Plain C++ (no CUDA); deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

struct ModelCurve {
  std::string name;
  double weight = 1;                  // priority or expected rate (> 0)
  std::vector<int64_t> budget_bytes;  // increasing; every entry one the model can run with
  std::vector<double> predicted_ms;   // per budget
  // kMaxSlowdown's denominator (ms): the model's latency alone when the application
  // measured it (SessionOptions::alone_ms), else 0: the last point's prediction.
  double baseline_ms = 0;
  double baseline() const { return baseline_ms > 0 ? baseline_ms : predicted_ms.back(); }
};

struct BudgetSplit {
  std::vector<int> choice;        // per model: index into its curve
  std::vector<int64_t> bytes;     // per model: the budget chosen
  int64_t total_bytes = 0;
  double cost = 0;                // sum of weight * predicted ms
  std::string how;                // one line per model
};

// What the split minimises.
enum class SplitObjective : uint8_t {
  kSum,         // sum(weight_i * ms_i): the device time of a round of the workload
  kMaxSlowdown  // max(ms_i / baseline_i): every model as close to its own preload as possible (baseline:
                // the latency alone the application gave, else the all-resident prediction)
                // (ties, then the leftover bytes, go by kSum)
};

// Fails (naming the budget and the smallest sum) when even every model's smallest
// candidate does not fit. quantum: byte granularity of the search (candidates are
// rounded up to it for the sum), > 0.
Expected<BudgetSplit> split_budget(const std::vector<ModelCurve>& models, int64_t weight_budget,
                                   int64_t quantum = int64_t(1) << 20, SplitObjective objective = SplitObjective::kSum);

// One model's curve: predicted latency at `points` budgets spread evenly from its
// minimal ring pool (ring layout only; a model whose weights fit in less than the
// minimal ring has one point) to all its weights (the last point: every blob resident, the
// preload latency), each planned by plan_residency with `sim` (e.g. prefetched).
// Budgets are multiples of `granularity` (the ring's mapping unit) except the last.
Expected<ModelCurve> model_curve(const std::string& name, const ExecutionPlan& plan, const CopyProfile& profile,
                                 const std::vector<double>& layer_ms, int64_t granularity, int points,
                                 const SimOptions& sim);

}  // namespace dlr
