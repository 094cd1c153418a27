// sum_partials (cuda_ops.h): the epilogue of a conv computed as partial sums (the grouped
// form of the 3xTF32 conv, conv_3xtf32.h). One thread per output element; consecutive
// threads take consecutive channels, so every partial's loads are coalesced.
#include <string>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

struct PartialSum {
  const float* partials;
  int parts;
  const float* bias;
  Activation act;
  bool accumulate;
  TensorView res;  // res.data null: no residual
  Activation res_act;
};

__global__ void sum_partials_kernel(PartialSum s, float* out, int64_t pixels, int c, int h, int w) {
  const int64_t count = pixels * c;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = i / c;
    const int o = int(i - p * c);
    const float* part = s.partials + p * s.parts * c + o;
    float v = s.accumulate ? out[i] : 0.f;
    for (int j = 0; j < s.parts; ++j) v = __fadd_rn(v, part[int64_t(j) * c]);
    v = activate(s.act, s.bias != nullptr ? v + s.bias[o] : v);
    if (s.res.data != nullptr) {
      const int64_t plane = int64_t(h) * w;
      const int n = int(p / plane);
      const int64_t yx = p - n * plane;
      const int y = int(yx / w), x = int(yx - int64_t(y) * w);
      v = activate(s.res_act, __fadd_rn(v, load_elem(s.res, view_offset(s.res, n, o, y, x))));
    }
    out[i] = v;
  }
}

}  // namespace

Status sum_partials(const float* partials, int parts, const float* bias, Activation act, bool accumulate,
                    const TensorView& out, const TensorView* residual, Activation residual_act, cudaStream_t stream) {
  if (partials == nullptr || out.data == nullptr || parts <= 0)
    return invalid_argument("sum_partials: null partials or output, or " + std::to_string(parts) + " parts");
  if (out.dtype != DType::kF32 || out.layout != Layout::kNHWC || out.pixel_stride != out.c ||
      out.n_stride != int64_t(out.h) * out.w * out.c)
    return unsupported("sum_partials: the output must be packed f32 NHWC");
  if (residual != nullptr && (residual->dtype != DType::kF32 || residual->n != out.n || residual->c != out.c ||
                              residual->h != out.h || residual->w != out.w))
    return invalid_argument("sum_partials: the residual must be f32 with the output's shape");
  PartialSum s{partials, parts, bias, act, accumulate, residual != nullptr ? *residual : TensorView{}, residual_act};
  const int64_t pixels = int64_t(out.n) * out.h * out.w, count = pixels * out.c;
  if (count == 0) return Status();
  sum_partials_kernel<<<grid_stride_blocks(count), kBlockThreads, 0, stream>>>(s, static_cast<float*>(out.data), pixels, out.c, out.h,
                                                            out.w);
  DLR_CUDA_LAUNCH_CHECK("sum_partials_kernel");
  return Status();
}

}  // namespace dlr::cuda
