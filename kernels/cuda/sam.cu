// sam: out = act(prev * from) elementwise (cuda_ops.h, cpu::sam, Darknet sam_layer).
// One thread per output element in out's memory order; any layout/dtype for every
// view. out may be the same view as prev (each element read, then written, by one thread).
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

__global__ void sam_kernel(TensorView prev, TensorView from, Activation act, TensorView out, uint32_t per_image) {
  const int n = blockIdx.y;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const Chw p = decompose_memory_order(out, r);
    const float v = __fmul_rn(load_at(prev, n, p.c, p.y, p.x), load_at(from, n, p.c, p.y, p.x));
    store_at(out, n, p.c, p.y, p.x, activate(act, v));
  }
}

}  // namespace

Status sam(const TensorView& prev, const TensorView& from, Activation act, const TensorView& out,
           cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(prev, "sam", "prev"));
  DLR_RETURN_IF_ERROR(check_view(from, "sam", "from"));
  DLR_RETURN_IF_ERROR(check_view(out, "sam", "out"));
  for (const TensorView* v : {&prev, &from})
    if (v->n != out.n || v->c != out.c || v->h != out.h || v->w != out.w)
      return invalid_argument("sam: " + view_dims(*v) + " and out " + view_dims(out) + " differ");
  const int64_t per_image = int64_t(out.c) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "sam", &grid, &empty));
  if (empty) return Status();
  sam_kernel<<<grid, kBlockThreads, 0, stream>>>(prev, from, act, out, uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("sam_kernel");
  return Status();
}

// Entry point of [sam] (cuda_ops.h OpCall): in[0] is the previous layer, in[1] is `from`.
Status run_sam(const OpCall& call) {
  return sam(call.in[0], call.in[1], call.p<SamParams>().activation, call.out, call.stream);
}

}  // namespace dlr::cuda
