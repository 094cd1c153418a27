#include "runtime/compile/slot_choice.h"

#include "runtime/compile/slicing.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

SliceOptions slice_options(const SessionOptions& options, int64_t slot_bytes) {
  SliceOptions s;
  s.max_blob_bytes = slot_bytes;
  const bool channels = options.slice_by == SliceBy::kChannels ||
                        (options.slice_by == SliceBy::kAuto && options.device == DeviceKind::kCUDA);
  s.axis = channels ? SliceAxis::kChannels : SliceAxis::kFilters;
  // CPU: filter slices of whole 4-filter panels of the GEMM (Eigen's), so that each
  // output is summed as in the unsliced conv
  if (options.device == DeviceKind::kCPU) s.unit_fallback = 4;
  return s;
}

namespace {

// The smallest pool the plan streams through in the options' layout (0: none fits).
int64_t minimal_pool(const ExecutionPlan& plan, const Target& target, const SessionOptions& options) {
  StreamOptions so;
  so.layout = options.weight_pool;
  so.ring_granularity = target.map_granularity;
  auto sp = plan_streaming(plan, target.copy_profile, so);
  return sp.ok() ? sp->minimal_pool_bytes : 0;
}

}  // namespace

Expected<int64_t> choose_slot_bytes(const ExecutionPlan& plan, const Target& target, const SessionOptions& options,
                                    bool placed) {
  if (options.slot_bytes > 0) return options.slot_bytes;
  const WeightBudget& b = options.weight_budget;
  const bool sized = b.kind == WeightBudget::Kind::kBytes || b.kind == WeightBudget::Kind::kFraction;
  if (placed || !sized || options.device != DeviceKind::kCUDA || options.mode != WeightMode::kStream ||
      options.weights_from != WeightsFrom::kHost || plan.weights.empty())
    return int64_t(0);
  const int64_t whole_min = minimal_pool(plan, target, options);
  const int64_t budget = b.resolve(plan.weight_bytes(), whole_min);
  if (whole_min == 0 || budget >= whole_min) return int64_t(0);
  for (int parts = 2; parts <= 16; ++parts) {
    const int64_t slot = budget / parts / 256 * 256;
    if (slot < 256) break;
    ExecutionPlan sliced = plan;
    if (!slice_plan(&sliced, slice_options(options, slot), "").ok()) continue;
    const int64_t need = minimal_pool(sliced, target, options);
    if (need > 0 && need <= budget) return slot;
  }
  return int64_t(0);
}

}  // namespace dlr
