// scale_channels: out = act(scale * from) (cuda_ops.h, cpu::scale_channels, Darknet
// scale_channels_layer). scale = scales[n][c][0][0], or with scale_wh scales[n][0][y][x].
// One thread per output element in out's memory order; any layout/dtype for every view.
#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

__global__ void scale_channels_kernel(TensorView scales, TensorView from, bool scale_wh, Activation act,
                                      TensorView out, uint32_t per_image) {
  const int n = blockIdx.y;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const Chw p = decompose_memory_order(out, r);
    const float s = scale_wh ? load_at(scales, n, 0, p.y, p.x) : load_at(scales, n, p.c, 0, 0);
    store_at(out, n, p.c, p.y, p.x, activate(act, __fmul_rn(s, load_at(from, n, p.c, p.y, p.x))));
  }
}

}  // namespace

Status scale_channels(const TensorView& scales, const TensorView& from, bool scale_wh, Activation act,
                      const TensorView& out, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(scales, "scale_channels", "scales"));
  DLR_RETURN_IF_ERROR(check_view(from, "scale_channels", "from"));
  DLR_RETURN_IF_ERROR(check_view(out, "scale_channels", "out"));
  if (from.n != out.n || scales.n != out.n || from.c != out.c || from.h != out.h || from.w != out.w)
    return invalid_argument("scale_channels: from " + view_dims(from) + ", scales " + view_dims(scales) +
                            " and out " + view_dims(out) + " do not match");
  const bool ok = scale_wh ? (scales.c == 1 && scales.h == out.h && scales.w == out.w)
                           : (scales.c == out.c && scales.h == 1 && scales.w == 1);
  if (!ok)
    return invalid_argument("scale_channels: scales " + view_dims(scales) + " for out " + view_dims(out) +
                            (scale_wh ? " (expected n x 1 x h x w)" : " (expected n x c x 1 x 1)"));
  const int64_t per_image = int64_t(out.c) * out.h * out.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, out.n, "scale_channels", &grid, &empty));
  if (empty) return Status();
  scale_channels_kernel<<<grid, kBlockThreads, 0, stream>>>(scales, from, scale_wh, act, out, uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("scale_channels_kernel");
  return Status();
}

// Entry point of [scale_channels] (cuda_ops.h OpCall): in[0] holds the scales, in[1] is `from`.
Status run_scale_channels(const OpCall& call) {
  const ScaleChannelsParams& p = call.p<ScaleChannelsParams>();
  return scale_channels(call.in[0], call.in[1], p.scale_wh, p.activation, call.out, call.stream);
}

}  // namespace dlr::cuda
