// CudnnConv: Darknet convolution through cuDNN's legacy (v7-style) API.
//
// Contracts:
//  - Geometry (same as cpu::conv2d): pad = padding * d per side, dilation d
//    (d = 1 when size == 1), strides stride_y / stride_x, cross-correlation,
//    groups. create() checks that cuDNN's output size equals the `out` view.
//  - Views are described with explicit strides (cudnnSetTensor4dDescriptorEx),
//    in elements: NCHW (n_stride, h*w, w, 1), NHWC (n_stride, 1, w*pixel_stride,
//    pixel_stride), so channel slices work wherever cuDNN accepts the strides
//    (create() or run() returns cuDNN's status where it does not).
//  - Weights: OIHW (NCHW views) or OHWI (NHWC views), [F][C/groups][k][k] in
//    in.dtype; bias: F floats (f32) or null (no bias).
//  - Precision: kFP32 = f32 data, CUDNN_FMA_MATH (no TF32); kTF32 = f32 data,
//    CUDNN_TENSOR_OP_MATH; kFP16 = f16 data, CUDNN_TENSOR_OP_MATH. The compute
//    (accumulation) type is always float.
//  - Algorithm: AlgoCache (process-wide, keyed by every configuration field and
//    the device; the engine may fill it from the choices kept across runs) else the
//    policy; the workspace it needs (bytes) never exceeds config.workspace_limit. A
//    cached entry with its workspace size (within the limit) is used as it is, with no
//    cuDNN call; one without is confirmed by cuDNN's workspace query. A cached
//    algorithm cuDNN rejects there (the query fails or exceeds the limit) is logged and
//    chosen again by the policy, and the new choice replaces it in the cache. Every
//    choice made or confirmed here is stored with its size.
//  - Fusion: relu (any algo) or linear (IMPLICIT_PRECOMP_GEMM only) with f32
//    data run as one cudnnConvolutionBiasActivationForward (alpha2 = 0, z = y);
//    everything else is cudnnConvolutionForward then cuda::bias_activation. If
//    cuDNN answers NOT_SUPPORTED to the fused call at run time, this conv falls
//    back to the unfused pair for good (logged once; fused() then says false).
//    An accumulating conv (config.accumulate: beta = 1) is never fused.
//  - Every descriptor is built in create() and never modified afterwards, so a
//    CudnnConv may be run from several threads, each with its own cuDNN handle.
//  - run() sets `stream` on the handle and enqueues; it never allocates,
//    synchronises or reads back, so it can be captured into a CUDA graph (after
//    one warm-up run outside capture). A handle must not be used by two threads
//    at once (cuDNN's rule; run() changes its stream).
//  - workspace: device memory of at least workspace_bytes() bytes (may be null
//    when that is 0); 256-byte aligned starts are recommended (cudaMalloc gives them).
//  - create() may synchronise: kFind times every algorithm on the handle's current
//    stream with buffers cuDNN allocates itself (not while that stream is captured).
#include "kernels/cuda/conv.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <mutex>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "runtime/core/log.h"

namespace dlr::cuda {

// ---- AlgoCache ----

struct AlgoCache::Impl {
  struct Entry {
    cudnnConvolutionFwdAlgo_t algo{};
    int64_t workspace = -1;  // bytes; -1: unknown
  };
  mutable std::mutex mutex;
  std::map<std::string, Entry> algos;
};

AlgoCache::AlgoCache() : m_impl(std::make_shared<Impl>()) {}

AlgoCache& AlgoCache::process() {
  static AlgoCache cache;
  return cache;
}

bool AlgoCache::lookup(const std::string& key, cudnnConvolutionFwdAlgo_t* algo, int64_t* workspace) const {
  std::lock_guard<std::mutex> lock(m_impl->mutex);
  const auto it = m_impl->algos.find(key);
  if (it == m_impl->algos.end()) return false;
  *algo = it->second.algo;
  if (workspace) *workspace = it->second.workspace;
  return true;
}

void AlgoCache::store(const std::string& key, cudnnConvolutionFwdAlgo_t algo, int64_t workspace) {
  std::lock_guard<std::mutex> lock(m_impl->mutex);
  m_impl->algos[key] = Impl::Entry{algo, workspace < 0 ? -1 : workspace};
}

cudnnConvolutionFwdAlgo_t AlgoCache::insert(const std::string& key, cudnnConvolutionFwdAlgo_t algo, int64_t workspace,
                                            int64_t* workspace_out) {
  std::lock_guard<std::mutex> lock(m_impl->mutex);
  Impl::Entry& e = m_impl->algos.emplace(key, Impl::Entry{algo, -1}).first->second;
  if (e.algo == algo && e.workspace < 0 && workspace >= 0) e.workspace = workspace;
  if (workspace_out) *workspace_out = e.workspace;
  return e.algo;
}

size_t AlgoCache::size() const {
  std::lock_guard<std::mutex> lock(m_impl->mutex);
  return m_impl->algos.size();
}

void AlgoCache::clear() {
  std::lock_guard<std::mutex> lock(m_impl->mutex);
  m_impl->algos.clear();
}

const char* conv_algo_name(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_FWD_ALGO_COUNT:
      break;
  }
  return "UNKNOWN_ALGO";
}

