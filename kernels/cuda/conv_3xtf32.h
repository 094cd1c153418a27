// A strict-fp32 convolution on tensor cores ("3xTF32"): each operand split into its TF32
// high part and the f32 remainder (split_tf32, cuda_ops.h), the conv computed as
// hi(x)*hi(w) + hi(x)*lo(w) + lo(x)*hi(w) by tf32 convs over three times the input
// channels, with the reduction (input channels x k x k) cut into chunks of at most
// config.chunk_products products. Two forms, the faster chosen per conv by measurement
// (runtime/cuda/algo_choice.cpp):
//  - kChunks: each chunk one cuDNN conv (precomputed implicit GEMM) accumulated into the
//    output (beta = 1); then bias, activation and the residual in one pass
//    (bias_activation / bias_activation_add);
//  - kGemm: the patches unrolled as they are split (split_tf32_patches; a 1x1, stride-1,
//    unpadded conv's input is split as it is), the reduction (k x k x C long) cut into
//    chunks of equal width, one strided batched cuBLAS GEMM (CUBLAS_COMPUTE_32F_FAST_TF32)
//    writing each chunk's partial sums, then sum_partials (the chunks added in order in
//    f32 with the same epilogue). Fills the GPU where the output has few pixels (a conv
//    per chunk is latency-bound there); the unrolled patches make it costly for large
//    images.
// (A third form, the chunks as the groups of one grouped cuDNN conv, was measured and
// dropped: beside these two it won no conv of yolov4 or yolov4-tiny on the H200;
// docs/benchmarks.md, "Strict fp32".)
//
// Why chunks: tensor cores add their products into the f32 accumulator with truncation,
// so the error of one tf32 sum grows with its length (measured on the H200: about 1e-8 x
// K relative for K products, 4.7e-5 at K = 4608; docs/benchmarks.md, "Strict fp32"). A
// chunk of <= 512 products keeps it near 5e-6; the chunks add in f32 (cuDNN's beta, or
// sum_partials).
//
// Contracts:
//  - Views: f32 NHWC, in packed or with pixel_stride >= c (a channel slice's rows, images
//    back to back: n_stride == h * w * pixel_stride), out packed; groups == 1 (else
//    create() answers unsupported). Weights OHWI f32 (as CudnnConv takes them), bias f32
//    or null (null: none).
//  - run() splits the input and the weights into its workspace (workspace_bytes(): the
//    split input, N*H*W*3C floats (kGemm: the split patches, output pixels x 3*k*k*C
//    floats), the split weights, O*k*k*3C floats, kGemm's partial sums, output pixels x
//    chunks x O floats, and the largest cuDNN workspace, each 256-byte aligned), then
//    enqueues the convs and the epilogue on `stream`: no allocation, no synchronisation
//    (capturable). kGemm sets `cublas`'s stream to `stream` and its workspace to none
//    (cuBLAS then picks kernels by shape alone).
//  - accumulate: out = act(out + conv + bias), as CudnnConv's (the first chunk adds to out);
//    never with a residual.
//  - Results are not bit-identical to CudnnConv's FMA algorithms (another summation);
//    tests/gpu/conv_3xtf32_test.cpp holds them within 1e-5 of the CPU reference.
#pragma once

#include <cudnn.h>

#include <memory>
#include <vector>

#include "kernels/cuda/conv.h"
#include "kernels/op_params.h"
#include "kernels/tensor_view.h"
#include "runtime/core/status.h"

struct cublasContext;  // cublasHandle_t (cublas_v2.h)

namespace dlr::cuda {

enum class Tf32x3Form : uint8_t { kChunks, kGemm };

struct Tf32x3Config {
  ConvParams params;              // geometry and activation
  Tf32x3Form form = Tf32x3Form::kChunks;
  int chunk_products = 512;       // products per chunk of the reduction (input channels x k x k), >= k x k
  size_t workspace_limit = size_t(256) << 20;  // bytes, the whole workspace_bytes()
  bool accumulate = false;        // out = act(out + conv + bias)
};

class Tf32x3Conv {
 public:
  static Expected<std::unique_ptr<Tf32x3Conv>> create(cudnnHandle_t handle, const Tf32x3Config& config,
                                                      const TensorView& in, const TensorView& out);
  ~Tf32x3Conv();
  Tf32x3Conv(const Tf32x3Conv&) = delete;
  Tf32x3Conv& operator=(const Tf32x3Conv&) = delete;

  size_t workspace_bytes() const;
  int chunks() const;  // pieces of the reduction
  // cublas: needed by kGemm only (may be null otherwise).
  Status run(cudnnHandle_t handle, cublasContext* cublas, const TensorView& in, const float* weights,
             const float* bias, const TensorView& out, void* workspace, size_t workspace_bytes, cudaStream_t stream,
             ConvResidual residual = {}) const;

  struct Impl;  // opaque (conv_3xtf32.cpp)

 private:
  explicit Tf32x3Conv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace dlr::cuda
