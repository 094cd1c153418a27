// upsample: nearest neighbour, out[c][y][x] = scale * in[c][y/stride][x/stride]
// (cuda_ops.h, cpu::upsample, Darknet src/blas.c upsample_cpu). One thread per output element in
// the output's memory order; any layout/dtype for in and out. NHWC views of one dtype in
// whole 16-byte channel groups take one thread per group (the same product, so the same
// bits).
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

// NHWC 16-byte groups of T: r = (y * out.w + x) * groups + g.
template <class T>
__global__ void upsample_nhwc16_kernel(TensorView in, TensorView out, int stride, float scale, int groups,
                                       uint32_t per_image) {
  constexpr int kLanes = int(16 / sizeof(T));
  const int n = blockIdx.y;
  const T* src = static_cast<const T*>(in.data) + int64_t(n) * in.n_stride;
  T* dst = static_cast<T*>(out.data) + int64_t(n) * out.n_stride;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const GroupYx o = decompose_groups(r, groups, out.w);
    const int g = o.g, y = o.y, x = o.x;
    const int64_t from = (int64_t(y / stride) * in.w + x / stride) * in.pixel_stride + g * kLanes;
    uint4 v = *reinterpret_cast<const uint4*>(src + from);
    T* lanes = reinterpret_cast<T*>(&v);
#pragma unroll
    for (int k = 0; k < kLanes; ++k) from_f32(scale * to_f32(lanes[k]), &lanes[k]);
    *reinterpret_cast<uint4*>(dst + (int64_t(y) * out.w + x) * out.pixel_stride + g * kLanes) = v;
  }
}

template <class T>
Status launch_nhwc16(const UpsampleParams& p, const TensorView& in, const TensorView& out, cudaStream_t stream) {
  const int groups = out.c / int(16 / sizeof(T));
  const int64_t per_image = int64_t(groups) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "upsample", &grid, &empty));
  if (empty) return Status();
  upsample_nhwc16_kernel<T><<<grid, kBlockThreads, 0, stream>>>(in, out, p.stride, p.scale, groups,
                                                                uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("upsample_nhwc16_kernel");
  return Status();
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
  if (nhwc_pair16(in, out))
    return in.dtype == DType::kF16 ? launch_nhwc16<__half>(p, in, out, stream)
                                   : launch_nhwc16<float>(p, in, out, stream);
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