namespace {

// ---- RAII owners of cuDNN descriptors (destroy failures are logged) ----

template <class Traits>
class Desc {
 public:
  using T = typename Traits::Type;
  Desc() = default;
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  ~Desc() {
    if (m_h == nullptr) return;
    const cudnnStatus_t s = Traits::destroy(m_h);
    if (s != CUDNN_STATUS_SUCCESS) DLR_LOG_ERROR("{} failed: {}", Traits::kDestroyName, cudnnGetErrorString(s));
  }
  Status create() {
    DLR_ASSERT(m_h == nullptr);
    const cudnnStatus_t s = Traits::create(&m_h);
    if (s != CUDNN_STATUS_SUCCESS) {
      m_h = nullptr;
      return cudnn_status(s, Traits::kCreateName, __FILE__, __LINE__);
    }
    return Status();
  }
  T get() const { return m_h; }

 private:
  T m_h = nullptr;
};

struct TensorTraits {
  using Type = cudnnTensorDescriptor_t;
  static constexpr const char* kCreateName = "cudnnCreateTensorDescriptor";
  static constexpr const char* kDestroyName = "cudnnDestroyTensorDescriptor";
  static cudnnStatus_t create(Type* d) { return cudnnCreateTensorDescriptor(d); }
  static cudnnStatus_t destroy(Type d) { return cudnnDestroyTensorDescriptor(d); }
};
struct FilterTraits {
  using Type = cudnnFilterDescriptor_t;
  static constexpr const char* kCreateName = "cudnnCreateFilterDescriptor";
  static constexpr const char* kDestroyName = "cudnnDestroyFilterDescriptor";
  static cudnnStatus_t create(Type* d) { return cudnnCreateFilterDescriptor(d); }
  static cudnnStatus_t destroy(Type d) { return cudnnDestroyFilterDescriptor(d); }
};
struct ConvTraits {
  using Type = cudnnConvolutionDescriptor_t;
  static constexpr const char* kCreateName = "cudnnCreateConvolutionDescriptor";
  static constexpr const char* kDestroyName = "cudnnDestroyConvolutionDescriptor";
  static cudnnStatus_t create(Type* d) { return cudnnCreateConvolutionDescriptor(d); }
  static cudnnStatus_t destroy(Type d) { return cudnnDestroyConvolutionDescriptor(d); }
};
struct ActivationTraits {
  using Type = cudnnActivationDescriptor_t;
  static constexpr const char* kCreateName = "cudnnCreateActivationDescriptor";
  static constexpr const char* kDestroyName = "cudnnDestroyActivationDescriptor";
  static cudnnStatus_t create(Type* d) { return cudnnCreateActivationDescriptor(d); }
  static cudnnStatus_t destroy(Type d) { return cudnnDestroyActivationDescriptor(d); }
};

using TensorDesc = Desc<TensorTraits>;
using FilterDesc = Desc<FilterTraits>;
using ConvDesc = Desc<ConvTraits>;
using ActivationDesc = Desc<ActivationTraits>;

cudnnDataType_t cudnn_dtype(DType t) { return t == DType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT; }

int effective_dilation(const ConvParams& p) { return p.size == 1 ? 1 : p.dilation; }

// Elements one image spans (the smallest legal n_stride).
int64_t image_extent(const TensorView& v) {
  if (v.layout == Layout::kNCHW) return int64_t(v.c) * v.h * v.w;
  return (int64_t(v.h) * v.w - 1) * v.pixel_stride + v.c;
}

// n_stride as described to cuDNN: with one image it is irrelevant, so a view
// that leaves it 0 (or smaller than one image) gets the packed value.
int64_t effective_n_stride(const TensorView& v) {
  if (v.n == 1 && v.n_stride < image_extent(v)) {
    return v.layout == Layout::kNCHW ? image_extent(v) : int64_t(v.h) * v.w * v.pixel_stride;
  }
  return v.n_stride;
}

std::string view_string(const TensorView& v) {
  std::string s = std::string(layout_name(v.layout)) + "/" + dtype_name(v.dtype) + " n" + std::to_string(v.n) + " c" +
                  std::to_string(v.c) + " h" + std::to_string(v.h) + " w" + std::to_string(v.w) + " ns" +
                  std::to_string(effective_n_stride(v));
  if (v.layout == Layout::kNHWC) s += " ps" + std::to_string(v.pixel_stride);
  return s;
}

const char* policy_name(AlgoPolicy p) { return p == AlgoPolicy::kFind ? "find" : "heuristic"; }

std::string config_string(const ConvConfig& c, const TensorView& in, const TensorView& out) {
  const ConvParams& p = c.params;
  return "in[" + view_string(in) + "] out[" + view_string(out) + "] filters" + std::to_string(p.filters) + " size" +
         std::to_string(p.size) + " stride" + std::to_string(p.stride_y) + "x" + std::to_string(p.stride_x) + " dil" +
         std::to_string(effective_dilation(p)) + " pad" + std::to_string(p.padding) + " groups" +
         std::to_string(p.groups) + " act " + activation_name(p.activation) + " prec " + precision_name(c.precision) +
         " policy " + policy_name(c.policy) + " ws_limit " + std::to_string(c.workspace_limit) + " fusion" +
         std::to_string(int(c.allow_fusion)) + " force" + std::to_string(c.force_algo) +
         (c.accumulate ? " accumulate" : "");
}

Status check_view(const char* what, const TensorView& v) {
  const std::string name = std::string("conv ") + what + " view [" + view_string(v) + "]";
  if (v.n < 1 || v.c < 1 || v.h < 1 || v.w < 1) return invalid_argument(name + ": empty shape");
  if (v.layout == Layout::kNHWC && v.pixel_stride < v.c) return invalid_argument(name + ": pixel_stride < c");
  const int64_t ns = effective_n_stride(v);
  if (v.n > 1 && ns < image_extent(v)) return invalid_argument(name + ": n_stride smaller than one image");
  const int64_t pixel = v.layout == Layout::kNHWC ? v.pixel_stride : 1;
  if (ns > INT_MAX || (v.n - 1) * ns + image_extent(v) > INT_MAX || int64_t(v.h) * v.w * pixel > INT_MAX)
    return unsupported(name + ": more than 2^31-1 elements (cuDNN's 32-bit strides)");
  return Status();
}

Status validate(const ConvConfig& c, const TensorView& in, const TensorView& out) {
  const ConvParams& p = c.params;
  const std::string cfg = "conv " + config_string(c, in, out);
  DLR_RETURN_IF_ERROR(check_view("input", in));
  DLR_RETURN_IF_ERROR(check_view("output", out));
  if (in.dtype != out.dtype || in.layout != out.layout)
    return invalid_argument(cfg + ": input and output differ in dtype or layout");
  if (in.n != out.n) return invalid_argument(cfg + ": input and output batch differ");
  const DType want = c.precision == Precision::kFP16 ? DType::kF16 : DType::kF32;
  if (in.dtype != want)
    return invalid_argument(cfg + ": precision " + precision_name(c.precision) + " needs " + dtype_name(want) +
                            " tensors");
  if (p.size < 1 || p.stride_x < 1 || p.stride_y < 1 || p.dilation < 1 || p.padding < 0 || p.groups < 1 ||
      p.filters < 1)
    return invalid_argument(cfg + ": bad convolution parameters");
  if (in.c % p.groups != 0 || p.filters % p.groups != 0)
    return invalid_argument(cfg + ": channels and filters must be multiples of groups");
  if (out.c != p.filters) return invalid_argument(cfg + ": output channels != filters");
  if (c.force_algo >= int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT)) return invalid_argument(cfg + ": force_algo out of range");
  return Status();
}

