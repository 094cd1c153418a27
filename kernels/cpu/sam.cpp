// sam: Darknet [sam] (sam_layer.c forward_sam_layer), fp32 NCHW.
// Contract (cpu_ops.h): out = act(prev * from), elementwise over equal shapes, one float
// multiply then the activation. out may alias prev (each element read before it is written).
#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

void sam(const TensorView& prev, const TensorView& from, Activation act, const TensorView& out) {
  for (const TensorView* v : {&prev, &from, &out})
    DLR_ASSERT(v->dtype == DType::kF32 && v->layout == Layout::kNCHW && v->data != nullptr);
  DLR_ASSERT(prev.n == out.n && from.n == out.n && prev.shape() == out.shape() && from.shape() == out.shape());
  const int64_t plane = int64_t(out.h) * out.w;
  const int64_t total = int64_t(out.n) * out.c;
#pragma omp parallel for schedule(static) if (total * plane > 65536)
  for (int64_t i = 0; i < total; ++i) {
    const int b = int(i / out.c);
    const int k = int(i % out.c);
    const float* p = prev.f32() + b * prev.n_stride + k * plane;
    const float* f = from.f32() + b * from.n_stride + k * plane;
    float* y = out.f32() + b * out.n_stride + k * plane;
    for (int64_t j = 0; j < plane; ++j) y[j] = p[j] * f[j];
    activate_array(act, y, plane);
  }
}

// Entry point of [sam] (cpu_ops.h OpCall): in[0] is the previous layer, in[1] is `from`.
void run_sam(const OpCall& call) { sam(call.in[0], call.in[1], call.p<SamParams>().activation, call.out); }

}  // namespace dlr::cpu
