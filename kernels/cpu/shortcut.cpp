// shortcut: Darknet residual add (shortcut_layer.c, blas.c shortcut_multilayer_cpu), fp32 NCHW.
//
// Contract (Darknet src/blas.c shortcut_multilayer_cpu, plain unweighted variant):
//   out[b][i] = act(prev[b][i] + from[0][b][i] + from[1][b][i] + ...)
// with i the flattened C*H*W index of out. prev has out's shape. A from tensor
// with fewer elements per image than out only contributes to i < its element
// count (its first channels when the spatial size matches); one with more only
// gives its first out-count elements. Sums are left to right in `from` order.
// out may alias prev (same view); from views must not overlap out.
// OpenMP over blocks of each image; the activation runs on each block while hot.
#include <algorithm>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

namespace {

void check_view(const TensorView& v) {
  DLR_ASSERT(v.dtype == DType::kF32 && v.layout == Layout::kNCHW && v.data != nullptr);
}

}  // namespace

void shortcut(const TensorView& prev, const TensorView* from, int n_from, Activation act, const TensorView& out) {
  check_view(prev);
  check_view(out);
  DLR_ASSERT(n_from >= 0 && (n_from == 0 || from != nullptr));
  DLR_ASSERT(prev.n == out.n && prev.shape() == out.shape());
  for (int j = 0; j < n_from; ++j) {
    check_view(from[j]);
    DLR_ASSERT(from[j].n == out.n);
  }
  const int64_t count = out.shape().count();
  constexpr int64_t kBlock = 8192;
  const int64_t blocks_per_image = (count + kBlock - 1) / kBlock;
  const int64_t total = blocks_per_image * out.n;
#pragma omp parallel for schedule(static) if (total > 1)
  for (int64_t i = 0; i < total; ++i) {
    const int b = int(i / blocks_per_image);
    const int64_t begin = (i % blocks_per_image) * kBlock;
    const int64_t end = std::min(count, begin + kBlock);
    float* y = out.f32() + b * out.n_stride;
    const float* x = prev.f32() + b * prev.n_stride;
    if (y != x) std::copy(x + begin, x + end, y + begin);
    for (int j = 0; j < n_from; ++j) {
      const float* f = from[j].f32() + b * from[j].n_stride;
      const int64_t stop = std::min(end, from[j].shape().count());
      for (int64_t k = begin; k < stop; ++k) y[k] += f[k];
    }
    activate_array(act, y + begin, end - begin);
  }
}

// Entry point of [shortcut] (cpu_ops.h OpCall): in[0] is the previous layer, then the `from` layers.
void run_shortcut(const OpCall& call) {
  shortcut(call.in[0], call.in + 1, call.n_in - 1, call.p<ShortcutParams>().activation, call.out);
}

}  // namespace dlr::cpu
