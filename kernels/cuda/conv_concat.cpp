// ConcatConv (conv_concat.h): a 1x1 conv over the parts of a concatenation, one
// cuBLAS GEMM per part, then bias + activation.
//
// Row-major view of one part (NHWC, images back to back): X_i is M x C_i with leading
// dimension pixel_stride (M = n * h * w pixels); the weights W are K x C (OHWI, 1x1);
// out Y is M x K with leading dimension out.pixel_stride. Y = sum_i X_i . W_i^T. cuBLAS
// is column-major, where Y is Y^T (K x M): Y^T += op_T(W_i) . X_i^T, i.e.
// cublasGemmEx(OP_T, OP_N, m = K, n = M, k = C_i, A = W + c_i (lda = C), B = X_i
// (ldb = pixel_stride), C = Y (ldc = out.pixel_stride)).
#include "kernels/cuda/conv_concat.h"

#include <cublas_v2.h>

#include <climits>
#include <string>
#include <vector>

#include "kernels/cuda/cublas_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

// One GEMM of n * h * w rows needs every image right after the previous one.
bool images_back_to_back(const TensorView& v) {
  return v.layout == Layout::kNHWC && v.pixel_stride >= v.c && v.n_stride == int64_t(v.h) * v.w * v.pixel_stride;
}

}  // namespace

struct ConcatConv::Impl {
  std::vector<int> c_offset;  // per part: its first column of W
  int k = 0;                  // output channels
  int c = 0;                  // input channels in all
  int64_t m = 0;              // n * h * w
  cudaDataType_t dtype = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F_PEDANTIC;
  Activation act = Activation::kLinear;
};

ConcatConv::ConcatConv(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
ConcatConv::~ConcatConv() = default;

Expected<std::unique_ptr<ConcatConv>> ConcatConv::create(const ConvParams& p, Precision precision,
                                                         const TensorView* parts, int n_parts, const TensorView& out) {
  if (p.size != 1 || p.stride_x != 1 || p.stride_y != 1 || p.padding != 0 || p.groups != 1)
    return invalid_argument("conv over a concatenation: needs a 1x1 kernel, stride 1, no padding and groups 1 (got "
                            "size " + std::to_string(p.size) + ", groups " + std::to_string(p.groups) + ")");
  if (n_parts < 1 || parts == nullptr) return invalid_argument("conv over a concatenation: no parts");
  if (out.dtype != DType::kF16 && out.dtype != DType::kF32)
    return invalid_argument("conv over a concatenation: activations must be f16 or f32");
  if (!images_back_to_back(out)) return invalid_argument("conv over a concatenation: the output must be NHWC, images packed");
  if (out.c != p.filters) return invalid_argument("conv over a concatenation: output channels differ from filters");
  auto impl = std::make_unique<Impl>();
  for (int i = 0; i < n_parts; ++i) {
    const TensorView& v = parts[i];
    if (!images_back_to_back(v) || v.dtype != out.dtype || v.n != out.n || v.h != out.h || v.w != out.w)
      return invalid_argument("conv over a concatenation: part " + std::to_string(i) +
                              " must be NHWC with images packed, of the output's dtype, batch and size");
    impl->c_offset.push_back(impl->c);
    impl->c += v.c;
  }
  impl->k = out.c;
  impl->m = int64_t(out.n) * out.h * out.w;
  if (impl->m > INT_MAX) return invalid_argument("conv over a concatenation: more than 2^31 pixels in a batch");
  impl->dtype = out.dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_32F;
  impl->compute = precision == Precision::kFP32   ? CUBLAS_COMPUTE_32F_PEDANTIC
                  : precision == Precision::kTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                  : CUBLAS_COMPUTE_32F;
  impl->act = p.activation;
  return std::unique_ptr<ConcatConv>(new ConcatConv(std::move(impl)));
}

Status ConcatConv::run(cublasContext* handle, const TensorView* parts, int n_parts, const void* weights,
                       const float* bias, const TensorView& out, cudaStream_t stream) const {
  const Impl& m = *m_impl;
  if (n_parts != int(m.c_offset.size())) return invalid_argument("conv over a concatenation: part count changed");
  DLR_ASSIGN_OR_RETURN(const CublasApi* api, cublas());
  DLR_CUBLAS_CHECK(api->set_stream(handle, stream));
  DLR_CUBLAS_CHECK(api->set_workspace(handle, nullptr, 0));  // shapes alone choose the kernels
  const float one = 1.0f, zero = 0.0f;
  const size_t elem = out.dtype == DType::kF16 ? 2 : 4;
  for (int i = 0; i < n_parts; ++i) {
    const TensorView& x = parts[i];
    const void* w = static_cast<const char*>(weights) + size_t(m.c_offset[size_t(i)]) * elem;
    DLR_CUBLAS_CHECK(api->gemm_ex(handle, CUBLAS_OP_T, CUBLAS_OP_N, m.k, int(m.m), x.c, &one, w, m.dtype, m.c, x.data,
                                  m.dtype, x.pixel_stride, i == 0 ? &zero : &one, out.data, m.dtype, out.pixel_stride,
                                  m.compute, CUBLAS_GEMM_DEFAULT));
  }
  return bias_activation(out, bias, m.act, stream);
}

}  // namespace dlr::cuda
