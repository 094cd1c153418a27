// The byte layout of a WeightBlob (runtime/compile/plan.h): [weights (weight_elems x
// dtype)] [pad to 256] [bias (bias_elems x f32) at bias_offset] [pad to a multiple of
// max(256, weight_align)]. The one place that rule is written; the planner and the
// slicing pass lay their blobs out with it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/compile/plan.h"

namespace dlr {

// Byte offset of the bias in a blob of weight_elems weights of `dtype`.
inline int64_t blob_bias_offset(int64_t weight_elems, DType dtype) {
  return align_up(weight_elems * int64_t(dtype_size(dtype)), 256);
}

// Bytes of a blob of weight_elems weights of `dtype` and bias_elems f32.
inline int64_t blob_bytes(int64_t weight_elems, int64_t bias_elems, DType dtype, int64_t weight_align) {
  return align_up(blob_bias_offset(weight_elems, dtype) + bias_elems * 4, std::max<int64_t>(256, weight_align));
}

// Sets w->bias_offset and w->bytes from its weight_elems, bias_elems and dtype.
inline void lay_out_blob(WeightBlob* w, int64_t weight_align) {
  w->bias_offset = blob_bias_offset(w->weight_elems, w->dtype);
  w->bytes = blob_bytes(w->weight_elems, w->bias_elems, w->dtype, weight_align);
}

}  // namespace dlr
