// split_tf32 (cuda_ops.h): f32 rows split into their TF32 high part and the f32 remainder,
// chunk by chunk, as the operands of a 3xTF32 convolution (conv_3xtf32.h). One thread per
// source element.
#include <algorithm>
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

// Element (row, c) of the source goes to chunk j = c / chunk at column c - j * chunk of
// its three blocks of n_j columns; kChunkBlocks: the chunk's rows start at
// rows * 3 * j * chunk; kChunksInRow: row r starts at r * 3c, its chunk j at 3 * j * chunk.
__global__ void split_tf32_kernel(const float* src, int64_t rows, int c, int64_t src_stride, int chunk,
                                  Tf32SplitOrder order, Tf32SplitLayout layout, float* dst) {
  const int64_t count = rows * c;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / c;
    const int col = int(i - row * c);
    const int j = col / chunk, k = col - j * chunk;
    const int n = min(chunk, c - j * chunk);
    const float v = src[row * src_stride + col];
    const float hi = high_part(v), lo = v - hi;
    float* out = layout == Tf32SplitLayout::kChunkBlocks ? dst + rows * 3 * int64_t(j) * chunk + row * 3 * n
                                                         : dst + row * 3 * int64_t(c) + 3 * int64_t(j) * chunk;
    out[k] = hi;
    out[n + k] = order == Tf32SplitOrder::kHighHighLow ? hi : lo;
    out[2 * n + k] = order == Tf32SplitOrder::kHighHighLow ? lo : hi;
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
  const int64_t count = rows * c;
  const unsigned blocks = unsigned(std::min<int64_t>((count + kBlockThreads - 1) / kBlockThreads, 65535 * 8));
  split_tf32_kernel<<<blocks, kBlockThreads, 0, stream>>>(src, rows, c, src_stride, chunk, order, layout, dst);
  DLR_CUDA_LAUNCH_CHECK("split_tf32_kernel");
  return Status();
}

}  // namespace dlr::cuda