Status set_view_desc(cudnnTensorDescriptor_t d, const TensorView& v) {
  const int ns = int(effective_n_stride(v));
  if (v.layout == Layout::kNCHW) {
    DLR_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(d, cudnn_dtype(v.dtype), v.n, v.c, v.h, v.w, ns, v.h * v.w, v.w, 1));
  } else {
    DLR_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(d, cudnn_dtype(v.dtype), v.n, v.c, v.h, v.w, ns, 1,
                                                 v.w * v.pixel_stride, v.pixel_stride));
  }
  return Status();
}

bool same_geometry(const TensorView& a, const TensorView& b) {
  return a.dtype == b.dtype && a.layout == b.layout && a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w &&
         effective_n_stride(a) == effective_n_stride(b) &&
         (a.layout == Layout::kNCHW || a.pixel_stride == b.pixel_stride);
}

bool is_not_supported(cudnnStatus_t s) { return int(s) / 1000 == int(CUDNN_STATUS_NOT_SUPPORTED) / 1000; }

}  // namespace

// ---- CudnnConv ----

struct CudnnConv::Impl {
  ConvConfig config;
  TensorView in;  // geometry only (data cleared)
  TensorView out;
  std::string desc;  // config_string, for messages
  TensorDesc x_desc;
  TensorDesc y_desc;
  FilterDesc w_desc;
  ConvDesc conv_desc;
  TensorDesc bias_desc;     // fused only: 1 x F x 1 x 1 f32
  ActivationDesc act_desc;  // fused only
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace = 0;  // bytes
  bool fused = false;
  mutable std::atomic<bool> fused_rejected{false};  // cuDNN refused the fused call at run time
  ConvCreateInfo info;

