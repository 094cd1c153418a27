// Convolution through cuDNN: descriptors built once per layer at open, the
// algorithm chosen once (and cached per configuration) under a workspace limit,
// bias + activation fused (cudnnConvolutionBiasActivationForward where cuDNN
// supports the activation, else one bias_activation kernel after the conv).
// Implementation and the detailed contracts (units, immutability, streams): conv.cpp.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kernels/tensor_view.h"
#include "kernels/op_params.h"
#include "runtime/core/status.h"

namespace dlr::cuda {

// How algorithms are chosen. kHeuristic: cudnnGetConvolutionForwardAlgorithm_v7
// (first supported result that fits the workspace limit; deterministic).
// kFind: cudnnFindConvolutionForwardAlgorithm timing at open (fastest that fits).
enum class AlgoPolicy : uint8_t { kHeuristic, kFind };

// Algorithm choices keyed by the full conv configuration, shared by every
// engine in the process so that two engines with the same model and precision
// run the same algorithms (preload vs stream outputs are bit-identical).
// An entry may carry the workspace its algorithm needs (bytes; -1: unknown). A known
// size is trusted by CudnnConv::create (no cuDNN query): it is cuDNN's own answer for
// this key, from this process (the key names the device) or from the choices kept for
// this GPU, cuDNN and model (runtime/cache/conv_algo_cache.h, whose key makes that safe).
class AlgoCache {
 public:
  AlgoCache();  // defined in conv.cpp (Impl is complete there)
  static AlgoCache& process();  // the process-wide cache (mutex-protected)
  // `workspace` (optional): the stored size, -1 when unknown.
  bool lookup(const std::string& key, cudnnConvolutionFwdAlgo_t* algo, int64_t* workspace = nullptr) const;
  void store(const std::string& key, cudnnConvolutionFwdAlgo_t algo, int64_t workspace = -1);  // insert or overwrite
  // Stores `algo` unless `key` is already present; returns the algorithm now cached
  // for `key` (the first store wins, so concurrent creators agree). An entry of the same
  // algorithm with an unknown size takes `workspace`. `workspace_out` (optional): the
  // size now stored for `key` (-1 when unknown).
  cudnnConvolutionFwdAlgo_t insert(const std::string& key, cudnnConvolutionFwdAlgo_t algo, int64_t workspace = -1,
                                   int64_t* workspace_out = nullptr);
  size_t size() const;
  void clear();

 private:
  struct Impl;
  std::shared_ptr<Impl> m_impl;  // created by the constructor
};

// A shortcut folded into a conv (runtime/compile/fusion.h): after act(conv + bias),
// rounded to the output's dtype, out = act(out + *view). view null: none.
struct ConvResidual {
  const TensorView* view = nullptr;
  Activation act = Activation::kLinear;
};

struct ConvConfig {
  ConvParams params;
  Precision precision = Precision::kFP32;  // kFP32: CUDNN_FMA_MATH (no TF32); kTF32; kFP16 (f16 data, f32 accumulate)
  AlgoPolicy policy = AlgoPolicy::kHeuristic;
  size_t workspace_limit = size_t(256) << 20;  // bytes
  bool allow_fusion = true;  // false: never cudnnConvolutionBiasActivationForward (tests compare both paths)
  int force_algo = -1;       // >= 0: use this cudnnConvolutionFwdAlgo_t, bypassing policy and cache (tests, debugging)
  bool accumulate = false;   // out = act(out + conv(in) + bias): cuDNN's beta = 1 (never fused)
};

// "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED".
const char* conv_algo_name(cudnnConvolutionFwdAlgo_t algo);

// What CudnnConv::create spent and where its algorithm came from (host clock, ms).
struct ConvCreateInfo {
  double descriptors_ms = 0;  // validation, key strings, descriptor creation and setup
  double query_ms = 0;        // cudnnGetConvolutionForwardAlgorithm_v7 / cudnnFind and the pick (0 on a cache hit)
  double workspace_ms = 0;    // cudnnGetConvolutionForwardWorkspaceSize of a cached algorithm without its size
  double fusion_ms = 0;       // bias/activation descriptors (fused convs)
  bool from_cache = false;    // the algorithm came from AlgoCache and cuDNN accepted it (or its size was cached)
  bool workspace_cached = false;  // of from_cache: its workspace size came with it (no cuDNN call at all)
  bool queried = false;       // cuDNN was asked (no entry, or the cached one was rejected)
  double total_ms() const { return descriptors_ms + query_ms + workspace_ms + fusion_ms; }
};

class CudnnConv {
 public:
  // `in` and `out` describe the tensors the conv will run on (their data pointers
  // may be null at create; shapes, dtype, layout and strides must match the views
  // later passed to run()). Weights are OIHW (NCHW) or OHWI (NHWC) in in.dtype, bias f32.
  static Expected<std::unique_ptr<CudnnConv>> create(cudnnHandle_t handle, const ConvConfig& config,
                                                     const TensorView& in, const TensorView& out);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  size_t workspace_bytes() const;
  std::string algo_name() const;
  cudnnConvolutionFwdAlgo_t algo() const;
  bool fused() const;  // bias+activation done inside cuDNN

  // The AlgoCache key create() uses for this configuration on the current device:
  // "dev<ordinal> " + config_key().
  static Expected<std::string> cache_key(const ConvConfig& config, const TensorView& in, const TensorView& out);
  // Every configuration and geometry field as text, without the device (the key of
  // the algorithm choices kept across runs, runtime/cache/conv_algo_cache.h).
  static std::string config_key(const ConvConfig& config, const TensorView& in, const TensorView& out);
  const ConvCreateInfo& create_info() const;

  // out = act(conv(in, weights) + bias), or act(out + conv + bias) with config.accumulate;
  // then the residual's add where one is given (never with accumulate; never through
  // cudnnConvolutionBiasActivationForward: one bias_activation_add pass after the conv).
  // Enqueued on `stream` (set on the handle by this call).
  Status run(cudnnHandle_t handle, const TensorView& in, const void* weights, const float* bias, const TensorView& out,
             void* workspace, size_t workspace_bytes, cudaStream_t stream, ConvResidual residual = {}) const;

 private:
  struct Impl;
  explicit CudnnConv(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

}  // namespace dlr::cuda
