// The buffers int8 weights are expanded into (WeightFormat::kInt8): a pass over a built,
// possibly sliced ExecutionPlan. Every step whose blob is stored int8 gets a buffer of
// its blob's weights in the blob's dtype (Step::dequant). Consecutive int8 steps form
// expansion groups (Step::dequant_group: up to 16 steps and 1 MiB of expanded weights; a
// larger blob is a group of its own) that an engine may expand together; group g's
// buffers are live from the first step of group g - 1 (step 0 for group 0) to their own
// step, so group g may be expanded while group g - 1 runs (the CUDA engine does, on a
// stream of its own, once every step before group g - 1 has finished). The arena is
// then placed again, so the expanded weights take activation bytes that are idle over
// that range where there are any. Plain data in, plain data out.
#pragma once

#include <vector>

#include "runtime/compile/plan.h"
#include "runtime/core/status.h"

namespace dlr {

// Adds the buffers (nothing for a plan without int8 blobs). Fails on a step whose
// dequant buffer is already set.
Status add_dequant_buffers(ExecutionPlan* plan);

// For an engine about to run `plan`: every step with an int8 blob has a dequant buffer
// of the blob's expanded bytes, live over the range above, and the groups are numbered
// 0, 1, ... in step order (an internal error otherwise).
Status check_dequant_buffers(const ExecutionPlan& plan);

// Whether step `st` reads an int8 blob.
bool is_int8_step(const ExecutionPlan& plan, const Step& st);

// Bytes of int8 blob `w`'s weights expanded to its dtype.
int64_t dequant_bytes(const WeightBlob& w);

// The steps that expand int8 weights (Step::dequant >= 0) in step order, the entries an
// engine expands and the simulator's expansion stage models, and their groups.
struct ExpansionEntries {
  std::vector<int> steps;        // per entry: its step
  std::vector<int> entry;        // per step: its entry, or -1
  std::vector<int> group_first;  // per group (Step::dequant_group): its first entry; then steps.size()
};
ExpansionEntries expansion_entries(const ExecutionPlan& plan);

}  // namespace dlr
