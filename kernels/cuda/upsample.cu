// upsample: nearest neighbour, out[c][y][x] = scale * in[c][y/stride][x/stride]
// (cuda_ops.h, cpu::upsample, Darknet src/blas.c upsample_cpu). One thread per output element in
// the output's memory order; any layout/dtype for in and out.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

__global__ void upsample_kernel(TensorView in, TensorView out, int stride, float scale, uint32_t per_image) {
  const int n = blockIdx.y;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const Chw p = decompose_memory_order(out, r);
    const float v = load_at(in, n, p.c, p.y / stride, p.x / stride);
    store_at(out, n, p.c, p.y, p.x, scale * v);
  }
}

}  // namespace

Status upsample(const UpsampleParams& p, const TensorView& in, const TensorView& out, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(in, "upsample", "in"));
  DLR_RETURN_IF_ERROR(check_view(out, "upsample", "out"));
  if (p.stride < 1) return unsupported("upsample: stride " + std::to_string(p.stride) + " (must be >= 1)");
  if (out.n != in.n || out.c != in.c || int64_t(out.h) != int64_t(in.h) * p.stride ||
      int64_t(out.w) != int64_t(in.w) * p.stride)
    return invalid_argument("upsample: in " + view_dims(in) + " with stride " + std::to_string(p.stride) +
                            " does not give out " + view_dims(out));
  const int64_t per_image = int64_t(out.c) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "upsample", &grid, &empty));
  if (empty) return Status();
  upsample_kernel<<<grid, kBlockThreads, 0, stream>>>(in, out, p.stride, p.scale, uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("upsample_kernel");
  return Status();
}

// Entry point of [upsample] (cuda_ops.h OpCall).
Status run_upsample(const OpCall& call) {
  return upsample(call.p<UpsampleParams>(), call.in[0], call.out, call.stream);
}

}  // namespace dlr::cuda
