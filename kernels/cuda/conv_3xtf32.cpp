// Tf32x3Conv (conv_3xtf32.h): the split operands in the workspace; kChunks: one CudnnConv
// (tf32, precomputed implicit GEMM, linear, no bias) per chunk of the reduction, the
// epilogue after the last; kGemm: the patches split as they are unrolled
// (split_tf32_patches), one strided batched cuBLAS GEMM over the chunks into partial
// sums, then sum_partials.
//
// kGemm in cuBLAS's column-major terms: row-major X3 (M x 3K, the split patches), W3
// (O x 3K, the split weights) and the partials P (M x G x O) are column-major 3K x M,
// 3K x O and O x M (leading dimension G x O); chunk g is P_g = op_T(W3_g) . X3_g with
// W3_g = W3 + 3 g ch, X3_g = X3 + 3 g ch (lda = ldb = 3K) and P_g = P + g O: one
// cublasGemmStridedBatchedEx(OP_T, OP_N, m = O, n = M, k = 3 ch, batch G).
#include "kernels/cuda/conv_3xtf32.h"

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "runtime/core/types.h"

namespace dlr::cuda {
namespace {

constexpr int64_t kAlign = 256;  // bytes, each workspace region

// The largest divisor of n that is <= products (>= 1).
int equal_chunk(int n, int products) {
  for (int d = std::min(n, products); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

size_t region(int64_t floats) { return size_t(align_up(floats * int64_t(sizeof(float)), kAlign)); }

}  // namespace

struct Tf32x3Conv::Impl {
  Tf32x3Config config;
  TensorView in, out;                  // geometry of create()
  int chunk = 0;                       // reduction columns per chunk (kChunks: the last may have fewer)
  int parts = 0;                       // chunks of the reduction
  bool unroll = false;                 // kGemm: the split reads the patches (not a 1x1, stride-1, unpadded conv)
  std::vector<std::unique_ptr<CudnnConv>> convs;  // kChunks: one per chunk; kGemm: none
  size_t x_bytes = 0, w_bytes = 0, part_bytes = 0, conv_bytes = 0;

  int kk() const { return config.params.size * config.params.size; }
  int64_t pixels() const { return int64_t(in.n) * in.h * in.w; }
  int64_t out_pixels() const { return int64_t(out.n) * out.h * out.w; }
  bool gemm() const { return config.form == Tf32x3Form::kGemm; }
  // The split operands as rows of reduction columns: kGemm cuts the whole reduction
  // (k x k x C per row), kChunks the channels (C per row).
  int64_t x_rows() const { return gemm() ? out_pixels() : pixels(); }
  int64_t w_rows() const { return gemm() ? int64_t(out.c) : int64_t(out.c) * kk(); }
  int cols() const { return gemm() ? kk() * in.c : in.c; }

  Status run_chunks(cudnnHandle_t handle, const float* xs, const float* ws, const float* bias, const TensorView& out_v,
                    void* conv_ws, cudaStream_t stream, ConvResidual residual) const;
  Status run_gemm(cublasContext* cublas, const float* xs, const float* ws, float* partials, cudaStream_t stream) const;
};

namespace {

ConvConfig piece_config(const Tf32x3Config& config) {
  ConvConfig cc;
  cc.params = config.params;
  cc.params.activation = Activation::kLinear;
  cc.precision = Precision::kTF32;
  cc.workspace_limit = config.workspace_limit;
  cc.allow_fusion = false;
  cc.force_algo = int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);  // never a transform of the operands
  return cc;
}

Status make_chunk_convs(cudnnHandle_t handle, Tf32x3Conv::Impl* impl) {
  const TensorView& in = impl->in;
  impl->chunk = std::min(in.c, impl->config.chunk_products / impl->kk());
  for (int c0 = 0; c0 < in.c; c0 += impl->chunk) {
    const int n = std::min(impl->chunk, in.c - c0);
    ConvConfig cc = piece_config(impl->config);
    cc.accumulate = impl->config.accumulate || c0 > 0;
    const TensorView x = TensorView::packed(nullptr, DType::kF32, Layout::kNHWC, in.n, Shape3{3 * n, in.h, in.w});
    DLR_ASSIGN_OR_RETURN(std::unique_ptr<CudnnConv> conv, CudnnConv::create(handle, cc, x, impl->out));
    impl->conv_bytes = std::max(impl->conv_bytes, conv->workspace_bytes());
    impl->convs.push_back(std::move(conv));
  }
  impl->parts = int(impl->convs.size());
  return Status();
}

// kGemm cuts the reduction into chunks of one width (a divisor of its length).
Status plan_gemm(Tf32x3Conv::Impl* impl) {
  const ConvParams& p = impl->config.params;
  if (p.size > 1 && p.dilation != 1) return unsupported("3xTF32 conv, GEMM form: dilated kernels are not unrolled");
  const int n = impl->cols(), products = impl->config.chunk_products;
  impl->chunk = equal_chunk(n, products);
  impl->parts = n / impl->chunk;
  if (impl->parts > 1 && 4 * impl->chunk < products)
    return unsupported("3xTF32 conv, GEMM form: no divisor of " + std::to_string(n) +
                       " products fills a quarter of a chunk of " + std::to_string(products));
  impl->part_bytes = region(impl->out_pixels() * impl->parts * impl->out.c);
  impl->unroll = !(p.size == 1 && p.stride_x == 1 && p.stride_y == 1 && p.padding == 0);
  return Status();
}

}  // namespace

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
  switch (config.form) {
    case Tf32x3Form::kChunks: DLR_RETURN_IF_ERROR(make_chunk_convs(handle, impl.get())); break;
    case Tf32x3Form::kGemm: DLR_RETURN_IF_ERROR(plan_gemm(impl.get())); break;
  }
  impl->x_bytes = region(impl->x_rows() * 3 * impl->cols());
  impl->w_bytes = region(impl->w_rows() * 3 * impl->cols());
  const size_t total = impl->x_bytes + impl->w_bytes + impl->part_bytes + impl->conv_bytes;
  if (total > config.workspace_limit)
    return out_of_memory("3xTF32 conv: needs " + std::to_string(total) + " bytes of workspace, over the limit of " +
                         std::to_string(config.workspace_limit));
  return std::unique_ptr<Tf32x3Conv>(new Tf32x3Conv(std::move(impl)));
}

Tf32x3Conv::Tf32x3Conv(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Tf32x3Conv::~Tf32x3Conv() = default;

size_t Tf32x3Conv::workspace_bytes() const {
  const Impl& m = *m_impl;
  return m.x_bytes + m.w_bytes + m.part_bytes + m.conv_bytes;
}
int Tf32x3Conv::chunks() const { return m_impl->parts; }

Status Tf32x3Conv::Impl::run_chunks(cudnnHandle_t handle, const float* xs, const float* ws, const float* bias,
                                    const TensorView& out_v, void* conv_ws, cudaStream_t stream,
                                    ConvResidual residual) const {
  for (size_t j = 0; j < convs.size(); ++j) {
    const int c0 = int(j) * chunk, n = std::min(chunk, in.c - c0);
    const TensorView x = TensorView::packed(const_cast<float*>(xs) + pixels() * 3 * c0, DType::kF32, Layout::kNHWC,
                                            in.n, Shape3{3 * n, in.h, in.w});
    DLR_RETURN_IF_ERROR(convs[j]->run(handle, x, ws + w_rows() * 3 * c0, nullptr, out_v, conv_ws, conv_bytes, stream));
  }
  const Activation act = config.params.activation;
  if (residual.view != nullptr) return bias_activation_add(out_v, bias, act, *residual.view, residual.act, stream);
  if (bias == nullptr && act == Activation::kLinear) return Status();
  return bias_activation(out_v, bias, act, stream);
}

Status Tf32x3Conv::Impl::run_gemm(cublasContext* cublas, const float* xs, const float* ws, float* partials,
                                  cudaStream_t stream) const {
  const float one = 1.f, zero = 0.f;
  const int k3 = 3 * cols(), step = 3 * chunk;
  DLR_ASSIGN_OR_RETURN(const CublasApi* api, cuda::cublas());
  DLR_CUBLAS_CHECK(api->set_stream(cublas, stream));
  DLR_CUBLAS_CHECK(api->set_workspace(cublas, nullptr, 0));  // shapes alone choose the kernels
  DLR_CUBLAS_CHECK(api->gemm_strided_batched_ex(cublas, CUBLAS_OP_T, CUBLAS_OP_N, out.c, int(out_pixels()), step, &one,
                                              ws, CUDA_R_32F, k3, step, xs, CUDA_R_32F, k3, step, &zero, partials,
                                              CUDA_R_32F, parts * out.c, out.c, parts, CUBLAS_COMPUTE_32F_FAST_TF32,
                                              CUBLAS_GEMM_DEFAULT));
  return Status();
}

Status Tf32x3Conv::run(cudnnHandle_t handle, cublasContext* cublas, const TensorView& in, const float* weights,
                       const float* bias, const TensorView& out, void* workspace, size_t workspace_bytes,
                       cudaStream_t stream, ConvResidual residual) const {
  const Impl& m = *m_impl;
  if (handle == nullptr || in.data == nullptr || out.data == nullptr || weights == nullptr ||
      (m.gemm() && cublas == nullptr))
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
  float* parts = reinterpret_cast<float*>(base + m.x_bytes + m.w_bytes);
  void* conv_ws = base + m.x_bytes + m.w_bytes + m.part_bytes;
  // kChunks: one tensor per chunk (each chunk conv's input); kGemm: chunks side by side in each row.
  const Tf32SplitLayout split = m.gemm() ? Tf32SplitLayout::kChunksInRow : Tf32SplitLayout::kChunkBlocks;
  if (m.unroll) {
    DLR_RETURN_IF_ERROR(split_tf32_patches(in, m.config.params, out.h, out.w, m.chunk, xs, stream));
  } else {
    DLR_RETURN_IF_ERROR(split_tf32(static_cast<const float*>(in.data), m.x_rows(), m.cols(), in.pixel_stride, m.chunk,
                                   Tf32SplitOrder::kHighHighLow, split, xs, stream));
  }
  DLR_RETURN_IF_ERROR(split_tf32(weights, m.w_rows(), m.cols(), m.cols(), m.chunk, Tf32SplitOrder::kHighLowHigh, split,
                                 ws, stream));
  if (!m.gemm()) return m.run_chunks(handle, xs, ws, bias, out, conv_ws, stream, residual);
  DLR_RETURN_IF_ERROR(m.run_gemm(cublas, xs, ws, parts, stream));
  return sum_partials(parts, m.parts, bias, m.config.params.activation, m.config.accumulate, out, residual.view,
                      residual.act, stream);
}

}  // namespace dlr::cuda
