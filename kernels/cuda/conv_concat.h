// A 1x1, stride-1, ungrouped convolution over the channel concatenation of several
// NHWC tensors, without the concatenation (PlannerOptions::conv_over_concat): the conv
// reads its parts where their producers wrote them, so the route needs neither a copy
// nor a buffer of its own.
//
//   out = act(sum_i part_i . W_i^T + bias)
//
// with W the layer's OHWI weights (K x C row-major for a 1x1 kernel, C = the parts'
// channels in order) and W_i its columns of part i. One cublasGemmEx per part writes
// into `out` (the first with beta 0, the others accumulating), then one bias_activation
// kernel. Accumulation is fp32 inside each GEMM; between parts the partial sum is stored
// in out's dtype (f16 for fp16 plans: one more rounding than a single conv, within the
// CPU-reference tolerance of tests/gpu). cuBLAS gets no workspace, so its choice of
// kernels depends on the shapes alone (the same model gives the same bits in a session
// of its own and on a Runtime, whatever workspace the others need).
//
// Views: NHWC, f16 or f32 (all the same dtype), equal n, h, w; each part's and out's
// images back to back (n_stride == h * w * pixel_stride), so the batch is one GEMM of
// n * h * w rows; a part may be a channel slice (its pixel_stride is the GEMM's leading
// dimension). Enqueued on `stream`; nothing allocates or synchronises.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "kernels/op_params.h"
#include "kernels/tensor_view.h"
#include "runtime/core/status.h"
#include "runtime/core/types.h"

struct cublasContext;  // cublasHandle_t (cublas_v2.h)

namespace dlr::cuda {

class ConcatConv {
 public:
  // Checks the parameters and views (shapes only; data pointers may be null).
  // precision: kFP32 computes in strict fp32, kTF32 allows TF32 tensor cores, kFP16 f16 data.
  static Expected<std::unique_ptr<ConcatConv>> create(const ConvParams& params, Precision precision,
                                                      const TensorView* parts, int n_parts, const TensorView& out);
  ~ConcatConv();
  ConcatConv(const ConcatConv&) = delete;
  ConcatConv& operator=(const ConcatConv&) = delete;

  // `weights`: the layer's K x C weights in the parts' dtype; `bias`: K floats (f32).
  // Sets `stream` and a null workspace on the handle.
  Status run(cublasContext* handle, const TensorView* parts, int n_parts, const void* weights, const float* bias,
             const TensorView& out, cudaStream_t stream) const;

 private:
  struct Impl;
  explicit ConcatConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace dlr::cuda