  Status query_algo(cudnnHandle_t handle);
  Status build_descriptors();
  Status choose_algo(cudnnHandle_t handle, const std::string& key);
  Status pick(cudnnHandle_t handle, const cudnnConvolutionFwdAlgoPerf_t* perf, int count, const char* source);
  Status setup_fusion();
  Status run_unfused(cudnnHandle_t handle, const TensorView& in_v, const void* weights, const float* bias,
                     const TensorView& out_v, void* ws, size_t ws_bytes, cudaStream_t stream,
                     ConvResidual residual) const;
};

Status CudnnConv::Impl::build_descriptors() {
  const ConvParams& p = config.params;
  const int d = effective_dilation(p);
  DLR_RETURN_IF_ERROR(x_desc.create());
  DLR_RETURN_IF_ERROR(y_desc.create());
  DLR_RETURN_IF_ERROR(w_desc.create());
  DLR_RETURN_IF_ERROR(conv_desc.create());
  DLR_RETURN_IF_ERROR(set_view_desc(x_desc.get(), in));
  DLR_RETURN_IF_ERROR(set_view_desc(y_desc.get(), out));
  // Filter dims are always given as (F, C/groups, k, k); the format names the memory
  // order: NCHW = OIHW (KCRS), NHWC = OHWI (KRSC).
  const cudnnTensorFormat_t fmt = in.layout == Layout::kNHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  DLR_CUDNN_CHECK(
      cudnnSetFilter4dDescriptor(w_desc.get(), cudnn_dtype(in.dtype), fmt, p.filters, in.c / p.groups, p.size, p.size));
  DLR_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_desc.get(), p.padding * d, p.padding * d, p.stride_y, p.stride_x,
                                                  d, d, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DLR_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_desc.get(), p.groups));
  const cudnnMathType_t math = config.precision == Precision::kFP32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  DLR_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc.get(), math));

  int n = 0, c = 0, h = 0, w = 0;
  DLR_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv_desc.get(), x_desc.get(), w_desc.get(), &n, &c, &h, &w));
  if (n != out.n || c != out.c || h != out.h || w != out.w)
    return invalid_argument("conv " + desc + ": cuDNN output size n" + std::to_string(n) + " c" + std::to_string(c) +
                            " h" + std::to_string(h) + " w" + std::to_string(w) + " != output view n" +
                            std::to_string(out.n) + " c" + std::to_string(out.c) + " h" + std::to_string(out.h) + " w" +
                            std::to_string(out.w) + " (dilation padding is padding*dilation per side)");
  return Status();
}

