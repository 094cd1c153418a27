// yolo: Darknet yolo forward at inference (cuda_ops.h, cpu::yolo, Darknet src/yolo_layer.c).
// Channel k of the input is entry e = k % (classes + 5) of anchor k / (classes + 5):
//   e = 0, 1 (tx, ty):   v = logistic(v) unless new_coords; then v = fmaf(v, sxy, beta)
//                        (a single rounding, like cpu::yolo), beta = (float)(-0.5*(sxy - 1))
//                        computed in double as Darknet's scal_add_cpu argument (applied
//                        for sxy == 1 too: the identity);
//   e = 2, 3 (tw, th):   copied;
//   e >= 4 (obj, cls):   logistic unless new_coords.
// in: any layout/dtype; out: the same n, c, h, w, normally f32 NCHW packed (any
// layout/dtype is accepted). NHWC in, NCHW out (the usual pair): tiles of 32 pixels x 32
// channels pass through shared memory, so both sides move along their fast dimension;
// otherwise one thread per output element in out's memory order. The same arithmetic
// either way.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

// The value stored for input value v of channel c.
__device__ __forceinline__ float yolo_value(float v, int c, int entries, bool new_coords, float sxy, float beta) {
  const int e = c % entries;
  if (!new_coords && e != 2 && e != 3) v = logistic_activate(v);
  if (e < 2) v = __fmaf_rn(v, sxy, beta);  // one FMA, as cpu::yolo (std::fma) and Darknet's nvcc build
  return v;
}

constexpr int kTile = 32;  // pixels and channels of a tile of the NHWC -> NCHW kernel

// blockIdx.x: a tile of kTile pixels, blockIdx.y: of kTile channels, blockIdx.z: the image;
// kBlockThreads threads, kTile per row.
__global__ void yolo_nhwc_nchw_kernel(TensorView in, TensorView out, int entries, bool new_coords, float sxy,
                                      float beta) {
  __shared__ float tile[kTile][kTile + 1];  // [channel][pixel], padded against bank conflicts
  const int pixels = out.h * out.w;
  const int n = blockIdx.z, p0 = blockIdx.x * kTile, c0 = blockIdx.y * kTile;
  const int lane = threadIdx.x % kTile, row0 = threadIdx.x / kTile;
  constexpr int kRows = kBlockThreads / kTile;
  for (int row = row0; row < kTile; row += kRows) {  // consecutive threads: consecutive channels of a pixel
    const int p = p0 + row, c = c0 + lane;
    if (p < pixels && c < in.c)
      tile[lane][row] = load_elem(in, int64_t(n) * in.n_stride + int64_t(p) * in.pixel_stride + c);
  }
  __syncthreads();
  for (int row = row0; row < kTile; row += kRows) {  // consecutive threads: consecutive pixels of a channel
    const int c = c0 + row, p = p0 + lane;
    if (p < pixels && c < out.c)
      store_elem(out, int64_t(n) * out.n_stride + int64_t(c) * pixels + p,
                 yolo_value(tile[row][lane], c, entries, new_coords, sxy, beta));
  }
}

__global__ void yolo_kernel(TensorView in, TensorView out, int entries, bool new_coords, float sxy, float beta,
                            uint32_t per_image) {
  const int n = blockIdx.y;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const Chw p = decompose_memory_order(out, r);
    store_at(out, n, p.c, p.y, p.x, yolo_value(load_at(in, n, p.c, p.y, p.x), p.c, entries, new_coords, sxy, beta));
  }
}

}  // namespace

Status yolo(const YoloParams& p, const TensorView& in, const TensorView& out, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(in, "yolo", "in"));
  DLR_RETURN_IF_ERROR(check_view(out, "yolo", "out"));
  if (p.classes < 0) return invalid_argument("yolo: classes " + std::to_string(p.classes));
  const int entries = p.classes + 5;
  const int64_t channels = int64_t(p.mask.size()) * entries;
  if (in.c != channels)
    return invalid_argument("yolo: in " + view_dims(in) + " has " + std::to_string(in.c) + " channels, " +
                            std::to_string(p.mask.size()) + " anchors x (" + std::to_string(p.classes) +
                            " classes + 5) = " + std::to_string(channels) + " expected");
  if (out.n != in.n || out.c != in.c || out.h != in.h || out.w != in.w)
    return invalid_argument("yolo: in " + view_dims(in) + " and out " + view_dims(out) + " differ");
  const int64_t per_image = int64_t(out.c) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "yolo", &grid, &empty));
  if (empty) return Status();
  const float sxy = p.scale_x_y;
  const float beta = static_cast<float>(-0.5 * (static_cast<double>(sxy) - 1.0));
  if (in.layout == Layout::kNHWC && out.layout == Layout::kNCHW && out.n <= 65535) {
    const int64_t pixels = int64_t(out.h) * out.w;
    const dim3 tiles(unsigned((pixels + kTile - 1) / kTile), unsigned((out.c + kTile - 1) / kTile), unsigned(out.n));
    yolo_nhwc_nchw_kernel<<<tiles, kBlockThreads, 0, stream>>>(in, out, entries, p.new_coords, sxy, beta);
    DLR_CUDA_LAUNCH_CHECK("yolo_nhwc_nchw_kernel");
    return Status();
  }
  yolo_kernel<<<grid, kBlockThreads, 0, stream>>>(in, out, entries, p.new_coords, sxy, beta, uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("yolo_kernel");
  return Status();
}

// Entry point of [yolo] (cuda_ops.h OpCall).
Status run_yolo(const OpCall& call) { return yolo(call.p<YoloParams>(), call.in[0], call.out, call.stream); }

}  // namespace dlr::cuda
