// region: Darknet [region] forward at inference (cuda_ops.h, cpu::region), NCHW entry
// order kept. One thread per (image, anchor, cell): copies the coords entries, applies
// logistic to the objectness entry and, with softmax, the CPU reference's softmax over
// the classes entries (max, e = (float)exp((double)(x - max)), float sum in class order,
// e / sum), so f32 results match cpu::region up to expf vs the CPU's logistic.
// in: any layout/dtype; out: normally f32 NCHW packed (any accepted).
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

__global__ void region_kernel(TensorView in, TensorView out, RegionOp p, uint32_t per_image) {
  const int n = blockIdx.y;
  const int entries = p.coords + 1 + p.classes;
  const uint32_t plane = uint32_t(in.h) * uint32_t(in.w);
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const int a = int(r / plane);
    const uint32_t cell = r - uint32_t(a) * plane;
    const int y = int(cell / uint32_t(in.w));
    const int x = int(cell - uint32_t(y) * uint32_t(in.w));
    const int base = a * entries;
    for (int e = 0; e < p.coords; ++e) store_at(out, n, base + e, y, x, load_at(in, n, base + e, y, x));
    store_at(out, n, base + p.coords, y, x, logistic_activate(load_at(in, n, base + p.coords, y, x)));
    const int c0 = base + p.coords + 1;
    if (!p.softmax) {
      for (int j = 0; j < p.classes; ++j) store_at(out, n, c0 + j, y, x, load_at(in, n, c0 + j, y, x));
      continue;
    }
    float largest = -INFINITY;
    for (int j = 0; j < p.classes; ++j) largest = fmaxf(largest, load_at(in, n, c0 + j, y, x));
    float sum = 0;
    for (int j = 0; j < p.classes; ++j)
      sum = __fadd_rn(sum, static_cast<float>(exp(static_cast<double>(__fsub_rn(load_at(in, n, c0 + j, y, x), largest)))));
    for (int j = 0; j < p.classes; ++j) {
      const float e = static_cast<float>(exp(static_cast<double>(__fsub_rn(load_at(in, n, c0 + j, y, x), largest))));
      store_at(out, n, c0 + j, y, x, __fdiv_rn(e, sum));
    }
  }
}

}  // namespace

Status region(const RegionOp& p, const TensorView& in, const TensorView& out, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(in, "region", "in"));
  DLR_RETURN_IF_ERROR(check_view(out, "region", "out"));
  if (p.anchors < 1 || p.classes < 1 || p.coords < 0)
    return invalid_argument("region: anchors " + std::to_string(p.anchors) + ", classes " + std::to_string(p.classes));
  const int64_t channels = int64_t(p.anchors) * (p.coords + 1 + p.classes);
  if (in.c != channels)
    return invalid_argument("region: in " + view_dims(in) + " has " + std::to_string(in.c) + " channels, " +
                            std::to_string(channels) + " expected");
  if (out.n != in.n || out.c != in.c || out.h != in.h || out.w != in.w)
    return invalid_argument("region: in " + view_dims(in) + " and out " + view_dims(out) + " differ");
  const int64_t per_image = int64_t(p.anchors) * in.h * in.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "region", &grid, &empty));
  if (empty) return Status();
  region_kernel<<<grid, kBlockThreads, 0, stream>>>(in, out, p, uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("region_kernel");
  return Status();
}

// Entry point of [region] (cuda_ops.h OpCall).
Status run_region(const OpCall& call) {
  return region(region_op(call.p<RegionParams>()), call.in[0], call.out, call.stream);
}

}  // namespace dlr::cuda
