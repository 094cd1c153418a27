// gaussian_yolo: Darknet [Gaussian_yolo] forward at inference (gaussian_yolo_layer.c,
// forward_gaussian_yolo_layer, CPU build), fp32 NCHW. Channel a*(9+classes)+e is entry e
// of anchor a: 0 x, 1 sigma_x, 2 y, 3 sigma_y, 4 w, 5 sigma_w, 6 h, 7 sigma_h, 8 objectness,
// 9.. classes. Per anchor: logistic on entries 0-3, 5, 7 and 8..; then x and y (entries 0
// and 2 only) = fma(v, scale_x_y, beta), beta = (float)(-0.5*(scale_x_y - 1)) computed in
// double (one rounding, as cpu::yolo does for Darknet's scal_add_cpu). w, h stay raw.
// out may alias in. OpenMP over (image, anchor).
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

void gaussian_yolo(const GaussianYoloOp& p, const TensorView& in, const TensorView& out) {
  DLR_ASSERT(in.dtype == DType::kF32 && in.layout == Layout::kNCHW && in.data != nullptr);
  DLR_ASSERT(out.dtype == DType::kF32 && out.layout == Layout::kNCHW && out.data != nullptr);
  DLR_ASSERT(in.n == out.n && in.shape() == out.shape());
  const int entries = 9 + p.classes;
  DLR_ASSERT(p.anchors >= 1 && p.classes >= 0 && in.c == p.anchors * entries);
  const int64_t plane = int64_t(in.h) * in.w;
  const int64_t anchor_floats = entries * plane;
  const float alpha = p.scale_x_y;
  const float beta = float(-0.5 * (double(p.scale_x_y) - 1));
  const int64_t total = int64_t(in.n) * p.anchors;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < total; ++t) {
    const int b = int(t / p.anchors);
    const int a = int(t % p.anchors);
    const float* x = in.f32() + b * in.n_stride + a * anchor_floats;
    float* y = out.f32() + b * out.n_stride + a * anchor_floats;
    if (x != y) std::copy(x, x + anchor_floats, y);
    activate_array(Activation::kLogistic, y, 4 * plane);  // x, sigma_x, y, sigma_y
    activate_array(Activation::kLogistic, y + 5 * plane, plane);
    activate_array(Activation::kLogistic, y + 7 * plane, plane);
    activate_array(Activation::kLogistic, y + 8 * plane, (1 + int64_t(p.classes)) * plane);
    for (int64_t k = 0; k < plane; ++k) y[k] = std::fma(y[k], alpha, beta);
    for (int64_t k = 2 * plane; k < 3 * plane; ++k) y[k] = std::fma(y[k], alpha, beta);
  }
}

// Entry point of [Gaussian_yolo] (cpu_ops.h OpCall).
void run_gaussian_yolo(const OpCall& call) {
  gaussian_yolo(gaussian_yolo_op(call.p<GaussianYoloParams>()), call.in[0], call.out);
}

}  // namespace dlr::cpu
