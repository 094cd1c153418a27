// reorg: Darknet reorg_cpu(forward = 0) for [reorg] (ReorgMapping::kDarknetOld) and
// [reorg3d] (kSpaceToDepth); the mappings are stated in kernels/cpu/reorg.cpp. Both are
// defined on flat NCHW indices of one image; here every output element (taken in out's
// memory order, any layout/dtype) computes the logical (c, y, x) of its source and
// loads it from `in` (any layout/dtype). A pure copy: bit-identical to cpu::reorg.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

__global__ void reorg_kernel(TensorView in, TensorView out, int s, bool old, uint32_t per_image) {
  const int n = blockIdx.y;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const Chw p = decompose_memory_order(out, r);
    int sc, sy, sx;  // logical source coordinates in `in`
    if (old) {
      // Flat output index, re-read with the input's dims (reorg_cpu called with w, h, c of the input).
      const uint32_t flat = (uint32_t(p.c) * uint32_t(out.h) + uint32_t(p.y)) * uint32_t(out.w) + uint32_t(p.x);
      const uint32_t plane = uint32_t(in.h) * uint32_t(in.w);
      const int k = int(flat / plane);
      const uint32_t rem = flat - uint32_t(k) * plane;
      const int j = int(rem / uint32_t(in.w));
      const int i = int(rem - uint32_t(j) * uint32_t(in.w));
      const int in_c = in.c / (s * s);
      const int c2 = k % in_c, off = k / in_c;
      const int w2 = i * s + off % s, h2 = j * s + off / s;
      // Source flat index w2 + w*s*(h2 + h*s*c2), then decomposed with the input's real dims.
      const uint32_t src = uint32_t(w2) + uint32_t(in.w) * s * (uint32_t(h2) + uint32_t(in.h) * s * uint32_t(c2));
      sc = int(src / plane);
      const uint32_t srem = src - uint32_t(sc) * plane;
      sy = int(srem / uint32_t(in.w));
      sx = int(srem - uint32_t(sy) * uint32_t(in.w));
    } else {
      const int off = p.c / in.c;
      sc = p.c % in.c;
      sy = p.y * s + off / s;
      sx = p.x * s + off % s;
    }
    store_at(out, n, p.c, p.y, p.x, load_at(in, n, sc, sy, sx));
  }
}

}  // namespace

Status reorg(const TensorView& in, int stride, ReorgMapping mapping, const TensorView& out, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(in, "reorg", "in"));
  DLR_RETURN_IF_ERROR(check_view(out, "reorg", "out"));
  const int s = stride;
  const bool old = mapping == ReorgMapping::kDarknetOld;
  if (s < 1 || in.h % s != 0 || in.w % s != 0 || (old && in.c % (s * s) != 0))
    return invalid_argument("reorg: in " + view_dims(in) + " is not divisible by stride " + std::to_string(s));
  if (out.n != in.n || int64_t(out.c) != int64_t(in.c) * s * s || out.h != in.h / s || out.w != in.w / s)
    return invalid_argument("reorg: in " + view_dims(in) + " with stride " + std::to_string(s) +
                            " does not give out " + view_dims(out));
  const int64_t per_image = int64_t(out.c) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "reorg", &grid, &empty));
  if (empty) return Status();
  reorg_kernel<<<grid, kBlockThreads, 0, stream>>>(in, out, s, old, uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("reorg_kernel");
  return Status();
}

// Entry points of [reorg] and [reorg3d] (cuda_ops.h OpCall).
Status run_reorg(const OpCall& call) {
  return reorg(call.in[0], call.p<ReorgParams>().stride, ReorgMapping::kDarknetOld, call.out, call.stream);
}
Status run_reorg3d(const OpCall& call) {
  return reorg(call.in[0], call.p<ReorgParams>().stride, ReorgMapping::kSpaceToDepth, call.out, call.stream);
}

}  // namespace dlr::cuda
