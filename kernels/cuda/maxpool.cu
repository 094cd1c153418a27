// maxpool: Darknet max pooling (cuda_ops.h, cpu::maxpool, Darknet src/maxpool_layer.c).
// Window of size x size taps starting at (-padding/2 + oy*stride_y, -padding/2 + ox*stride_x),
// padding = TOTAL padding; taps outside the input are ignored (Darknet uses -FLT_MAX
// for them and keeps the first strict maximum). One thread per output element, in the
// output's memory order; any layout/dtype for in and out. NHWC views of one dtype whose
// channels, strides and data are 16-byte aligned take a vector path (8 fp16 or 4 fp32
// channels per thread, the window clipped to the input instead of tested per tap): the
// same taps in the same order with the same comparison, so the same bits.
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

// Vector path: in/out NHWC of element type T; `groups` = c / lanes, consecutive threads
// taking consecutive groups of an output pixel.
template <class T>
__global__ void maxpool_nhwc16_kernel(TensorView in, TensorView out, int groups, int size, int stride_x,
                                      int stride_y, int offset, uint32_t per_image) {
  constexpr int kLanes = int(16 / sizeof(T));
  const int n = blockIdx.y;
  const T* src = static_cast<const T*>(in.data) + int64_t(n) * in.n_stride;
  T* dst = static_cast<T*>(out.data) + int64_t(n) * out.n_stride;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const GroupYx at = decompose_groups(r, groups, out.w);
    const int g = at.g, y0 = offset + at.y * stride_y, x0 = offset + at.x * stride_x;
    const int y_begin = max(y0, 0), y_end = min(y0 + size, in.h);
    const int x_begin = max(x0, 0), x_end = min(x0 + size, in.w);
    float m[kLanes];
#pragma unroll
    for (int k = 0; k < kLanes; ++k) m[k] = -FLT_MAX;
    for (int y = y_begin; y < y_end; ++y) {
      const T* row = src + int64_t(y) * in.w * in.pixel_stride + g * kLanes;
      for (int x = x_begin; x < x_end; ++x) {
        const uint4 raw = *reinterpret_cast<const uint4*>(row + int64_t(x) * in.pixel_stride);
        const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int k = 0; k < kLanes; ++k) {
          const float t = to_f32(v[k]);
          m[k] = t > m[k] ? t : m[k];  // Darknet's comparison: a NaN tap is never chosen
        }
      }
    }
    uint4 packed;
    T* o = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int k = 0; k < kLanes; ++k) from_f32(m[k], &o[k]);
    *reinterpret_cast<uint4*>(dst + (int64_t(at.y) * out.w + at.x) * out.pixel_stride + g * kLanes) = packed;
  }
}

template <class T>
Status launch_vector(const MaxPoolParams& p, const TensorView& in, const TensorView& out, int offset,
                     cudaStream_t stream) {
  const int groups = out.c / int(16 / sizeof(T));
  const int64_t per_image = int64_t(groups) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "maxpool", &grid, &empty));
  if (empty) return Status();
  maxpool_nhwc16_kernel<T><<<grid, kBlockThreads, 0, stream>>>(in, out, groups, p.size, p.stride_x, p.stride_y,
                                                                offset, uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("maxpool_nhwc16_kernel");
  return Status();
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
  const int offset = -p.padding / 2;
  if (nhwc_pair16(in, out))
    return in.dtype == DType::kF16 ? launch_vector<__half>(p, in, out, offset, stream)
                                   : launch_vector<float>(p, in, out, offset, stream);
  const int64_t per_image = int64_t(out.c) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "maxpool", &grid, &empty));
  if (empty) return Status();
  maxpool_kernel<<<grid, kBlockThreads, 0, stream>>>(in, out, p.size, p.stride_x, p.stride_y, offset,
                                                      uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("maxpool_kernel");
  return Status();
}

// Entry point of [maxpool] (cuda_ops.h OpCall).
Status run_maxpool(const OpCall& call) { return maxpool(call.p<MaxPoolParams>(), call.in[0], call.out, call.stream); }

}  // namespace dlr::cuda
