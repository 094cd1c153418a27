// split_tf32 and split_tf32_patches (cuda_ops.h): f32 rows split into their TF32 high
// part and the f32 remainder, chunk by chunk, as the operands of a 3xTF32 convolution
// (conv_3xtf32.h). One thread per source element.
#include <string>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

// v rounded to the nearest TF32 value (10 mantissa bits), ties to even; as tf32_high().
__device__ inline float high_part(float v) {
  uint32_t b = __float_as_uint(v);
  b += 0x0FFFu + ((b >> 13) & 1u);
  return __uint_as_float(b & ~0x1FFFu);
}

// Value v of column col (of c) in `row` (of rows) goes to chunk j = col / chunk at column
// col - j * chunk of its three blocks of n_j columns; kChunkBlocks: the chunk's rows start
// at rows * 3 * j * chunk; kChunksInRow: row r starts at r * 3c, its chunk j at 3 * j * chunk.
__device__ __forceinline__ void store_split(float v, int64_t row, int64_t rows, int col, int c, int chunk,
                                            Tf32SplitOrder order, Tf32SplitLayout layout, float* dst) {
  const int j = col / chunk, k = col - j * chunk;
  const int n = min(chunk, c - j * chunk);
  const float hi = high_part(v), lo = v - hi;
  float* out = layout == Tf32SplitLayout::kChunkBlocks ? dst + rows * 3 * int64_t(j) * chunk + row * 3 * n
                                                       : dst + row * 3 * int64_t(c) + 3 * int64_t(j) * chunk;
  out[k] = hi;
  out[n + k] = order == Tf32SplitOrder::kHighHighLow ? hi : lo;
  out[2 * n + k] = order == Tf32SplitOrder::kHighHighLow ? lo : hi;
}

__global__ void split_tf32_kernel(const float* src, int64_t rows, int c, int64_t src_stride, int chunk,
                                  Tf32SplitOrder order, Tf32SplitLayout layout, float* dst) {
  const int64_t count = rows * c;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / c;
    const int col = int(i - row * c);
    store_split(src[row * src_stride + col], row, rows, col, c, chunk, order, layout, dst);
  }
}

struct Patches {
  int size, stride_x, stride_y, pad;
  int oh, ow;
};

// Row m = (image, oy, ox), column k = (ky, kx, ch) of the unrolled patches.
__global__ void split_patches_kernel(TensorView in, Patches p, int chunk, float* dst) {
  const int k_row = p.size * p.size * in.c;
  const int64_t rows = int64_t(in.n) * p.oh * p.ow, count = rows * k_row;
  const float* src = static_cast<const float*>(in.data);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = i / k_row;
    const int k = int(i - m * k_row);
    const int ch = k % in.c, tap = k / in.c;
    const int kx = tap % p.size, ky = tap / p.size;
    const int ox = int(m % p.ow);
    const int64_t rest = m / p.ow;
    const int oy = int(rest % p.oh), n = int(rest / p.oh);
    const int y = oy * p.stride_y - p.pad + ky, x = ox * p.stride_x - p.pad + kx;
    const bool inside = y >= 0 && x >= 0 && y < in.h && x < in.w;
    const float v = inside ? src[n * in.n_stride + (int64_t(y) * in.w + x) * in.pixel_stride + ch] : 0.f;
    store_split(v, m, rows, k, k_row, chunk, Tf32SplitOrder::kHighHighLow, Tf32SplitLayout::kChunksInRow, dst);
  }
}

}  // namespace

Status split_tf32(const float* src, int64_t rows, int c, int64_t src_stride, int chunk, Tf32SplitOrder order,
                  Tf32SplitLayout layout, float* dst, cudaStream_t stream) {
  if (src == nullptr || dst == nullptr || rows < 0 || c <= 0 || chunk <= 0 || src_stride < c)
    return invalid_argument("split_tf32: null pointer, or rows " + std::to_string(rows) + ", channels " +
                            std::to_string(c) + ", stride " + std::to_string(src_stride) + ", chunk " +
                            std::to_string(chunk) + " out of range");
  if (rows == 0) return Status();
  split_tf32_kernel<<<grid_stride_blocks(rows * c), kBlockThreads, 0, stream>>>(src, rows, c, src_stride, chunk, order, layout,
                                                                       dst);
  DLR_CUDA_LAUNCH_CHECK("split_tf32_kernel");
  return Status();
}

Status split_tf32_patches(const TensorView& in, const ConvParams& p, int oh, int ow, int chunk, float* dst,
                          cudaStream_t stream) {
  if (in.data == nullptr || dst == nullptr) return invalid_argument("split_tf32_patches: null input or destination");
  if (in.dtype != DType::kF32 || in.layout != Layout::kNHWC || in.pixel_stride < in.c)
    return unsupported("split_tf32_patches: f32 NHWC input only");
  if (p.size < 1 || p.stride_x < 1 || p.stride_y < 1 || p.padding < 0 || (p.size > 1 && p.dilation != 1) || oh < 1 ||
      ow < 1 || chunk <= 0)
    return invalid_argument("split_tf32_patches: size " + std::to_string(p.size) + ", strides " +
                            std::to_string(p.stride_x) + "x" + std::to_string(p.stride_y) + ", padding " +
                            std::to_string(p.padding) + ", dilation " + std::to_string(p.dilation) + ", output " +
                            std::to_string(oh) + "x" + std::to_string(ow) + " or chunk " + std::to_string(chunk) +
                            " out of range (no dilation)");
  const int64_t count = int64_t(in.n) * oh * ow * p.size * p.size * in.c;
  if (count == 0) return Status();
  split_patches_kernel<<<grid_stride_blocks(count), kBlockThreads, 0, stream>>>(
      in, Patches{p.size, p.stride_x, p.stride_y, p.padding, oh, ow}, chunk, dst);
  DLR_CUDA_LAUNCH_CHECK("split_patches_kernel");
  return Status();
}

}  // namespace dlr::cuda
