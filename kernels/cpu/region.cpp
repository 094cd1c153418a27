// region: Darknet [region] forward at inference (region_layer.c forward_region_layer), fp32 NCHW.
//
// Darknet's CPU build first transposes the output to [cell][anchor][entry] (flatten) and its
// decode (get_region_boxes) reads that order; dlrun keeps NCHW (channel a*(coords+1+classes)+e
// is entry e of anchor a) and its decode reads NCHW: the values are the same. Per anchor:
//  - entry `coords` (objectness): logistic (1.f/(1.f + expf(-x)), cpu::activate);
//  - with softmax: Darknet's softmax (blas.c) over the classes entries of each cell:
//    largest = max; e_j = (float)exp((double)(x_j - largest)); sum = float sum in class order;
//    out_j = e_j / sum;
//  - x, y, w, h (entries 0..3) stay raw: the decode applies logistic to x, y and exp to w, h.
// out may alias in.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

void region(const RegionOp& p, const TensorView& in, const TensorView& out) {
  DLR_ASSERT(in.dtype == DType::kF32 && in.layout == Layout::kNCHW && in.data != nullptr);
  DLR_ASSERT(out.dtype == DType::kF32 && out.layout == Layout::kNCHW && out.data != nullptr);
  DLR_ASSERT(in.n == out.n && in.shape() == out.shape());
  const int entries = p.coords + 1 + p.classes;
  DLR_ASSERT(p.anchors >= 1 && p.classes >= 1 && p.coords >= 0 && in.c == p.anchors * entries);
  const int64_t plane = int64_t(in.h) * in.w;
  const int64_t anchor_floats = entries * plane;
  const int64_t total = int64_t(in.n) * p.anchors;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < total; ++t) {
    const int b = int(t / p.anchors);
    const int a = int(t % p.anchors);
    const float* x = in.f32() + b * in.n_stride + a * anchor_floats;
    float* y = out.f32() + b * out.n_stride + a * anchor_floats;
    if (x != y) std::copy(x, x + anchor_floats, y);
    activate_array(Activation::kLogistic, y + p.coords * plane, plane);
    if (!p.softmax) continue;
    float* cls = y + (p.coords + 1) * plane;
    for (int64_t i = 0; i < plane; ++i) {
      float largest = -INFINITY;
      for (int j = 0; j < p.classes; ++j) largest = std::max(largest, cls[j * plane + i]);
      float sum = 0;
      for (int j = 0; j < p.classes; ++j) {
        const float e = static_cast<float>(std::exp(static_cast<double>(cls[j * plane + i] - largest)));
        sum += e;
        cls[j * plane + i] = e;
      }
      for (int j = 0; j < p.classes; ++j) cls[j * plane + i] /= sum;
    }
  }
}

// Entry point of [region] (cpu_ops.h OpCall).
void run_region(const OpCall& call) { region(region_op(call.p<RegionParams>()), call.in[0], call.out); }

}  // namespace dlr::cpu
