// The byte layout of a WeightBlob (runtime/compile/plan.h):
//   fp:   [weights (weight_elems x dtype)] [pad to 256] [bias (bias_elems x f32) at bias_offset]
//   int8: [weights (weight_elems x int8)] [pad to 256] [scales (scale_elems x f32) at scale_offset]
//         [pad to 256] [bias (bias_elems x f32) at bias_offset]
// then padding to a multiple of max(256, weight_align). The one place that rule is
// written; the planner and the slicing pass lay their blobs out with it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/compile/plan.h"

namespace dlr {

// WeightFormat::kInt8 stores a conv's weights int8 only where each filter holds at least
// kInt8MinFilterWeights weights (input channels / groups x size^2). Smaller filters (a
// first layer's 27, depthwise 9 or 25, 1x1 convs over fewer than 128 channels) stay in
// the run's precision: a small share of a large model's bytes, most of a compact model's
// error (docs/streaming.md, "Compressed weights", has the measured curve).
constexpr int64_t kInt8MinFilterWeights = 128;
inline WeightFormat conv_weight_format(WeightFormat requested, int64_t filter_weights) {
  return requested == WeightFormat::kInt8 && filter_weights >= kInt8MinFilterWeights ? WeightFormat::kInt8
                                                                                     : WeightFormat::kFp;
}

// Bytes of one stored weight: 1 for int8, else the dtype's.
inline int64_t stored_weight_size(DType dtype, WeightFormat format) {
  return format == WeightFormat::kInt8 ? 1 : int64_t(dtype_size(dtype));
}

// Byte offset of the scales (int8; for fp where the bias would start, with none).
inline int64_t blob_scale_offset(int64_t weight_elems, DType dtype, WeightFormat format) {
  return align_up(weight_elems * stored_weight_size(dtype, format), 256);
}

// Byte offset of the bias in a blob of weight_elems weights of `dtype` (and, int8,
// scale_elems scales).
inline int64_t blob_bias_offset(int64_t weight_elems, DType dtype, WeightFormat format = WeightFormat::kFp,
                                int64_t scale_elems = 0) {
  const int64_t scales = blob_scale_offset(weight_elems, dtype, format);
  return format == WeightFormat::kInt8 ? align_up(scales + scale_elems * 4, 256) : scales;
}

// Bytes of a blob of weight_elems weights of `dtype` and bias_elems f32 (int8: and
// scale_elems f32 scales).
inline int64_t blob_bytes(int64_t weight_elems, int64_t bias_elems, DType dtype, int64_t weight_align,
                          WeightFormat format = WeightFormat::kFp, int64_t scale_elems = 0) {
  return align_up(blob_bias_offset(weight_elems, dtype, format, scale_elems) + bias_elems * 4,
                  std::max<int64_t>(256, weight_align));
}

// Sets w->scale_offset, w->bias_offset and w->bytes from its weight_elems, scale_elems,
// bias_elems, dtype and format (scale_offset and scale_elems 0 for fp).
inline void lay_out_blob(WeightBlob* w, int64_t weight_align) {
  if (w->format != WeightFormat::kInt8) w->scale_elems = 0;
  w->scale_offset = w->format == WeightFormat::kInt8 ? blob_scale_offset(w->weight_elems, w->dtype, w->format) : 0;
  w->bias_offset = blob_bias_offset(w->weight_elems, w->dtype, w->format, w->scale_elems);
  w->bytes = blob_bytes(w->weight_elems, w->bias_elems, w->dtype, weight_align, w->format, w->scale_elems);
}

}  // namespace dlr