// Picks from `perf` (cuDNN's order: heuristic preference or measured time) the first
// entry that succeeded, fits the workspace limit (confirmed with
// cudnnGetConvolutionForwardWorkspaceSize) and, in order of preference, is
// deterministic and (kFP32) reports FMA math. Sets algo and workspace.
Status CudnnConv::Impl::pick(cudnnHandle_t handle, const cudnnConvolutionFwdAlgoPerf_t* perf, int count,
                             const char* source) {
  const bool want_fma = config.precision == Precision::kFP32;
  std::string tried;  // for the error message: every candidate with its status or workspace
  bool any_success = false;
  for (int i = 0; i < count; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& r = perf[i];
    tried += std::string(" ") + conv_algo_name(r.algo) + ":";
    tried += r.status == CUDNN_STATUS_SUCCESS ? std::to_string(r.memory) + "B" : cudnnGetErrorString(r.status);
    any_success = any_success || r.status == CUDNN_STATUS_SUCCESS;
  }
  // Tier 0: deterministic and math ok; 1: math ok; 2: anything (the descriptor's math type still governs).
  for (int tier = 0; tier < 3; ++tier) {
    for (int i = 0; i < count; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& r = perf[i];
      if (r.status != CUDNN_STATUS_SUCCESS || r.memory > config.workspace_limit) continue;
      const bool math_ok = !want_fma || r.mathType == CUDNN_FMA_MATH;
      const bool det = r.determinism == CUDNN_DETERMINISTIC;
      if ((tier == 0 && !(det && math_ok)) || (tier == 1 && !math_ok)) continue;
      size_t bytes = 0;
      const cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(handle, x_desc.get(), w_desc.get(),
                                                                      conv_desc.get(), y_desc.get(), r.algo, &bytes);
      if (s != CUDNN_STATUS_SUCCESS || bytes > config.workspace_limit) continue;
      algo = r.algo;
      workspace = bytes;
      return Status();
    }
  }
  if (!any_success)
    return unsupported("conv " + desc + ": cuDNN supports no algorithm for this configuration (" + source +
                       " candidates:" + tried + ")");
  return out_of_memory("conv " + desc + ": no " + source + " algorithm fits the workspace limit of " +
                       std::to_string(config.workspace_limit) + " bytes (candidates:" + tried + ")");
}

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

// Asks cuDNN (heuristic or find, config.policy) and picks; sets algo and workspace.
Status CudnnConv::Impl::query_algo(cudnnHandle_t handle) {
  const auto t0 = std::chrono::steady_clock::now();
  info.queried = true;
  int max_count = 0;
  DLR_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(max_count, 1)));
  int count = 0;
  if (config.policy == AlgoPolicy::kFind) {
    DLR_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(handle, x_desc.get(), w_desc.get(), conv_desc.get(),
                                                         y_desc.get(), int(perf.size()), &count, perf.data()));
  } else {
    DLR_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, x_desc.get(), w_desc.get(), conv_desc.get(),
                                                           y_desc.get(), int(perf.size()), &count, perf.data()));
  }
  const Status st = pick(handle, perf.data(), count, policy_name(config.policy));
  info.query_ms += ms_since(t0);
  return st;
}

