// A convolution with its bias, activation and (optionally) a folded shortcut as one
// cuDNN graph (cuDNN's graph API: a ConvolutionFwd followed by pointwise operations),
// run by an engine cuDNN's heuristics offer for it, typically a kernel it compiles at
// run time (runtime fusion). One pass over the output instead of a conv, a bias +
// activation pass and a shortcut pass.
//
//   out = post(act(conv(in, W) + bias) + residual)      (residual, post: a folded shortcut)
//
// Contracts:
//  - Views: NHWC, packed images (pixel_stride == c), in, out and the residual of one
//    data type: f16 (Precision::kFP16: f16 data, f32 accumulation and epilogue math) or
//    f32 (Precision::kTF32: cuDNN's engines may round the conv's inputs to TF32, as its
//    default math does; not for strict fp32). The residual has out's shape. Weights OHWI
//    in the views' type, bias f32 (never null: the graph adds it).
//  - Activations: linear, relu, leaky (slope 0.1), logistic, swish and mish (softplus,
//    tanh, product: cuDNN's pointwise formulas, not the CPU reference's; results match
//    the reference within the fp16 / tf32 tolerances of tests/gpu). Others: create() answers
//    unsupported.
//  - The epilogue runs in f32 without rounding between the activation and the residual
//    add, so results are not bit-identical to CudnnConv + bias_activation_add.
//  - create() builds the graph, asks cuDNN's heuristics and finalises the first
//    config.max_plans engine configurations that build within the workspace limit
//    (runtime compilation may take tens to hundreds of ms each), the first selected;
//    unsupported() when none does, so the caller falls back.
//  - run() sets `stream` on the handle and enqueues; no device allocation, no
//    synchronisation, so it may be captured into a CUDA graph. The host descriptor of each
//    set of pointers (a variant pack) is made on its first run and kept, so repeated runs
//    on the same buffers (every inference of a plan) create nothing. Several threads may
//    run one FusedConv, each with its own handle (runs are serialised on a mutex).
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>

#include "kernels/op_params.h"
#include "kernels/tensor_view.h"
#include "runtime/core/status.h"

namespace dlr::cuda {

struct FusedConvConfig {
  ConvParams params;         // the conv's geometry and activation
  bool residual = false;     // a folded shortcut: add a view of out's shape, then `post`
  Activation post = Activation::kLinear;
  size_t workspace_limit = size_t(256) << 20;  // bytes
  // create(): how many of cuDNN's engine configurations (in its heuristics' order) are
  // finalised, for the caller to time and select() one; each may compile a kernel.
  int max_plans = 1;
};

// What create() spent and chose (host clock, ms).
struct FusedConvInfo {
  double build_ms = 0;       // graph, heuristics and the finalised plan (compilation included), or the load
  bool loaded = false;       // made by load() from a serialised plan
  int candidates = 0;        // engine configurations the heuristics offered
  int plans = 0;             // of which finalised (at most FusedConvConfig::max_plans; load: 1)
  int64_t engine = -1;       // cuDNN's global engine index of the selected plan
  bool runtime_compiled = false;
};

class FusedConv {
 public:
  static Expected<std::unique_ptr<FusedConv>> create(cudnnHandle_t handle, const FusedConvConfig& config,
                                                     const TensorView& in, const TensorView& out);
  // The plan cuDNN serialised (serialize()) for the same configuration and views, on the
  // same GPU and cuDNN: no graph, no heuristics, no compilation when cuDNN takes it.
  // Errors: cuDNN refused the text (the caller builds instead).
  static Expected<std::unique_ptr<FusedConv>> load(cudnnHandle_t handle, const FusedConvConfig& config,
                                                   const TensorView& in, const TensorView& out,
                                                   const std::string& plan_json);
  // Every field the plan depends on, as text (without the device): equal keys may share a plan.
  static std::string key(const FusedConvConfig& config, const TensorView& in, const TensorView& out);
  ~FusedConv();
  FusedConv(const FusedConv&) = delete;
  FusedConv& operator=(const FusedConv&) = delete;

  size_t workspace_bytes() const;      // of the selected plan
  size_t max_workspace_bytes() const;  // of every finalised plan (what lets select() pick any)
  int plan_count() const;
  // The plan run(), serialize() and workspace_bytes() use from now on (0: cuDNN's first).
  // Not while another thread runs it.
  Status select(int plan);
  const FusedConvInfo& info() const;
  std::string describe() const;  // e.g. "cudnn graph, engine 7 (runtime compiled), plan 2 of 3"
  // cuDNN's JSON text of the selected plan (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION).
  Expected<std::string> serialize() const;

  // residual: out's shape (required when config.residual, else ignored).
  Status run(cudnnHandle_t handle, const TensorView& in, const void* weights, const float* bias,
             const TensorView* residual, const TensorView& out, void* workspace, size_t workspace_bytes,
             cudaStream_t stream) const;

 private:
  struct Impl;
  explicit FusedConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace dlr::cuda
