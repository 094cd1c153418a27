// Slicing: a conv layer whose weight blob is larger than a slot runs as slices, each a
// step of its own with a blob of its own, so the weight pool can be smaller than the
// largest layer (docs/streaming.md, "Slices smaller than a layer"). A pass over a built
// ExecutionPlan; plain data in, plain data out. Two ways to cut (Step::axis):
//
//  - filters: a slice of filters [f0, f0 + n) reads the layer's whole input and computes
//    n output channels. Its blob holds those filters' weights (contiguous in both OIHW
//    and OHWI) and their bias. Every output element is the same sum as unsliced, in the
//    same order, on the CPU. Where the plan's convs cannot write a channel slice of a
//    buffer (NHWC: cuDNN refuses pixel strides above the channel count), the slice
//    writes a packed scratch buffer live for its own step and `copies` moves it into place.
//  - channels: a slice of input channels [c0, c0 + n) computes every output channel's
//    partial sum over those channels; the first slice writes the output, the others add
//    into it, the last adds the bias and applies the activation. Its blob holds every
//    filter's weights for those channels (the last also the bias). Each kernel does 1/k
//    of the layer's work with the layer's full output parallelism, so on a large GPU the
//    slices cost about the whole layer plus a launch each, where filter slices each cost
//    nearly a whole layer. The sums are split (rounded once per slice): on the CPU within
//    1e-6 relative of unsliced, not bit-identical. Where the input cannot be read as a
//    channel slice (NHWC), `packs` copies it into a packed scratch buffer first.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "runtime/compile/blob_layout.h"
#include "runtime/compile/plan.h"
#include "runtime/core/status.h"

namespace dlr {

struct SliceOptions {
  int64_t max_blob_bytes = 0;  // every conv blob above this is sliced; 0: slice nothing
  int unit_multiple = 8;       // slices hold a multiple of this many filters (channels) where that fits
  SliceAxis axis = SliceAxis::kFilters;  // how single-input convs are cut (a conv over a concatenation: filters)
  std::map<int, SliceAxis> layer_axis;   // per network layer index: overrides `axis` for that layer's conv
  int unit_fallback = 1;  // where fewer than unit_multiple fit, a multiple of this many where that fits
  std::set<int> whole_layers = {};  // network layers kept whole above the slot (staged whole: whole_staging.h)
};

// The slice sizes (filters per slice, in order) of a conv of `filters` filters whose
// filter needs `filter_elems` weights of `dtype`, such that each slice's blob is at most
// max_blob_bytes: the fewest slices, then as even as filter_multiple allows. One entry
// (the whole layer) when the blob fits. Empty when not even one filter fits.
std::vector<int> slice_sizes(int filters, int64_t filter_elems, DType dtype, int64_t weight_align,
                             int64_t max_blob_bytes, int filter_multiple, WeightFormat format = WeightFormat::kFp,
                             int fallback_multiple = 1);

// The slice sizes (input channels per slice, in order) of a conv of `channels` input
// channels and `filters` filters of k x k = kernel_elems, alike (each blob sized with the bias).
std::vector<int> channel_slice_sizes(int channels, int filters, int64_t kernel_elems, DType dtype,
                                     int64_t weight_align, int64_t max_blob_bytes, int channel_multiple,
                                     WeightFormat format = WeightFormat::kFp);

// Bytes of the blob of `filters` filters of `filter_elems` weights each (blob_layout.h).
int64_t conv_blob_bytes(int filters, int64_t filter_elems, DType dtype, int64_t weight_align,
                        WeightFormat format = WeightFormat::kFp);

// Slices every conv of `plan` whose blob exceeds options.max_blob_bytes: its step
// becomes one step per slice (renumbering the steps after it, the buffers' live steps
// and the blobs), then the arena is placed again. A grouped conv (groups > 1) that
// would need slicing is an error naming the layer, as is a filter (input channel)
// larger than the slot.
Status slice_plan(ExecutionPlan* plan, const SliceOptions& options, const std::string& cfg_path);

}  // namespace dlr