Status CudnnConv::Impl::choose_algo(cudnnHandle_t handle, const std::string& key) {
  if (config.force_algo >= 0) {
    // The key names the forced algorithm: its entry is this configuration's workspace size.
    algo = cudnnConvolutionFwdAlgo_t(config.force_algo);
    cudnnConvolutionFwdAlgo_t cached{};
    int64_t cached_ws = -1;
    if (AlgoCache::process().lookup(key, &cached, &cached_ws) && cached == algo && cached_ws >= 0) {
      workspace = size_t(cached_ws);
      info.from_cache = true;
      info.workspace_cached = true;
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      DLR_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, x_desc.get(), w_desc.get(), conv_desc.get(),
                                                              y_desc.get(), algo, &workspace));
      info.workspace_ms += ms_since(t0);
      AlgoCache::process().store(key, algo, int64_t(workspace));
    }
    if (workspace > config.workspace_limit)
      return out_of_memory("conv " + desc + ": forced algorithm " + conv_algo_name(algo) + " needs " +
                           std::to_string(workspace) + " bytes of workspace, over the limit");
    return Status();
  }
  cudnnConvolutionFwdAlgo_t cached{};
  int64_t cached_ws = -1;
  if (AlgoCache::process().lookup(key, &cached, &cached_ws)) {
    // A cached choice with its size (cuDNN's answer for this very key, this process's
    // or kept for this GPU, cuDNN and model): used as it is, no cuDNN call.
    if (cached_ws >= 0 && uint64_t(cached_ws) <= uint64_t(config.workspace_limit)) {
      algo = cached;
      workspace = size_t(cached_ws);
      info.from_cache = true;
      info.workspace_cached = true;
      return Status();
    }
    // Without its size (or over this limit): confirmed by cuDNN's workspace query; a
    // rejected one is chosen again below.
    const auto t0 = std::chrono::steady_clock::now();
    size_t bytes = 0;
    const cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(handle, x_desc.get(), w_desc.get(),
                                                                    conv_desc.get(), y_desc.get(), cached, &bytes);
    info.workspace_ms += ms_since(t0);
    if (s == CUDNN_STATUS_SUCCESS && bytes <= config.workspace_limit) {
      algo = cached;
      workspace = bytes;
      info.from_cache = true;
      AlgoCache::process().insert(key, algo, int64_t(workspace));  // the size, for the next create of this key
      return Status();
    }
    DLR_LOG_INFO("conv {}: cached algorithm {} rejected ({}); choosing again", desc, conv_algo_name(cached),
                 s == CUDNN_STATUS_SUCCESS ? std::to_string(bytes) + " bytes of workspace, over the limit"
                                           : std::string(cudnnGetErrorString(s)));
    DLR_RETURN_IF_ERROR(query_algo(handle));
    AlgoCache::process().store(key, algo, int64_t(workspace));
    return Status();
  }
  DLR_RETURN_IF_ERROR(query_algo(handle));
  cached = AlgoCache::process().insert(key, algo, int64_t(workspace), &cached_ws);
  if (cached == algo) return Status();  // pick() confirmed the workspace already
  // Another creator of the same key stored first: use its choice (same algorithms in
  // every engine of the process).
  algo = cached;
  if (cached_ws >= 0 && uint64_t(cached_ws) <= uint64_t(config.workspace_limit)) {
    workspace = size_t(cached_ws);
    return Status();
  }
  const auto t0 = std::chrono::steady_clock::now();
  DLR_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, x_desc.get(), w_desc.get(), conv_desc.get(),
                                                          y_desc.get(), algo, &workspace));
  info.workspace_ms += ms_since(t0);
  if (workspace > config.workspace_limit)
    return internal_error("conv " + desc + ": cached algorithm " + conv_algo_name(algo) + " needs " +
                          std::to_string(workspace) + " bytes, over the limit");
  AlgoCache::process().insert(key, algo, int64_t(workspace));
  return Status();
}

