// shortcut: out = act(prev + from[0] + from[1] + ...), Darknet's multilayer rule
// (cuda_ops.h, cpu::shortcut, blas.c:shortcut_multilayer_cpu):
// for the element of flat NCHW index i = (c*H + y)*W + x of an image of out, a
// `from` view of F = Cf*Hf*Wf elements per image adds its flat element i (in its
// own NCHW order) when i < F; with the same H, W that is "the first Cf channels".
// Sums are fp32 in list order, then the activation. prev and out have the same
// n, c, h, w (out may be the same view as prev: each element is read and written
// by one thread); from views have the same n and must not overlap out.
// Two kernels: a flat one when every view stores its images as single blocks in
// the same layout and every from has out's shape (the residual add of every
// supported cfg), else the general one below.
#include <algorithm>
#include <string>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

// The `from` views travel by value in the kernel parameters (no device copy).
struct FromViews {
  TensorView v[kMaxShortcutFrom];
};

__global__ void shortcut_kernel(TensorView prev, FromViews from, int n_from, Activation act, TensorView out,
                                uint32_t per_image) {
  const int n = blockIdx.y;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const Chw p = decompose_memory_order(out, r);
    const uint32_t flat = (uint32_t(p.c) * uint32_t(out.h) + uint32_t(p.y)) * uint32_t(out.w) + uint32_t(p.x);
    float sum = load_at(prev, n, p.c, p.y, p.x);
    for (int i = 0; i < n_from; ++i) {
      const TensorView& f = from.v[i];
      if (f.h == out.h && f.w == out.w) {
        if (p.c < f.c) sum += load_at(f, n, p.c, p.y, p.x);
      } else {
        const uint32_t plane = uint32_t(f.h) * uint32_t(f.w);
        if (flat < uint32_t(f.c) * plane) {
          const int fc = int(flat / plane);
          const uint32_t rem = flat - uint32_t(fc) * plane;
          const int fy = int(rem / uint32_t(f.w));
          const int fx = int(rem - uint32_t(fy) * uint32_t(f.w));
          sum += load_at(f, n, fc, fy, fx);
        }
      }
    }
    store_at(out, n, p.c, p.y, p.x, activate(act, sum));
  }
}

// Fast path: prev, out and every from are image-contiguous in the same layout and
// every from has out's shape, so element r of an image (memory order) is at
// n*n_stride + r in each view: no index arithmetic beyond the offsets. Each loop
// trip sums kUnroll elements (r, r + step, ...), loads first, then stores.
constexpr int kUnroll = 4;

__global__ void shortcut_flat_kernel(TensorView prev, FromViews from, int n_from, Activation act, TensorView out,
                                     uint32_t per_image) {
  const int n = blockIdx.y;
  const int64_t prev_base = int64_t(n) * prev.n_stride;
  const int64_t out_base = int64_t(n) * out.n_stride;
  const uint32_t step = gridDim.x * blockDim.x;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += kUnroll * step) {
    float sum[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const uint32_t i = r + uint32_t(k) * step;
      if (i < per_image) sum[k] = load_elem(prev, prev_base + i);
    }
    for (int f = 0; f < n_from; ++f) {
      const int64_t base = int64_t(n) * from.v[f].n_stride;
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        const uint32_t i = r + uint32_t(k) * step;
        if (i < per_image) sum[k] += load_elem(from.v[f], base + i);
      }
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const uint32_t i = r + uint32_t(k) * step;
      if (i < per_image) store_elem(out, out_base + i, activate(act, sum[k]));
    }
  }
}

bool same_flat_order(const TensorView& a, const TensorView& out) {
  return a.layout == out.layout && image_contiguous(a) && a.c == out.c && a.h == out.h && a.w == out.w;
}

}  // namespace

Status shortcut(const TensorView& prev, const TensorView* from, int n_from, Activation act, const TensorView& out,
                cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(prev, "shortcut", "prev"));
  DLR_RETURN_IF_ERROR(check_view(out, "shortcut", "out"));
  if (n_from < 0 || n_from > kMaxShortcutFrom)
    return unsupported("shortcut: " + std::to_string(n_from) + " 'from' layers (the CUDA kernel takes 0.." +
                       std::to_string(kMaxShortcutFrom) + ")");
  if (n_from > 0 && from == nullptr) return invalid_argument("shortcut: n_from > 0 with a null 'from' array");
  if (prev.n != out.n || prev.c != out.c || prev.h != out.h || prev.w != out.w)
    return invalid_argument("shortcut: prev " + view_dims(prev) + " and out " + view_dims(out) + " differ");
  FromViews fv{};
  for (int i = 0; i < n_from; ++i) {
    DLR_RETURN_IF_ERROR(check_view(from[i], "shortcut", "from"));
    if (from[i].n != out.n)
      return invalid_argument("shortcut: from[" + std::to_string(i) + "] " + view_dims(from[i]) +
                              " has another batch than out " + view_dims(out));
    if (int64_t(from[i].c) * from[i].h * from[i].w >= (int64_t(1) << 31))
      return unsupported("shortcut: from[" + std::to_string(i) + "] has more than 2^31-1 elements per image");
    fv.v[i] = from[i];
  }
  const int64_t per_image = int64_t(out.c) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "shortcut", &grid, &empty));
  if (empty) return Status();
  bool flat = image_contiguous(out) && same_flat_order(prev, out);
  for (int i = 0; i < n_from; ++i) flat = flat && same_flat_order(from[i], out);
  if (flat) {
    const int64_t per_block = int64_t(kBlockThreads) * kUnroll;
    const int64_t bx = std::min<int64_t>((per_image + per_block - 1) / per_block, kMaxBlocksX);
    shortcut_flat_kernel<<<dim3(unsigned(bx), grid.y, 1), kBlockThreads, 0, stream>>>(prev, fv, n_from, act, out,
                                                                                        uint32_t(per_image));
    DLR_CUDA_LAUNCH_CHECK("shortcut_flat_kernel");
  } else {
    shortcut_kernel<<<grid, kBlockThreads, 0, stream>>>(prev, fv, n_from, act, out, uint32_t(per_image));
    DLR_CUDA_LAUNCH_CHECK("shortcut_kernel");
  }
  return Status();
}

// Entry point of [shortcut] (cuda_ops.h OpCall): in[0] is the previous layer, then the `from` layers.
Status run_shortcut(const OpCall& call) {
  const int n_from = call.n_in - 1;
  if (n_from > kMaxShortcutFrom)
    return unsupported("layer " + std::to_string(call.layer) + ": shortcut with more than " +
                       std::to_string(kMaxShortcutFrom) + " inputs");
  return shortcut(call.in[0], call.in + 1, n_from, call.p<ShortcutParams>().activation, call.out, call.stream);
}

}  // namespace dlr::cuda
