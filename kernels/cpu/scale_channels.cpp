// scale_channels: Darknet [scale_channels] (scale_channels_layer.c forward), fp32 NCHW.
// Contract (cpu_ops.h): for element (b, k, y, x) of out (from's shape):
//   out = act(s * from[b][k][y][x]), s = scales[b][k][0][0], or with scale_wh scales[b][0][y][x].
// One float multiply, then the activation (Darknet: activate_array over the output).
#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

void scale_channels(const TensorView& scales, const TensorView& from, bool scale_wh, Activation act,
                    const TensorView& out) {
  for (const TensorView* v : {&scales, &from, &out})
    DLR_ASSERT(v->dtype == DType::kF32 && v->layout == Layout::kNCHW && v->data != nullptr);
  DLR_ASSERT(from.n == out.n && scales.n == out.n && from.shape() == out.shape());
  if (scale_wh)
    DLR_ASSERT(scales.c == 1 && scales.h == out.h && scales.w == out.w);
  else
    DLR_ASSERT(scales.c == out.c && scales.h == 1 && scales.w == 1);
  const int64_t plane = int64_t(out.h) * out.w;
  const int64_t total = int64_t(out.n) * out.c;
#pragma omp parallel for schedule(static) if (total * plane > 65536)
  for (int64_t i = 0; i < total; ++i) {
    const int b = int(i / out.c);
    const int k = int(i % out.c);
    const float* f = from.f32() + b * from.n_stride + k * plane;
    const float* s = scales.f32() + b * scales.n_stride;
    float* y = out.f32() + b * out.n_stride + k * plane;
    if (scale_wh) {
      for (int64_t j = 0; j < plane; ++j) y[j] = s[j] * f[j];
    } else {
      const float sk = s[k];
      for (int64_t j = 0; j < plane; ++j) y[j] = sk * f[j];
    }
    activate_array(act, y, plane);
  }
}

// Entry point of [scale_channels] (cpu_ops.h OpCall): in[0] holds the scales, in[1] is `from`.
void run_scale_channels(const OpCall& call) {
  const ScaleChannelsParams& p = call.p<ScaleChannelsParams>();
  scale_channels(call.in[0], call.in[1], p.scale_wh, p.activation, call.out);
}

}  // namespace dlr::cpu
