#include "runtime/compile/dequant_buffers.h"

#include <string>

#include "runtime/compile/arena_placement.h"

namespace dlr {

int64_t dequant_bytes(const WeightBlob& w) { return w.weight_elems * int64_t(dtype_size(w.dtype)); }

namespace {

// An int8 blob's weights are whole rows, one per scale.
bool whole_rows(const WeightBlob& w) { return w.scale_elems > 0 && w.weight_elems % w.scale_elems == 0; }

}  // namespace

Status check_dequant_buffers(const ExecutionPlan& plan) {
  for (const Step& st : plan.steps) {
    if (st.weight < 0 || plan.weights[size_t(st.weight)].format != WeightFormat::kInt8) continue;
    const WeightBlob& w = plan.weights[size_t(st.weight)];
    if (st.dequant < 0 || st.dequant >= int(plan.buffers.size()) ||
        plan.buffers[size_t(st.dequant)].bytes < dequant_bytes(w) || !whole_rows(w))
      return internal_error("layer " + std::to_string(st.layer) + ": an int8 weight blob without its dequant buffer");
  }
  return Status();
}

Status add_dequant_buffers(ExecutionPlan* plan) {
  bool added = false;
  for (Step& st : plan->steps) {
    if (st.weight < 0) continue;
    const WeightBlob& w = plan->weights[size_t(st.weight)];
    if (w.format != WeightFormat::kInt8) continue;
    if (st.dequant >= 0) return internal_error("step " + std::to_string(st.index) + " has a dequant buffer already");
    if (!whole_rows(w))
      return internal_error("layer " + std::to_string(st.layer) + ": int8 blob of " + std::to_string(w.weight_elems) +
                            " weights and " + std::to_string(w.scale_elems) + " scales");
    Buffer b;
    b.id = int(plan->buffers.size());
    b.dtype = w.dtype;
    b.layout = plan->options.layout;
    b.c = int(w.scale_elems);  // a filter per row: the weights' own shape, not an image
    b.h = 1;
    b.w = int(w.weight_elems / w.scale_elems);
    b.bytes = dequant_bytes(w);
    b.first_step = b.last_step = st.index;
    b.owner_layer = st.layer;
    st.dequant = b.id;
    plan->buffers.push_back(b);
    added = true;
  }
  if (added) plan->arena_bytes = place_buffers(&plan->buffers, plan->options.alignment);
  return Status();
}

}  // namespace dlr
