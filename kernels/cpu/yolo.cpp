// yolo: Darknet yolo layer forward at inference (yolo_layer.c forward_yolo_layer, CPU), fp32 NCHW.
//
// Contract (Darknet src/yolo_layer.c forward_yolo_layer): out = copy of in (in.c == len(mask)*(5+classes),
// channel a*(5+classes)+e is entry e of anchor a). Then, per image and anchor:
//  - new_coords == 0: logistic on x, y (e = 0, 1), objectness and classes (e >= 4);
//    w, h (e = 2, 3) stay raw;
//  - new_coords == 1: no activation;
//  - always (the CPU path): x, y = fmaf(x, scale_x_y, beta), beta = -0.5*(scale_x_y - 1)
//    computed in double and rounded to float (Darknet's scal_add_cpu argument).
//    Darknet writes x *= a; x += b, which its GPU build (nvcc) and AVX build
//    (-ffp-contract=fast) fuse into one FMA; dlrun always fuses, explicitly, so
//    the result does not depend on compiler flags. Identity for scale_x_y == 1.
// out may alias in. OpenMP over (image, anchor).
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

void yolo(const YoloParams& p, const TensorView& in, const TensorView& out) {
  DLR_ASSERT(in.dtype == DType::kF32 && in.layout == Layout::kNCHW && in.data != nullptr);
  DLR_ASSERT(out.dtype == DType::kF32 && out.layout == Layout::kNCHW && out.data != nullptr);
  DLR_ASSERT(in.n == out.n && in.shape() == out.shape());
  const int anchors = int(p.mask.size());
  const int entries = 5 + p.classes;
  DLR_ASSERT(p.classes >= 0 && anchors >= 1 && in.c == anchors * entries);
  const int64_t plane = int64_t(in.h) * in.w;
  const int64_t anchor_floats = entries * plane;
  const float alpha = p.scale_x_y;
  const float beta = float(-0.5 * (double(p.scale_x_y) - 1));
  const int64_t total = int64_t(in.n) * anchors;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < total; ++i) {
    const int b = int(i / anchors);
    const int a = int(i % anchors);
    const float* x = in.f32() + b * in.n_stride + a * anchor_floats;
    float* y = out.f32() + b * out.n_stride + a * anchor_floats;
    if (x != y) std::copy(x, x + anchor_floats, y);
    if (!p.new_coords) {
      activate_array(Activation::kLogistic, y, 2 * plane);
      activate_array(Activation::kLogistic, y + 4 * plane, (1 + int64_t(p.classes)) * plane);
    }
    for (int64_t k = 0; k < 2 * plane; ++k) y[k] = std::fma(y[k], alpha, beta);
  }
}

// Entry point of [yolo] (cpu_ops.h OpCall).
void run_yolo(const OpCall& call) { yolo(call.p<YoloParams>(), call.in[0], call.out); }

}  // namespace dlr::cpu
