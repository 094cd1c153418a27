// gaussian_yolo: Darknet [Gaussian_yolo] forward at inference (cuda_ops.h,
// cpu::gaussian_yolo). Channel k is entry e = k % (9 + classes) of its anchor:
//   e = 0, 2 (x, y):             logistic, then fmaf(v, sxy, beta) (one rounding, as the CPU);
//   e = 1, 3, 5, 7 (sigmas), >= 8 (objectness, classes): logistic;
//   e = 4, 6 (w, h):             copied.
// in: any layout/dtype; out: normally f32 NCHW packed. One thread per output element.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

__global__ void gaussian_yolo_kernel(TensorView in, TensorView out, int entries, float sxy, float beta,
                                     uint32_t per_image) {
  const int n = blockIdx.y;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const Chw p = decompose_memory_order(out, r);
    const int e = p.c % entries;
    float v = load_at(in, n, p.c, p.y, p.x);
    if (e != 4 && e != 6) v = logistic_activate(v);
    if (e == 0 || e == 2) v = __fmaf_rn(v, sxy, beta);
    store_at(out, n, p.c, p.y, p.x, v);
  }
}

}  // namespace

Status gaussian_yolo(const GaussianYoloOp& p, const TensorView& in, const TensorView& out, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(in, "gaussian_yolo", "in"));
  DLR_RETURN_IF_ERROR(check_view(out, "gaussian_yolo", "out"));
  if (p.classes < 0 || p.anchors < 1)
    return invalid_argument("gaussian_yolo: anchors " + std::to_string(p.anchors) + ", classes " +
                            std::to_string(p.classes));
  const int entries = p.classes + 9;
  if (in.c != int64_t(p.anchors) * entries)
    return invalid_argument("gaussian_yolo: in " + view_dims(in) + " has " + std::to_string(in.c) + " channels, " +
                            std::to_string(int64_t(p.anchors) * entries) + " expected");
  if (out.n != in.n || out.c != in.c || out.h != in.h || out.w != in.w)
    return invalid_argument("gaussian_yolo: in " + view_dims(in) + " and out " + view_dims(out) + " differ");
  const int64_t per_image = int64_t(out.c) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "gaussian_yolo", &grid, &empty));
  if (empty) return Status();
  const float beta = static_cast<float>(-0.5 * (static_cast<double>(p.scale_x_y) - 1.0));
  gaussian_yolo_kernel<<<grid, kBlockThreads, 0, stream>>>(in, out, entries, p.scale_x_y, beta, uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("gaussian_yolo_kernel");
  return Status();
}

// Entry point of [Gaussian_yolo] (cuda_ops.h OpCall).
Status run_gaussian_yolo(const OpCall& call) {
  return gaussian_yolo(gaussian_yolo_op(call.p<GaussianYoloParams>()), call.in[0], call.out, call.stream);
}

}  // namespace dlr::cuda