Status CudnnConv::Impl::setup_fusion() {
  const Activation act = config.params.activation;
  fused = config.allow_fusion && !config.accumulate && in.dtype == DType::kF32 &&
          (act == Activation::kRelu ||
           (act == Activation::kLinear && algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM));
  if (!fused) return Status();
  DLR_RETURN_IF_ERROR(bias_desc.create());
  DLR_RETURN_IF_ERROR(act_desc.create());
  DLR_CUDNN_CHECK(cudnnSetTensor4dDescriptor(bias_desc.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, out.c, 1, 1));
  const cudnnActivationMode_t mode = act == Activation::kRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY;
  DLR_CUDNN_CHECK(cudnnSetActivationDescriptor(act_desc.get(), mode, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  return Status();
}

std::string CudnnConv::config_key(const ConvConfig& config, const TensorView& in, const TensorView& out) {
  return config_string(config, in, out);
}

Expected<std::string> CudnnConv::cache_key(const ConvConfig& config, const TensorView& in, const TensorView& out) {
  int device = 0;
  DLR_CUDA_CHECK(cudaGetDevice(&device));
  return "dev" + std::to_string(device) + " " + config_string(config, in, out);
}

Expected<std::unique_ptr<CudnnConv>> CudnnConv::create(cudnnHandle_t handle, const ConvConfig& config,
                                                       const TensorView& in, const TensorView& out) {
  if (handle == nullptr) return invalid_argument("CudnnConv::create: null cuDNN handle");
  const auto t0 = std::chrono::steady_clock::now();
  DLR_RETURN_IF_ERROR(validate(config, in, out));
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->in = in;
  impl->in.data = nullptr;
  impl->out = out;
  impl->out.data = nullptr;
  impl->desc = config_string(config, in, out);
  DLR_ASSIGN_OR_RETURN(const std::string key, cache_key(config, in, out));
  DLR_RETURN_IF_ERROR(impl->build_descriptors());
  impl->info.descriptors_ms = ms_since(t0);
  DLR_RETURN_IF_ERROR(impl->choose_algo(handle, key));
  const auto t1 = std::chrono::steady_clock::now();
  DLR_RETURN_IF_ERROR(impl->setup_fusion());
  impl->info.fusion_ms = ms_since(t1);
  DLR_LOG_DEBUG("conv {}: algo {}, workspace {} bytes, fused {}", impl->desc, conv_algo_name(impl->algo),
                impl->workspace, impl->fused);
  return std::unique_ptr<CudnnConv>(new CudnnConv(std::move(impl)));
}

CudnnConv::CudnnConv(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
CudnnConv::~CudnnConv() = default;

size_t CudnnConv::workspace_bytes() const { return m_impl->workspace; }
std::string CudnnConv::algo_name() const { return conv_algo_name(m_impl->algo); }
cudnnConvolutionFwdAlgo_t CudnnConv::algo() const { return m_impl->algo; }
const ConvCreateInfo& CudnnConv::create_info() const { return m_impl->info; }
bool CudnnConv::fused() const { return m_impl->fused && !m_impl->fused_rejected.load(); }

Status CudnnConv::Impl::run_unfused(cudnnHandle_t handle, const TensorView& in_v, const void* weights,
                                    const float* bias, const TensorView& out_v, void* ws, size_t ws_bytes,
                                    cudaStream_t stream, ConvResidual residual) const {
  const float one = 1.0f, zero = 0.0f;  // float scaling for both f32 and f16 data
  const float* beta = config.accumulate ? &one : &zero;
  DLR_CUDNN_CHECK(cudnnConvolutionForward(handle, &one, x_desc.get(), in_v.data, w_desc.get(), weights, conv_desc.get(),
                                          algo, ws, ws_bytes, beta, y_desc.get(), out_v.data));
  if (residual.view != nullptr)
    return bias_activation_add(out_v, bias, config.params.activation, *residual.view, residual.act, stream);
  if (bias == nullptr && config.params.activation == Activation::kLinear) return Status();
  return bias_activation(out_v, bias, config.params.activation, stream);
}

Status CudnnConv::run(cudnnHandle_t handle, const TensorView& in, const void* weights, const float* bias,
                      const TensorView& out, void* workspace, size_t workspace_bytes, cudaStream_t stream,
                      ConvResidual residual) const {
  const Impl& m = *m_impl;
  if (handle == nullptr || in.data == nullptr || out.data == nullptr || weights == nullptr)
    return invalid_argument("conv " + m.desc + ": run with a null handle, tensor or weights");
  if (!same_geometry(in, m.in) || !same_geometry(out, m.out))
    return invalid_argument("conv " + m.desc + ": run with views in[" + view_string(in) + "] out[" + view_string(out) +
                            "] that differ from create");
  if (workspace_bytes < m.workspace || (m.workspace > 0 && workspace == nullptr))
    return invalid_argument("conv " + m.desc + ": workspace of " + std::to_string(workspace_bytes) + " bytes given, " +
                            std::to_string(m.workspace) + " needed");
  DLR_CUDNN_CHECK(cudnnSetStream(handle, stream));
  if (residual.view != nullptr && m.config.accumulate)
    return invalid_argument("conv " + m.desc + ": a residual add on an accumulating conv");
  if (m.fused && bias != nullptr && residual.view == nullptr && !m.fused_rejected.load()) {
    const float one = 1.0f, zero = 0.0f;
    // y = act(1 * conv(x) + 0 * z + bias) with z = y.
    const cudnnStatus_t s = cudnnConvolutionBiasActivationForward(
        handle, &one, m.x_desc.get(), in.data, m.w_desc.get(), weights, m.conv_desc.get(), m.algo, workspace,
        workspace_bytes, &zero, m.y_desc.get(), out.data, m.bias_desc.get(), bias, m.act_desc.get(), m.y_desc.get(),
        out.data);
    if (s == CUDNN_STATUS_SUCCESS) return Status();
    if (!is_not_supported(s)) return cudnn_status(s, "cudnnConvolutionBiasActivationForward", __FILE__, __LINE__);
    if (!m.fused_rejected.exchange(true))
      DLR_LOG_WARN("conv {}: cudnnConvolutionBiasActivationForward refused ({}); using conv + bias_activation", m.desc,
                   cudnnGetErrorString(s));
  }
  return m.run_unfused(handle, in, weights, bias, out, workspace, workspace_bytes, stream, residual);
}

}  // namespace dlr::cuda
