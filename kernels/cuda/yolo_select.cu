// yolo_select: a [yolo] output's candidates picked on the device (cuda_ops.h): the test of
// the host decode (runtime/detect/yolo_decode.cpp, objectness > thresh, strict) over every
// (cell, anchor) of every image, and each candidate's entries gathered into a row. Values
// are copied, not computed: the host decodes the rows with the arithmetic it applies to a
// whole output.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

// One thread per (cell, anchor) of image blockIdx.y; key = cell * anchors + anchor.
__global__ void yolo_select_kernel(const float* in, int64_t n_stride, int cells, int anchors, int entries,
                                   float thresh, int capacity, int32_t* counts, int32_t* keys, float* rows) {
  const int b = blockIdx.y;
  const int64_t per_image = int64_t(cells) * anchors;
  for (int64_t key = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; key < per_image;
       key += int64_t(gridDim.x) * blockDim.x) {
    const int cell = int(key / anchors), a = int(key % anchors);
    const float* base = in + b * n_stride + int64_t(a) * entries * cells + cell;  // entry e at base[e * cells]
    if (!(base[int64_t(4) * cells] > thresh)) continue;
    const int r = atomicAdd(&counts[b], 1);
    if (r >= capacity) continue;
    const int64_t at = int64_t(b) * capacity + r;
    keys[at] = int32_t(key);
    for (int e = 0; e < entries; ++e) rows[at * entries + e] = base[int64_t(e) * cells];
  }
}

}  // namespace

Status yolo_select(const TensorView& in, int anchors, int entries, float thresh, int capacity, int32_t* counts,
                   int32_t* keys, float* rows, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(in, "yolo_select", "in"));
  if (in.dtype != DType::kF32 || in.layout != Layout::kNCHW || !in.contiguous())
    return invalid_argument("yolo_select: in " + view_dims(in) + " must be f32 NCHW packed");
  if (anchors <= 0 || entries < 5 || int64_t(anchors) * entries != in.c)
    return invalid_argument("yolo_select: in " + view_dims(in) + " has " + std::to_string(in.c) + " channels, not " +
                            std::to_string(anchors) + " anchors x " + std::to_string(entries) + " entries");
  if (capacity < 0) return invalid_argument("yolo_select: capacity " + std::to_string(capacity));
  DLR_CUDA_CHECK(cudaMemsetAsync(counts, 0, size_t(in.n) * sizeof(int32_t), stream));
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(int64_t(in.h) * in.w * anchors, in.n, "yolo_select", &grid, &empty));
  if (empty) return Status();
  yolo_select_kernel<<<grid, kBlockThreads, 0, stream>>>(static_cast<const float*>(in.data), in.n_stride,
                                                          in.h * in.w, anchors, entries, thresh, capacity, counts,
                                                          keys, rows);
  DLR_CUDA_LAUNCH_CHECK("yolo_select_kernel");
  return Status();
}

}  // namespace dlr::cuda
