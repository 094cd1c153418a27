// avgpool: Darknet global average pool (cuda_ops.h, cpu::avgpool; Darknet's
// forward_avgpool_layer_kernel also runs one thread per (image, channel)). Each
// thread sums its plane in NCHW order (y then x) in fp32 and divides by h*w, so
// an f32 result equals the CPU reference bit for bit. in: any layout/dtype.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

__global__ void avgpool_kernel(TensorView in, TensorView out) {
  const int n = blockIdx.y;
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < in.c; c += gridDim.x * blockDim.x) {
    float sum = 0;
    for (int y = 0; y < in.h; ++y)
      for (int x = 0; x < in.w; ++x) sum = __fadd_rn(sum, load_at(in, n, c, y, x));
    store_at(out, n, c, 0, 0, sum / (in.h * in.w));
  }
}

}  // namespace

Status avgpool(const TensorView& in, const TensorView& out, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(in, "avgpool", "in"));
  DLR_RETURN_IF_ERROR(check_view(out, "avgpool", "out"));
  if (out.n != in.n || out.c != in.c || out.h != 1 || out.w != 1)
    return invalid_argument("avgpool: in " + view_dims(in) + " does not give out " + view_dims(out) +
                            " (expected n x c x 1 x 1)");
  if (int64_t(in.h) * in.w >= (int64_t(1) << 31)) return unsupported("avgpool: plane larger than 2^31-1");
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(in.c, in.n, "avgpool", &grid, &empty));
  if (empty || in.h * in.w == 0) return Status();
  avgpool_kernel<<<grid, kBlockThreads, 0, stream>>>(in, out);
  DLR_CUDA_LAUNCH_CHECK("avgpool_kernel");
  return Status();
}

// Entry point of [avgpool] (cuda_ops.h OpCall).
Status run_avgpool(const OpCall& call) { return avgpool(call.in[0], call.out, call.stream); }

}  // namespace dlr::cuda
