// Slicing: a conv layer whose weight blob is larger than a slot runs as slices of its
// output channels, each a step of its own with a blob of its own, so the weight pool
// can be smaller than the largest layer (docs/streaming.md, "Slices smaller than a
// layer"). A pass over a built ExecutionPlan; plain data in, plain data out.
//
// A slice of filters [f0, f0 + n) reads the layer's whole input and computes n output
// channels: its blob holds the prepared weights of those filters (contiguous in both
// OIHW and OHWI) and their bias, so each slice is one contiguous transfer. Every output
// element is the same sum as unsliced, in the same order, on the CPU.
// Where the plan's convolutions cannot write a channel slice of a buffer (NHWC: cuDNN
// refuses pixel strides above the channel count), the slice writes a packed scratch
// buffer live for its own step and the step's `copies` move it into the layer's output.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/compile/plan.h"
#include "runtime/core/status.h"

namespace dlr {

struct SliceOptions {
  int64_t max_blob_bytes = 0;  // every conv blob above this is sliced; 0: slice nothing
  int filter_multiple = 8;     // slices hold a multiple of this many filters where that fits
};

// The slice sizes (filters per slice, in order) of a conv of `filters` filters whose
// filter needs `filter_elems` weights of `dtype`, such that each slice's blob is at most
// max_blob_bytes: the fewest slices, then as even as filter_multiple allows. One entry
// (the whole layer) when the blob fits. Empty when not even one filter fits.
std::vector<int> slice_sizes(int filters, int64_t filter_elems, DType dtype, int64_t weight_align,
                             int64_t max_blob_bytes, int filter_multiple);

// Bytes of the blob of `filters` filters of `filter_elems` weights each (WeightBlob layout).
int64_t conv_blob_bytes(int filters, int64_t filter_elems, DType dtype, int64_t weight_align);

// Slices every conv of `plan` whose blob exceeds options.max_blob_bytes: its step
// becomes one step per slice (renumbering the steps after it, the buffers' live steps
// and the blobs), then the arena is placed again. A grouped conv (groups > 1) that
// would need slicing is an error naming the layer, as is a filter larger than the slot.
Status slice_plan(ExecutionPlan* plan, const SliceOptions& options, const std::string& cfg_path);

}  // namespace dlr
