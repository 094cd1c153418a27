// reorg: Darknet's space-to-depth layers (blas.c reorg_cpu with forward = 0), fp32 NCHW.
//
// reorg_cpu(x, W, H, C, s) writes, for k < C, j < H, i < W (flat per image):
//   out[i + W*(j + H*k)] = x[w2 + W*s*(h2 + H*s*c2)],
//   c2 = k % (C/(s*s)), off = k / (C/(s*s)), w2 = i*s + off % s, h2 = j*s + off / s.
// The two layers call it with different dims:
//  - [reorg3d] (REORG, ReorgMapping::kSpaceToDepth): W, H, C = the OUTPUT's (w/s, h/s, c*s*s),
//    so out[k][j][i] = in[k % c][j*s + (k/c)/s][i*s + (k/c)%s]: a true space-to-depth.
//  - [reorg] (REORG_OLD, YOLOv2, ReorgMapping::kDarknetOld): W, H, C = the INPUT's (w, h, c),
//    so the formula walks the output's flat index as if it were c x h x w and reads the input
//    as if it were c/(s*s) x h*s x w*s. Both are permutations of the C*H*W elements of an
//    image; the output is then read as c*s*s x h/s x w/s.
// Needs h, w divisible by s (and c by s*s for kDarknetOld); checked by the parser.
// Views may be channel slices (each image's C*H*W elements are contiguous in NCHW).
#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

void reorg(const TensorView& in, int stride, ReorgMapping mapping, const TensorView& out) {
  DLR_ASSERT(in.dtype == DType::kF32 && in.layout == Layout::kNCHW && in.data != nullptr);
  DLR_ASSERT(out.dtype == DType::kF32 && out.layout == Layout::kNCHW && out.data != nullptr);
  const int s = stride;
  DLR_ASSERT(s >= 1 && in.n == out.n && in.h % s == 0 && in.w % s == 0);
  DLR_ASSERT(out.c == in.c * s * s && out.h == in.h / s && out.w == in.w / s);
  const bool old = mapping == ReorgMapping::kDarknetOld;
  if (old) DLR_ASSERT(in.c % (s * s) == 0);
  // Dims reorg_cpu is called with.
  const int W = old ? in.w : out.w;
  const int H = old ? in.h : out.h;
  const int C = old ? in.c : out.c;
  const int in_c = C / (s * s);
  const int64_t total = int64_t(in.n) * C;
#pragma omp parallel for schedule(static) if (total * H * W > 65536)
  for (int64_t t = 0; t < total; ++t) {
    const int b = int(t / C);
    const int k = int(t % C);
    const float* x = in.f32() + b * in.n_stride;
    float* y = out.f32() + b * out.n_stride;
    const int c2 = k % in_c;
    const int off = k / in_c;
    for (int j = 0; j < H; ++j) {
      const int h2 = j * s + off / s;
      for (int i = 0; i < W; ++i) {
        const int w2 = i * s + off % s;
        y[i + int64_t(W) * (j + int64_t(H) * k)] = x[w2 + int64_t(W) * s * (h2 + int64_t(H) * s * c2)];
      }
    }
  }
}

// Entry points of [reorg] and [reorg3d] (cpu_ops.h OpCall).
void run_reorg(const OpCall& call) {
  reorg(call.in[0], call.p<ReorgParams>().stride, ReorgMapping::kDarknetOld, call.out);
}
void run_reorg3d(const OpCall& call) {
  reorg(call.in[0], call.p<ReorgParams>().stride, ReorgMapping::kSpaceToDepth, call.out);
}

}  // namespace dlr::cpu
