// copy_channels: dst = src for views of equal n, c, h, w, any layouts and dtypes
// (cuda_ops.h, cpu::copy_channels). Same dtype and layout with contiguous image
// blocks (NCHW slices, packed NHWC) go through cudaMemcpyAsync / cudaMemcpy2DAsync;
// everything else runs one thread per element in dst's memory order (f32 <-> f16
// conversion with round-to-nearest-even). Views must not overlap.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

__global__ void copy_channels_kernel(TensorView src, TensorView dst, uint32_t per_image) {
  const int n = blockIdx.y;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const Chw p = decompose_memory_order(dst, r);
    store_at(dst, n, p.c, p.y, p.x, load_at(src, n, p.c, p.y, p.x));
  }
}

}  // namespace

Status copy_channels(const TensorView& src, const TensorView& dst, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(src, "copy_channels", "src"));
  DLR_RETURN_IF_ERROR(check_view(dst, "copy_channels", "dst"));
  if (src.n != dst.n || src.c != dst.c || src.h != dst.h || src.w != dst.w)
    return invalid_argument("copy_channels: src " + view_dims(src) + " and dst " + view_dims(dst) + " differ");
  const int64_t per_image = int64_t(dst.c) * dst.h * dst.w;
  if (per_image == 0 || dst.n == 0) return Status();

  if (src.dtype == dst.dtype && src.layout == dst.layout && image_contiguous(src) &&
      image_contiguous(dst)) {
    const size_t esize = dtype_size(dst.dtype);
    const size_t width = size_t(per_image) * esize;  // bytes of one image block
    if (dst.n == 1) {
      DLR_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, width, cudaMemcpyDeviceToDevice, stream));
      return Status();
    }
    if (src.n_stride == per_image && dst.n_stride == per_image) {
      DLR_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, width * size_t(dst.n), cudaMemcpyDeviceToDevice, stream));
      return Status();
    }
    const int64_t max_pitch = int64_t(1) << 30;  // bytes, below cudaDevAttrMaxPitch (2^31-1 on current GPUs)
    if (src.n_stride >= per_image && dst.n_stride >= per_image && src.n_stride * int64_t(esize) < max_pitch &&
        dst.n_stride * int64_t(esize) < max_pitch) {
      DLR_CUDA_CHECK(cudaMemcpy2DAsync(dst.data, size_t(dst.n_stride) * esize, src.data, size_t(src.n_stride) * esize,
                                       width, size_t(dst.n), cudaMemcpyDeviceToDevice, stream));
      return Status();
    }
    // otherwise (huge or overlapping image strides) the kernel below copies element by element
  }

  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, dst.n, "copy_channels", &grid, &empty));
  if (empty) return Status();
  copy_channels_kernel<<<grid, kBlockThreads, 0, stream>>>(src, dst, uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("copy_channels_kernel");
  return Status();
}

// Entry point of [route] (cuda_ops.h OpCall): the copies the planner left (views need none).
Status run_route(const OpCall& call) {
  for (int i = 0; i < call.n_copies; ++i)
    DLR_RETURN_IF_ERROR(copy_channels(call.copies[i].first, call.copies[i].second, call.stream));
  return Status();
}

}  // namespace dlr::cuda
