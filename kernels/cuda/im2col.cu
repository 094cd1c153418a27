// im2col_nhwc (cuda_ops.h): the patches of an f32 NHWC conv input as rows of a GEMM
// operand (the GEMM form of the 3xTF32 conv, conv_3xtf32.h). One thread per element of
// the result; consecutive threads take consecutive channels, so reads and writes are
// coalesced.
#include <algorithm>
#include <string>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

struct Patches {
  int size, stride_x, stride_y, pad;
  int oh, ow;
};

__global__ void im2col_nhwc_kernel(TensorView in, Patches p, float* dst) {
  const int64_t k_row = int64_t(p.size) * p.size * in.c;
  const int64_t count = int64_t(in.n) * p.oh * p.ow * k_row;
  const float* src = static_cast<const float*>(in.data);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = i / k_row;
    const int k = int(i - m * k_row);
    const int c = k % in.c, tap = k / in.c;
    const int kx = tap % p.size, ky = tap / p.size;
    const int ox = int(m % p.ow);
    const int64_t rest = m / p.ow;
    const int oy = int(rest % p.oh), n = int(rest / p.oh);
    const int y = oy * p.stride_y - p.pad + ky, x = ox * p.stride_x - p.pad + kx;
    const bool inside = y >= 0 && x >= 0 && y < in.h && x < in.w;
    dst[i] = inside ? src[n * in.n_stride + (int64_t(y) * in.w + x) * in.pixel_stride + c] : 0.f;
  }
}

}  // namespace

Status im2col_nhwc(const TensorView& in, const ConvParams& p, int oh, int ow, float* dst, cudaStream_t stream) {
  if (in.data == nullptr || dst == nullptr)
    return invalid_argument("im2col_nhwc: null input or destination");
  if (in.dtype != DType::kF32 || in.layout != Layout::kNHWC || in.pixel_stride < in.c)
    return unsupported("im2col_nhwc: f32 NHWC input only");
  if (p.size < 1 || p.stride_x < 1 || p.stride_y < 1 || p.padding < 0 || (p.size > 1 && p.dilation != 1) || oh < 1 ||
      ow < 1)
    return invalid_argument("im2col_nhwc: size " + std::to_string(p.size) + ", strides " + std::to_string(p.stride_x) +
                            "x" + std::to_string(p.stride_y) + ", padding " + std::to_string(p.padding) +
                            ", dilation " + std::to_string(p.dilation) + " or output " + std::to_string(oh) + "x" +
                            std::to_string(ow) + " out of range (no dilation)");
  const int64_t count = int64_t(in.n) * oh * ow * p.size * p.size * in.c;
  if (count == 0) return Status();
  const unsigned blocks = unsigned(std::min<int64_t>((count + kBlockThreads - 1) / kBlockThreads, 65535 * 8));
  im2col_nhwc_kernel<<<blocks, kBlockThreads, 0, stream>>>(in, Patches{p.size, p.stride_x, p.stride_y, p.padding, oh, ow},
                                                           dst);
  DLR_CUDA_LAUNCH_CHECK("im2col_nhwc_kernel");
  return Status();
}

}  // namespace dlr::cuda
