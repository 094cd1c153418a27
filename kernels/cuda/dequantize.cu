// dequantize_weights (cuda_ops.h): int8 weights with one f32 scale per filter row expanded
// to f32 or f16 as a conv's weights. Four weights per thread (one 32-bit load) where the
// row length allows, else one. dequantize_weights_batch: several blobs in one launch, eight
// weights per thread where the blob's addresses allow.
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

__device__ inline void put(float* dst, uint32_t i, float v) { dst[i] = v; }
__device__ inline void put(__half* dst, uint32_t i, float v) { dst[i] = __float2half_rn(v); }

// Row lengths that are multiples of 4: thread t expands weights [4t, 4t + 4) of one row.
template <class T>
__global__ void dequantize4_kernel(const char4* src, const float* scales, uint32_t quads, uint32_t row_quads, T* dst) {
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < quads; t += gridDim.x * blockDim.x) {
    const char4 q = src[t];
    const float s = scales[t / row_quads];
    put(dst, 4 * t, float(q.x) * s);
    put(dst, 4 * t + 1, float(q.y) * s);
    put(dst, 4 * t + 2, float(q.z) * s);
    put(dst, 4 * t + 3, float(q.w) * s);
  }
}

template <class T>
__global__ void dequantize1_kernel(const int8_t* src, const float* scales, uint32_t count, uint32_t row, T* dst) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    put(dst, i, float(src[i]) * scales[i / row]);
}

template <class T>
Status launch(const int8_t* src, const float* scales, int64_t filters, int64_t row, T* dst, cudaStream_t stream) {
  const int64_t count = filters * row;
  const bool quads = row % 4 == 0 && reinterpret_cast<uintptr_t>(src) % 4 == 0;
  const int64_t threads = quads ? count / 4 : count;
  const unsigned blocks = grid_stride_blocks(threads);
  if (quads)
    dequantize4_kernel<<<blocks, kBlockThreads, 0, stream>>>(reinterpret_cast<const char4*>(src), scales,
                                                             uint32_t(threads), uint32_t(row / 4), dst);
  else
    dequantize1_kernel<<<blocks, kBlockThreads, 0, stream>>>(src, scales, uint32_t(count), uint32_t(row), dst);
  DLR_CUDA_LAUNCH_CHECK("dequantize_kernel");
  return Status();
}

// One launch for several blobs: blockIdx.y picks the job, x strides over its weights.
// A job whose src is 8-byte and dst 16-byte aligned (wide) is expanded eight weights a
// thread: one 8-byte load, 16- or 32-byte stores; the weights past the last eight and the
// other jobs one a thread.
struct BatchJobs {
  const int8_t* src[kMaxDequantJobs];
  const float* scales[kMaxDequantJobs];
  void* dst[kMaxDequantJobs];
  uint32_t count[kMaxDequantJobs];
  uint32_t row[kMaxDequantJobs];
  bool wide[kMaxDequantJobs];
};

__device__ inline void put8(__half* dst, uint32_t i, const float (&v)[8]) {
  __align__(16) __half h[8];
  for (int k = 0; k < 8; ++k) h[k] = __float2half_rn(v[k]);
  *reinterpret_cast<uint4*>(dst + i) = *reinterpret_cast<const uint4*>(h);
}
__device__ inline void put8(float* dst, uint32_t i, const float (&v)[8]) {
  float4* d = reinterpret_cast<float4*>(dst + i);
  d[0] = make_float4(v[0], v[1], v[2], v[3]);
  d[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// Weights [8g, 8g + 8) of a wide job; the row (and scale) found once, then stepped.
template <class T>
__device__ inline void expand8(const int8_t* src, const float* scales, uint32_t row, uint32_t g, T* dst) {
  const uint2 raw = reinterpret_cast<const uint2*>(src)[g];
  const int8_t* q = reinterpret_cast<const int8_t*>(&raw);
  const uint32_t first = 8 * g;
  uint32_t r = first / row, end = (r + 1) * row;
  float s = scales[r], v[8];
  for (uint32_t k = 0; k < 8; ++k) {
    if (first + k >= end) {
      r = (first + k) / row;
      end = (r + 1) * row;
      s = scales[r];
    }
    v[k] = float(q[k]) * s;
  }
  put8(dst, first, v);
}

template <class T>
__global__ void dequantize_batch_kernel(BatchJobs jobs) {
  const unsigned j = blockIdx.y;
  const int8_t* src = jobs.src[j];
  const float* scales = jobs.scales[j];
  T* dst = static_cast<T*>(jobs.dst[j]);
  const uint32_t count = jobs.count[j], row = jobs.row[j];
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
  const uint32_t done = jobs.wide[j] ? count / 8 * 8 : 0;
  for (uint32_t g = tid; g < done / 8; g += stride) expand8(src, scales, row, g, dst);
  for (uint32_t i = done + tid; i < count; i += stride) put(dst, i, float(src[i]) * scales[i / row]);
}

Status check_shape(int64_t filters, int64_t row, const char* what) {
  if (filters <= 0 || row <= 0 || filters * row >= (int64_t(1) << 31))
    return invalid_argument(std::string(what) + ": " + std::to_string(filters) + " filters of " + std::to_string(row) +
                            " weights (expected both > 0, fewer than 2^31 in all)");
  return Status();
}

}  // namespace

Status dequantize_weights_batch(const DequantJob* jobs, int n, DType dtype, cudaStream_t stream) {
  if (n < 1 || n > kMaxDequantJobs)
    return invalid_argument("dequantize_weights_batch: " + std::to_string(n) + " jobs (expected 1 to " +
                            std::to_string(kMaxDequantJobs) + ")");
  if (n == 1) return dequantize_weights(jobs[0].src, jobs[0].scales, jobs[0].filters, jobs[0].row, dtype, jobs[0].dst, stream);
  BatchJobs b = {};
  int64_t largest = 0;
  for (int j = 0; j < n; ++j) {
    DLR_RETURN_IF_ERROR(check_shape(jobs[j].filters, jobs[j].row, "dequantize_weights_batch"));
    b.src[j] = jobs[j].src;
    b.scales[j] = jobs[j].scales;
    b.dst[j] = jobs[j].dst;
    b.count[j] = uint32_t(jobs[j].filters * jobs[j].row);
    b.row[j] = uint32_t(jobs[j].row);
    b.wide[j] = reinterpret_cast<uintptr_t>(jobs[j].src) % 8 == 0 && reinterpret_cast<uintptr_t>(jobs[j].dst) % 16 == 0;
    largest = std::max<int64_t>(largest, b.wide[j] ? (b.count[j] + 7) / 8 : b.count[j]);
  }
  const dim3 grid(unsigned(std::min<int64_t>((largest + kBlockThreads - 1) / kBlockThreads, 65535)), unsigned(n));
  if (dtype == DType::kF16)
    dequantize_batch_kernel<__half><<<grid, kBlockThreads, 0, stream>>>(b);
  else
    dequantize_batch_kernel<float><<<grid, kBlockThreads, 0, stream>>>(b);
  DLR_CUDA_LAUNCH_CHECK("dequantize_batch_kernel");
  return Status();
}

Status dequantize_weights(const int8_t* src, const float* scales, int64_t filters, int64_t row, DType dtype, void* dst,
                          cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_shape(filters, row, "dequantize_weights"));
  if (dtype == DType::kF16) return launch(src, scales, filters, row, static_cast<__half*>(dst), stream);
  return launch(src, scales, filters, row, static_cast<float*>(dst), stream);
}

}  // namespace dlr::cuda
