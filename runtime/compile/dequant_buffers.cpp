#include "runtime/compile/dequant_buffers.h"

#include <string>
#include <vector>

#include "runtime/compile/arena_placement.h"

namespace dlr {

int64_t dequant_bytes(const WeightBlob& w) { return w.weight_elems * int64_t(dtype_size(w.dtype)); }

bool is_int8_step(const ExecutionPlan& plan, const Step& st) {
  return st.weight >= 0 && plan.weights[size_t(st.weight)].format == WeightFormat::kInt8;
}

namespace {

// An int8 blob's weights are whole rows, one per scale.
bool whole_rows(const WeightBlob& w) { return w.scale_elems > 0 && w.weight_elems % w.scale_elems == 0; }

// Per expansion group (Step::dequant_group): its first step; empty when the numbering is
// not 0, 1, ... over the int8 steps in order (every int8 step in a group, no other step).
std::vector<int> group_first_steps(const ExecutionPlan& plan) {
  std::vector<int> first;
  for (const Step& st : plan.steps) {
    const bool int8 = is_int8_step(plan, st);
    if (!int8 && st.dequant_group < 0) continue;
    if (!int8) return {};
    const int g = st.dequant_group;
    if (g == int(first.size())) {
      first.push_back(st.index);
    } else if (g != int(first.size()) - 1) {
      return {};
    }
  }
  return first;
}

}  // namespace

Status check_dequant_buffers(const ExecutionPlan& plan) {
  const std::vector<int> first = group_first_steps(plan);
  for (const Step& st : plan.steps) {
    if (!is_int8_step(plan, st)) continue;
    const std::string where = "layer " + std::to_string(st.layer) + ": ";
    const WeightBlob& w = plan.weights[size_t(st.weight)];
    if (st.dequant < 0 || st.dequant >= int(plan.buffers.size()) ||
        plan.buffers[size_t(st.dequant)].bytes < dequant_bytes(w) || !whole_rows(w))
      return internal_error(where + "an int8 weight blob without its dequant buffer");
    if (first.empty()) return internal_error(where + "int8 steps not numbered in expansion groups in step order");
    const int g = st.dequant_group;
    const int from = g > 0 ? first[size_t(g) - 1] : 0;
    const Buffer& b = plan.buffers[size_t(st.dequant)];
    if (b.first_step > from || b.last_step < st.index)
      return internal_error(where + "its dequant buffer is not live from step " + std::to_string(from) +
                            " to its own");
  }
  return Status();
}

Status add_dequant_buffers(ExecutionPlan* plan) {
  // Groups: consecutive int8 steps, closed at kGroupSteps steps or when the next blob
  // would take the group's expanded bytes above kGroupBytes (a larger blob is a group
  // of its own), so at most two groups' bytes (or two blobs) are live at once.
  constexpr int kGroupSteps = 16;
  constexpr int64_t kGroupBytes = int64_t(1) << 20;
  int group = -1, group_steps = 0, from = 0, group_first = 0;
  int64_t group_bytes = 0;
  bool added = false;
  for (Step& st : plan->steps) {
    if (!is_int8_step(*plan, st)) continue;
    const WeightBlob& w = plan->weights[size_t(st.weight)];
    if (st.dequant >= 0) return internal_error("step " + std::to_string(st.index) + " has a dequant buffer already");
    if (!whole_rows(w))
      return internal_error("layer " + std::to_string(st.layer) + ": int8 blob of " + std::to_string(w.weight_elems) +
                            " weights and " + std::to_string(w.scale_elems) + " scales");
    const int64_t bytes = dequant_bytes(w);
    if (group < 0 || group_steps == kGroupSteps || group_bytes + bytes > kGroupBytes) {
      from = group < 0 ? 0 : group_first;
      group_first = st.index;
      ++group;
      group_steps = 0;
      group_bytes = 0;
    }
    ++group_steps;
    group_bytes += bytes;
    Buffer b;
    b.id = int(plan->buffers.size());
    b.dtype = w.dtype;
    b.layout = plan->options.layout;
    b.c = int(w.scale_elems);  // a filter per row: the weights' own shape, not an image
    b.h = 1;
    b.w = int(w.weight_elems / w.scale_elems);
    b.bytes = bytes;
    b.first_step = from;
    b.last_step = st.index;
    b.owner_layer = st.layer;
    st.dequant = b.id;
    st.dequant_group = group;
    plan->buffers.push_back(b);
    added = true;
  }
  if (added) plan->arena_bytes = place_buffers(&plan->buffers, plan->options.alignment);
  return Status();
}

ExpansionEntries expansion_entries(const ExecutionPlan& plan) {
  ExpansionEntries e;
  e.entry.assign(plan.steps.size(), -1);
  for (const Step& st : plan.steps) {
    if (st.dequant < 0) continue;
    if (st.dequant_group != int(e.group_first.size()) - 1) e.group_first.push_back(int(e.steps.size()));
    e.entry[size_t(st.index)] = int(e.steps.size());
    e.steps.push_back(st.index);
  }
  e.group_first.push_back(int(e.steps.size()));
  return e;
}

}  // namespace dlr
