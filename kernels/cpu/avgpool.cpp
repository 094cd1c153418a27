// avgpool: Darknet global average pool (avgpool_layer.c forward_avgpool_layer), fp32 NCHW.
// Contract (cpu_ops.h): out[b][k] = sum_{i < H*W} in[b][k][i] / (H*W), the sum taken in
// float from i = 0 upwards, then one float division by the int H*W, as Darknet does.
#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

void avgpool(const TensorView& in, const TensorView& out) {
  DLR_ASSERT(in.dtype == DType::kF32 && in.layout == Layout::kNCHW && in.data != nullptr);
  DLR_ASSERT(out.dtype == DType::kF32 && out.layout == Layout::kNCHW && out.data != nullptr);
  DLR_ASSERT(in.n == out.n && out.c == in.c && out.h == 1 && out.w == 1);
  const int64_t plane = int64_t(in.h) * in.w;
  const int plane_i = in.h * in.w;
  const int64_t total = int64_t(in.n) * in.c;
#pragma omp parallel for schedule(static) if (total * plane > 65536)
  for (int64_t i = 0; i < total; ++i) {
    const int b = int(i / in.c);
    const int k = int(i % in.c);
    const float* x = in.f32() + b * in.n_stride + k * plane;
    float sum = 0;
    for (int64_t j = 0; j < plane; ++j) sum += x[j];
    out.f32()[b * out.n_stride + k] = sum / plane_i;
  }
}

// Entry point of [avgpool] (cpu_ops.h OpCall).
void run_avgpool(const OpCall& call) { avgpool(call.in[0], call.out); }

}  // namespace dlr::cpu
