// Tf32x3Conv (conv_3xtf32.h): the split operands in the workspace, one CudnnConv (tf32,
// precomputed implicit GEMM, linear, no bias) per chunk of the reduction, the epilogue
// after the last.
#include "kernels/cuda/conv_3xtf32.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_ops.h"
#include "runtime/core/types.h"

namespace dlr::cuda {
namespace {

constexpr int64_t kAlign = 256;  // bytes, each workspace region

}  // namespace

struct Tf32x3Conv::Impl {
  Tf32x3Config config;
  TensorView in, out;                  // geometry of create()
  int chunk = 0;                       // input channels per chunk (the last may have fewer)
  std::vector<std::unique_ptr<CudnnConv>> convs;  // one per chunk
  size_t x_bytes = 0, w_bytes = 0, conv_bytes = 0;
  int64_t pixels() const { return int64_t(in.n) * in.h * in.w; }
  int64_t weight_rows() const { return int64_t(config.params.filters) * config.params.size * config.params.size; }
};

Expected<std::unique_ptr<Tf32x3Conv>> Tf32x3Conv::create(cudnnHandle_t handle, const Tf32x3Config& config,
                                                         const TensorView& in, const TensorView& out) {
  const ConvParams& p = config.params;
  const int kk = p.size * p.size;
  if (handle == nullptr) return invalid_argument("3xTF32 conv: null cuDNN handle");
  if (in.dtype != DType::kF32 || out.dtype != DType::kF32 || in.layout != Layout::kNHWC ||
      out.layout != Layout::kNHWC || out.pixel_stride != out.c || in.pixel_stride < in.c)
    return unsupported("3xTF32 conv: f32 NHWC views only, the output packed");
  if (p.groups != 1) return unsupported("3xTF32 conv: grouped convolutions are not split");
  if (in.n_stride != int64_t(in.h) * in.w * in.pixel_stride)
    return unsupported("3xTF32 conv: images of the input must follow each other row by row");
  if (config.chunk_products < kk)
    return invalid_argument("3xTF32 conv: a chunk of " + std::to_string(config.chunk_products) +
                            " products holds no input channel of a " + std::to_string(p.size) + "x" +
                            std::to_string(p.size) + " kernel");
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->in = in;
  impl->out = out;
  impl->chunk = std::min(in.c, config.chunk_products / kk);
  for (int c0 = 0; c0 < in.c; c0 += impl->chunk) {
    const int n = std::min(impl->chunk, in.c - c0);
    ConvConfig cc;
    cc.params = p;
    cc.params.activation = Activation::kLinear;
    cc.precision = Precision::kTF32;
    cc.workspace_limit = config.workspace_limit;
    cc.allow_fusion = false;
    cc.force_algo = int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);  // never a transform of the operands
    cc.accumulate = config.accumulate || c0 > 0;
    const TensorView x = TensorView::packed(nullptr, DType::kF32, Layout::kNHWC, in.n, Shape3{3 * n, in.h, in.w});
    DLR_ASSIGN_OR_RETURN(std::unique_ptr<CudnnConv> conv, CudnnConv::create(handle, cc, x, out));
    impl->conv_bytes = std::max(impl->conv_bytes, conv->workspace_bytes());
    impl->convs.push_back(std::move(conv));
  }
  impl->x_bytes = size_t(align_up(impl->pixels() * 3 * in.c * int64_t(sizeof(float)), kAlign));
  impl->w_bytes = size_t(align_up(impl->weight_rows() * 3 * in.c * int64_t(sizeof(float)), kAlign));
  const size_t total = impl->x_bytes + impl->w_bytes + impl->conv_bytes;
  if (total > config.workspace_limit)
    return out_of_memory("3xTF32 conv: needs " + std::to_string(total) + " bytes of workspace, over the limit of " +
                         std::to_string(config.workspace_limit));
  return std::unique_ptr<Tf32x3Conv>(new Tf32x3Conv(std::move(impl)));
}

Tf32x3Conv::Tf32x3Conv(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Tf32x3Conv::~Tf32x3Conv() = default;

size_t Tf32x3Conv::workspace_bytes() const { return m_impl->x_bytes + m_impl->w_bytes + m_impl->conv_bytes; }
int Tf32x3Conv::chunks() const { return int(m_impl->convs.size()); }

Status Tf32x3Conv::run(cudnnHandle_t handle, const TensorView& in, const float* weights, const float* bias,
                       const TensorView& out, void* workspace, size_t workspace_bytes, cudaStream_t stream,
                       ConvResidual residual) const {
  const Impl& m = *m_impl;
  if (handle == nullptr || in.data == nullptr || out.data == nullptr || weights == nullptr)
    return invalid_argument("3xTF32 conv: run with a null handle, tensor or weights");
  if (in.n != m.in.n || in.c != m.in.c || in.h != m.in.h || in.w != m.in.w || in.pixel_stride != m.in.pixel_stride ||
      in.n_stride != m.in.n_stride || out.n != m.out.n || out.c != m.out.c || out.h != m.out.h || out.w != m.out.w)
    return invalid_argument("3xTF32 conv: run with views that differ from create");
  if (workspace == nullptr || workspace_bytes < this->workspace_bytes())
    return invalid_argument("3xTF32 conv: workspace of " + std::to_string(workspace_bytes) + " bytes given, " +
                            std::to_string(this->workspace_bytes()) + " needed");
  if (residual.view != nullptr && m.config.accumulate)
    return invalid_argument("3xTF32 conv: a residual add on an accumulating conv");
  char* base = static_cast<char*>(workspace);
  float* xs = reinterpret_cast<float*>(base);
  float* ws = reinterpret_cast<float*>(base + m.x_bytes);
  void* conv_ws = base + m.x_bytes + m.w_bytes;
  DLR_RETURN_IF_ERROR(split_tf32(static_cast<const float*>(in.data), m.pixels(), in.c, in.pixel_stride, m.chunk,
                                 Tf32SplitOrder::kHighHighLow, xs, stream));
  DLR_RETURN_IF_ERROR(
      split_tf32(weights, m.weight_rows(), in.c, in.c, m.chunk, Tf32SplitOrder::kHighLowHigh, ws, stream));
  for (size_t j = 0; j < m.convs.size(); ++j) {
    const int c0 = int(j) * m.chunk, n = std::min(m.chunk, in.c - c0);
    const TensorView x = TensorView::packed(xs + m.pixels() * 3 * c0, DType::kF32, Layout::kNHWC, in.n,
                                            Shape3{3 * n, in.h, in.w});
    DLR_RETURN_IF_ERROR(m.convs[j]->run(handle, x, ws + m.weight_rows() * 3 * c0, nullptr, out, conv_ws, m.conv_bytes,
                                        stream));
  }
  const Activation act = m.config.params.activation;
  if (residual.view != nullptr) return bias_activation_add(out, bias, act, *residual.view, residual.act, stream);
  if (bias == nullptr && act == Activation::kLinear) return Status();
  return bias_activation(out, bias, act, stream);
}

}  // namespace dlr::cuda
