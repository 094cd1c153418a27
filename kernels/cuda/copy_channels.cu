// copy_channels: dst = src for views of equal n, c, h, w, any layouts and dtypes
// (cuda_ops.h, cpu::copy_channels). Same dtype and layout with contiguous image
// blocks (NCHW slices, packed NHWC) go through cudaMemcpyAsync / cudaMemcpy2DAsync;
// everything else runs one thread per element in dst's memory order (f32 <-> f16
// conversion with round-to-nearest-even). Views must not overlap.
#include <algorithm>

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

// Strides of an NHWC view in 16-byte groups.
struct Groups16 {
  const uint4* src = nullptr;
  uint4* dst = nullptr;
  uint32_t src_pixel = 0, dst_pixel = 0;  // groups between pixels
  int64_t src_image = 0, dst_image = 0;   // groups between images
};

// Item r of image blockIdx.y: group r % groups of pixel r / groups; two per trip in flight.
__global__ void copy_channels_nhwc16_kernel(Groups16 g, uint32_t items, uint32_t groups) {
  const uint4* s = g.src + int64_t(blockIdx.y) * g.src_image;
  uint4* d = g.dst + int64_t(blockIdx.y) * g.dst_image;
  const uint32_t step = gridDim.x * blockDim.x;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < items; r += 2 * step) {
    const uint32_t r2 = r + step;
    const uint32_t p = r / groups, p2 = r2 / groups;
    const uint4 v = s[p * g.src_pixel + (r - p * groups)];
    uint4 v2{};
    if (r2 < items) v2 = s[p2 * g.src_pixel + (r2 - p2 * groups)];
    d[p * g.dst_pixel + (r - p * groups)] = v;
    if (r2 < items) d[p2 * g.dst_pixel + (r2 - p2 * groups)] = v2;
  }
}

// The vector path where src and dst are NHWC views of one dtype and whole 16-byte
// groups (*taken then set); else nothing is done.
Status copy16(const TensorView& src, const TensorView& dst, cudaStream_t stream, bool* taken) {
  const int lanes = lanes16(dst.dtype);
  *taken = false;
  if (!nhwc_pair16(src, dst)) return Status();
  const int64_t groups = dst.c / lanes, items = groups * dst.h * dst.w;
  if (items >= (int64_t(1) << 31) || dst.n > 65535) return Status();
  *taken = true;
  Groups16 g;
  g.src = static_cast<const uint4*>(src.data);
  g.dst = static_cast<uint4*>(dst.data);
  g.src_pixel = uint32_t(src.pixel_stride / lanes);
  g.dst_pixel = uint32_t(dst.pixel_stride / lanes);
  g.src_image = src.n_stride / lanes;
  g.dst_image = dst.n_stride / lanes;
  const int64_t blocks = std::min<int64_t>(kMaxBlocksX, (items + 2 * kBlockThreads - 1) / (2 * kBlockThreads));
  copy_channels_nhwc16_kernel<<<dim3(unsigned(blocks), unsigned(dst.n), 1), kBlockThreads, 0, stream>>>(
      g, uint32_t(items), uint32_t(groups));
  DLR_CUDA_LAUNCH_CHECK("copy_channels_nhwc16_kernel");
  return Status();
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

  bool vector = false;
  DLR_RETURN_IF_ERROR(copy16(src, dst, stream, &vector));
  if (vector) return Status();
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
