// maxpool: Darknet max pooling (cuda_ops.h, cpu::maxpool, Darknet src/maxpool_layer.c).
// Window of size x size taps starting at (-padding/2 + oy*stride_y, -padding/2 + ox*stride_x),
// padding = TOTAL padding; taps outside the input are ignored (Darknet uses -FLT_MAX
// for them and keeps the first strict maximum). One thread per output element, in the
// output's memory order; any layout/dtype for in and out.
#include <cfloat>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

__global__ void maxpool_kernel(TensorView in, TensorView out, int size, int stride_x, int stride_y, int offset,
                               uint32_t per_image) {
  const int n = blockIdx.y;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const Chw p = decompose_memory_order(out, r);
    const int y0 = offset + p.y * stride_y;
    const int x0 = offset + p.x * stride_x;
    float m = -FLT_MAX;
    for (int i = 0; i < size; ++i) {
      const int y = y0 + i;
      if (y < 0 || y >= in.h) continue;
      for (int j = 0; j < size; ++j) {
        const int x = x0 + j;
        if (x < 0 || x >= in.w) continue;
        const float v = load_at(in, n, p.c, y, x);
        m = v > m ? v : m;  // Darknet's comparison: a NaN tap is never chosen
      }
    }
    store_at(out, n, p.c, p.y, p.x, m);
  }
}

}  // namespace

Status maxpool(const MaxPoolParams& p, const TensorView& in, const TensorView& out, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(in, "maxpool", "in"));
  DLR_RETURN_IF_ERROR(check_view(out, "maxpool", "out"));
  if (p.size < 1 || p.stride_x < 1 || p.stride_y < 1 || p.padding < 0)
    return invalid_argument("maxpool: size " + std::to_string(p.size) + ", stride " + std::to_string(p.stride_x) +
                            "x" + std::to_string(p.stride_y) + ", padding " + std::to_string(p.padding) +
                            ": size and strides must be >= 1 and padding >= 0");
  const int out_h = (in.h + p.padding - p.size) / p.stride_y + 1;
  const int out_w = (in.w + p.padding - p.size) / p.stride_x + 1;
  if (out.n != in.n || out.c != in.c || out.h != out_h || out.w != out_w)
    return invalid_argument("maxpool: in " + view_dims(in) + " gives " + std::to_string(in.n) + "x" +
                            std::to_string(in.c) + "x" + std::to_string(out_h) + "x" + std::to_string(out_w) +
                            ", out is " + view_dims(out));
  const int64_t per_image = int64_t(out.c) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "maxpool", &grid, &empty));
  if (empty) return Status();
  const int offset = -p.padding / 2;
  maxpool_kernel<<<grid, kBlockThreads, 0, stream>>>(in, out, p.size, p.stride_x, p.stride_y, offset,
                                                      uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("maxpool_kernel");
  return Status();
}

// Entry point of [maxpool] (cuda_ops.h OpCall).
Status run_maxpool(const OpCall& call) { return maxpool(call.p<MaxPoolParams>(), call.in[0], call.out, call.stream); }

}  // namespace dlr::cuda
