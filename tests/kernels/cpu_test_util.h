// Helpers shared by the CPU op tests (cpu_*_test.cpp): seeded random data,
// channel-slice views inside larger buffers, NaN poisoning and error norms.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/tensor_view.h"

namespace dlr::test {

inline constexpr float kGuard = 12345.0f;  // value of the buffer outside a view

// A batch of n images of `shape`, stored as a channel slice [c_before, c_before+c)
// of an NCHW buffer with c_before + c + c_after channels per image. Everything
// outside the slice holds kGuard; the slice is filled by the caller.
struct SlicedTensor {
  std::vector<float> buf;
  TensorView view;
  int c_before = 0;

  SlicedTensor(int n, Shape3 shape, int c_before_ = 0, int c_after = 0) : c_before(c_before_) {
    const int64_t plane = int64_t(shape.h) * shape.w;
    const int64_t image = int64_t(c_before + shape.c + c_after) * plane;
    buf.assign(size_t(image * n), kGuard);
    view = TensorView::packed(buf.data() + c_before * plane, DType::kF32, Layout::kNCHW, n, shape);
    view.n_stride = image;
  }
  float* image(int b) const { return view.f32() + b * view.n_stride; }
  // Element (b, k, y, x) of the view.
  float& at(int b, int k, int y, int x) const {
    return image(b)[(int64_t(k) * view.h + y) * view.w + x];
  }
  int64_t count() const { return view.shape().count(); }

  void fill_uniform(std::mt19937& rng, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    for (int b = 0; b < view.n; ++b)
      for (int64_t i = 0; i < count(); ++i) image(b)[i] = d(rng);
  }
  void fill(float v) {
    for (int b = 0; b < view.n; ++b)
      for (int64_t i = 0; i < count(); ++i) image(b)[i] = v;
  }
  void poison() { fill(std::numeric_limits<float>::quiet_NaN()); }

  // Number of buffer elements outside the view that no longer hold kGuard.
  int64_t guard_damage() const {
    int64_t bad = 0;
    const int64_t plane = int64_t(view.h) * view.w;
    for (int b = 0; b < view.n; ++b) {
      const float* img = buf.data() + b * view.n_stride;
      const int64_t lo = c_before * plane;
      const int64_t hi = lo + count();
      for (int64_t i = 0; i < view.n_stride; ++i) {
        if ((i < lo || i >= hi) && !(img[i] == kGuard)) ++bad;
      }
    }
    return bad;
  }
  // Number of non-finite values inside the view.
  int64_t non_finite() const {
    int64_t bad = 0;
    for (int b = 0; b < view.n; ++b)
      for (int64_t i = 0; i < count(); ++i) bad += std::isfinite(image(b)[i]) ? 0 : 1;
    return bad;
  }
};

// ||a - ref|| / ||ref|| over the view's elements; a NaN anywhere makes it NaN.
inline double rel_error(const SlicedTensor& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  int64_t i = 0;
  for (int b = 0; b < a.view.n; ++b) {
    for (int64_t k = 0; k < a.count(); ++k, ++i) {
      const double d = double(a.image(b)[k]) - ref[size_t(i)];
      num += d * d;
      den += ref[size_t(i)] * ref[size_t(i)];
    }
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

// Count of elements of the view that are not bitwise-equal (as values) to ref.
inline int64_t mismatches(const SlicedTensor& a, const std::vector<float>& ref) {
  int64_t bad = 0, i = 0;
  for (int b = 0; b < a.view.n; ++b)
    for (int64_t k = 0; k < a.count(); ++k, ++i) bad += (a.image(b)[k] == ref[size_t(i)]) ? 0 : 1;
  return bad;
}

}  // namespace dlr::test
