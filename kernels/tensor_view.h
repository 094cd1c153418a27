// TensorView: a non-owning view of a batch of activation tensors, possibly a
// channel slice of a larger buffer (route concatenation without copies).
//
// Addressing (element type `dtype`):
//   NCHW: image n, channel k, row y, col x at data + n*n_stride + (k*h + y)*w + x
//         (planes of one image are contiguous; a channel slice starts at its first plane)
//   NHWC: data + n*n_stride + (y*w + x)*pixel_stride + k   (pixel_stride = channels of the buffer)
// Backends never own or free the memory behind a view.
#pragma once

#include <cstdint>

#include "runtime/core/types.h"

namespace dlr {

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Layout layout = Layout::kNCHW;
  int n = 1;
  int c = 0;
  int h = 0;
  int w = 0;
  int64_t n_stride = 0;      // elements between consecutive images
  int pixel_stride = 0;      // NHWC only: elements between consecutive pixels (>= c)

  Shape3 shape() const { return {c, h, w}; }
  bool contiguous() const {  // images packed back to back with no channel slicing
    return n_stride == int64_t(c) * h * w && (layout == Layout::kNCHW || pixel_stride == c);
  }
  float* f32() const { return static_cast<float*>(data); }

  // A packed view of `shape` x n starting at `data`.
  static TensorView packed(void* data, DType dtype, Layout layout, int n, Shape3 shape) {
    TensorView v;
    v.data = data;
    v.dtype = dtype;
    v.layout = layout;
    v.n = n;
    v.c = shape.c;
    v.h = shape.h;
    v.w = shape.w;
    v.n_stride = shape.count();
    v.pixel_stride = shape.c;
    return v;
  }
};

}  // namespace dlr
