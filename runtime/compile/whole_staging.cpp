// whole_staging.h: layers above the slot kept whole where the arena has room for them.
#include "runtime/compile/whole_staging.h"

#include <variant>
#include <vector>

#include "runtime/compile/dequant_buffers.h"
#include "runtime/compile/fusion.h"
#include "runtime/streaming/arena_room.h"

namespace dlr {

std::set<int> layers_above_slot(const ExecutionPlan& plan, int64_t slot, const CopyProfile& profile) {
  std::set<int> layers;
  if (slot <= 0) return layers;
  for (const Step& st : plan.steps) {
    if (st.weight < 0 || !std::holds_alternative<ConvParams>(st.params)) continue;
    const int64_t bytes = plan.weights[size_t(st.weight)].bytes;
    if (bytes > slot && profile.queue_depth(bytes) > 0) layers.insert(st.layer);
  }
  return layers;
}

std::set<int> stage_whole(ExecutionPlan* plan, const std::set<int>& layers) {
  // In execution order: an earlier reader takes the bytes free earliest, so that each
  // copy may start as early as the layers before it allow.
  std::vector<int> order;
  for (size_t b = 0; b < plan->weights.size(); ++b) {
    WeightBlob& w = plan->weights[b];
    w.arena_offset = -1;
    w.arena_wait = -1;
    if (layers.count(w.layer) > 0 && w.filters == 0 && w.channels == 0) order.push_back(int(b));
  }
  std::set<int> left = layers;
  std::vector<ArenaTaken> taken = arena_taken(*plan);
  for (int b : order) {
    WeightBlob& w = plan->weights[size_t(b)];
    int free_after = 0;
    const int64_t offset = place_in_arena(taken, plan->arena_bytes, w.bytes, w.step, &free_after);
    if (offset < 0) continue;
    w.arena_offset = offset;
    w.arena_wait = free_after;
    taken.push_back({offset, w.bytes, free_after + 1, w.step});
    left.erase(w.layer);
  }
  return left;
}

Expected<int> slice_and_stage(ExecutionPlan* plan, SliceOptions slicing, const std::string& cfg_path) {
  const ExecutionPlan built = *plan;
  for (;;) {  // each round slices at least one more layer, or ends
    *plan = built;
    DLR_RETURN_IF_ERROR(slice_plan(plan, slicing, cfg_path));
    const int folded = fold_shortcuts(plan);
    DLR_RETURN_IF_ERROR(add_dequant_buffers(plan));
    const std::set<int> left = stage_whole(plan, slicing.whole_layers);
    if (left.empty()) return folded;
    for (int layer : left) slicing.whole_layers.erase(layer);
  }
}

int64_t staged_whole_bytes(const ExecutionPlan& plan, int* layers) {
  int64_t bytes = 0;
  int n = 0;
  for (const WeightBlob& w : plan.weights)
    if (w.arena_offset >= 0) {
      bytes += w.bytes;
      ++n;  // a layer kept whole has one blob
    }
  if (layers != nullptr) *layers = n;
  return bytes;
}

}  // namespace dlr
