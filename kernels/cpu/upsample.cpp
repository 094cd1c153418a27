// upsample: Darknet nearest-neighbour upsampling (blas.c upsample_cpu, forward), fp32 NCHW.
//
// Contract (Darknet src/blas.c upsample_cpu): out[c][y][x] = scale * in[c][y/stride][x/stride],
// out = (C, H*stride, W*stride), stride >= 1 (negative strides are rejected by the
// loader). The product is a single float multiply, as Darknet (exact for scale 1).
// OpenMP over (image, channel) planes.
#include <cstring>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

void upsample(const UpsampleParams& p, const TensorView& in, const TensorView& out) {
  DLR_ASSERT(in.dtype == DType::kF32 && in.layout == Layout::kNCHW && in.data != nullptr);
  DLR_ASSERT(out.dtype == DType::kF32 && out.layout == Layout::kNCHW && out.data != nullptr);
  const int s = p.stride;
  DLR_ASSERT(s >= 1);
  DLR_ASSERT(in.n == out.n && in.c == out.c && out.h == in.h * s && out.w == in.w * s);
  const float scale = p.scale;
  const int64_t in_plane = int64_t(in.h) * in.w;
  const int64_t out_plane = int64_t(out.h) * out.w;
  const int64_t planes = int64_t(in.n) * in.c;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < planes; ++i) {
    const int b = int(i / in.c);
    const int ch = int(i % in.c);
    const float* x = in.f32() + b * in.n_stride + ch * in_plane;
    float* y = out.f32() + b * out.n_stride + ch * out_plane;
    for (int iy = 0; iy < in.h; ++iy) {
      const float* src = x + int64_t(iy) * in.w;
      float* first = y + int64_t(iy) * s * out.w;  // output row iy*s
      if (s == 2) {
        for (int ix = 0; ix < in.w; ++ix) {
          const float v = scale * src[ix];
          first[2 * ix] = v;
          first[2 * ix + 1] = v;
        }
      } else {
        for (int ix = 0; ix < in.w; ++ix) {
          const float v = scale * src[ix];
          for (int k = 0; k < s; ++k) first[ix * s + k] = v;
        }
      }
      for (int k = 1; k < s; ++k) std::memcpy(first + int64_t(k) * out.w, first, sizeof(float) * size_t(out.w));
    }
  }
}

// Entry point of [upsample] (cpu_ops.h OpCall).
void run_upsample(const OpCall& call) { upsample(call.p<UpsampleParams>(), call.in[0], call.out); }

}  // namespace dlr::cpu
