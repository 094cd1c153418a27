// CudaEngine's per-configuration choice of a strict fp32 convolution's algorithm: cuDNN's
// heuristic choice, every other direct-summation algorithm (implicit GEMM, precomputed
// implicit GEMM, GEMM: each sums the products in f32 with FMAs, so every one stays within
// the strict tolerance of the CPU reference; Winograd and FFT transform the operands and
// are left out) and, on NHWC plans, the 3xTF32 conv in both its forms
// (kernels/cuda/conv_3xtf32.h: tensor cores, chunked sums that keep the same tolerance) timed at open on the engine's own
// buffers, as CUDA graphs of repeated runs (time_step), the fastest kept. The choice goes
// to the process-wide AlgoCache (or, for 3xTF32, the registry below: later engines of the
// process, streamed ones included, run the same conv, so their outputs are bit-identical)
// and to the algorithm cache file with its time, so later opens time nothing
// (docs/architecture.md, "Engines").
#include <chrono>
#include <mutex>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/conv.h"
#include "runtime/core/log.h"
#include "runtime/cuda/cuda_engine_impl.h"

namespace dlr {
namespace {

constexpr cudnnConvolutionFwdAlgo_t kCandidates[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                     CUDNN_CONVOLUTION_FWD_ALGO_GEMM};
// Another algorithm replaces cuDNN's choice only when it is this much faster (replay noise).
constexpr double kMargin = 0.98;

std::mutex& x3_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, int>& x3_keys() {
  static std::map<std::string, int> keys;
  return keys;
}

const char* x3_form_name(int algo) {
  return algo == kAlgo3xTf32Gemm ? "GEMM" : "chunked";
}

}  // namespace

int x3_chosen(const std::string& process_key) {
  std::lock_guard<std::mutex> lock(x3_mutex());
  const auto it = x3_keys().find(process_key);
  return it != x3_keys().end() ? it->second : -1;
}

void register_x3_choice(const std::string& process_key, int algo) {
  std::lock_guard<std::mutex> lock(x3_mutex());
  x3_keys()[process_key] = algo;
}

// Times `st`'s 3xTF32 conv (form `algo`) in place of its cuDNN conv; *ms < 0 where it cannot run.
Status CudaEngine::time_x3(const Step& st, int algo, double* ms, size_t* workspace) {
  *ms = -1;
  if (m_plan.options.layout != Layout::kNHWC) return Status();
  auto made = make_x3_conv(st, algo);
  if (!made.ok()) {
    DLR_LOG_DEBUG("layer {}: no 3xTF32 conv ({})", st.layer, made.status().message());
    return Status();
  }
  *workspace = (*made)->workspace_bytes();
  DLR_RETURN_IF_ERROR(grow_workspace(*workspace));
  std::unique_ptr<cuda::Tf32x3Conv>& slot = m_x3_convs[size_t(st.index)];
  slot = std::move(made).value();
  const Status timed = time_step(st, ms);
  slot.reset();
  return timed;
}

Status CudaEngine::choose_conv_algos() {
  AlgoSetup& a = m_algo_setup;
  if (a.to_time.empty()) {
    a = AlgoSetup();
    return Status();
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& key : a.to_time) {
    const std::vector<int>& steps = a.steps[key];
    const Step& st = m_plan.steps[size_t(steps.front())];
    std::unique_ptr<cuda::CudnnConv>& slot = m_convs[size_t(st.index)];
    ConvAlgoChoice best = a.chosen[key];
    DLR_RETURN_IF_ERROR(time_step(st, &best.ms));
    const double heuristic_ms = best.ms;
    // A candidate replaces the best so far only when it beats cuDNN's choice by the margin.
    auto consider = [&](const ConvAlgoChoice& c) {
      if (c.ms < kMargin * heuristic_ms && c.ms < best.ms) best = c;
    };
    const TensorView in = view(st.inputs[0]), out = view(st.output);
    for (const cudnnConvolutionFwdAlgo_t algo : kCandidates) {
      if (int(algo) == a.chosen[key].algo) continue;
      cuda::ConvConfig cfg = conv_config(st);
      cfg.force_algo = int(algo);
      auto conv = cuda::CudnnConv::create(m_cudnn.get(), cfg, in, out);
      if (!conv.ok() || (*conv)->workspace_bytes() > m_workspace_bytes) continue;
      const size_t ws = (*conv)->workspace_bytes();
      std::unique_ptr<cuda::CudnnConv> candidate = std::move(conv).value();
      std::swap(slot, candidate);
      double ms = 0;
      const Status timed = time_step(st, &ms);
      std::swap(slot, candidate);
      DLR_RETURN_IF_ERROR(timed);
      DLR_LOG_DEBUG("layer {}: {} {:.4f} ms per run (cuDNN's choice {:.4f})", st.layer, cuda::conv_algo_name(algo), ms,
                    heuristic_ms);
      consider(ConvAlgoChoice{int(algo), int64_t(ws), ms});
    }
    for (const int x3 : {kAlgo3xTf32, kAlgo3xTf32Gemm}) {
      double x3_ms = -1;
      size_t x3_ws = 0;
      DLR_RETURN_IF_ERROR(time_x3(st, x3, &x3_ms, &x3_ws));
      if (x3_ms < 0) continue;
      DLR_LOG_DEBUG("layer {}: 3xTF32 {} {:.4f} ms per run (cuDNN's choice {:.4f})", st.layer, x3_form_name(x3), x3_ms,
                    heuristic_ms);
      consider(ConvAlgoChoice{x3, int64_t(x3_ws), x3_ms});
    }
    m_open_timing.algos_timed += 1;
    if (best.algo != a.chosen[key].algo) {
      DLR_RETURN_IF_ERROR(adopt_choice(st, steps, best));
      m_open_timing.algos_changed += 1;
    }
    a.chosen[key] = best;
  }
  DLR_RETURN_IF_ERROR(fit_workspace());
  if (!a.path.empty() && a.chosen != a.stored) {
    const Status saved = save_conv_algos(a.path, a.key, a.chosen);
    if (!saved.ok()) DLR_LOG_WARN("cuDNN algorithm choices not kept: {}", saved.message());
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  DLR_LOG_DEBUG("cuda engine: {} conv configurations timed in {:.1f} ms, {} changed", m_open_timing.algos_timed, ms,
                m_open_timing.algos_changed);
  m_open_timing.algo_choice_ms += ms;
  m_open_timing.conv_setup_ms += ms;
  a = AlgoSetup();
  return Status();
}

// Every step of one configuration runs `best` from now on, and so do later engines of the
// process (AlgoCache, or the 3xTF32 registry).
Status CudaEngine::adopt_choice(const Step& st, const std::vector<int>& steps, const ConvAlgoChoice& best) {
  const cuda::ConvConfig cfg = conv_config(st);
  DLR_ASSIGN_OR_RETURN(const std::string process_key,
                       cuda::CudnnConv::cache_key(cfg, view(st.inputs[0]), view(st.output)));
  if (is_x3(best.algo)) {
    register_x3_choice(process_key, best.algo);
    for (int i : steps) {
      DLR_ASSIGN_OR_RETURN(m_x3_convs[size_t(i)], make_x3_conv(m_plan.steps[size_t(i)], best.algo));
      m_convs[size_t(i)].reset();  // not run any more, as for a conv kept as 3xTF32 (make_x3_step)
    }
    return Status();
  }
  cuda::AlgoCache::process().store(process_key, cudnnConvolutionFwdAlgo_t(best.algo), best.workspace);
  for (int i : steps) {  // created again: they take the stored choice
    const Step& s = m_plan.steps[size_t(i)];
    DLR_ASSIGN_OR_RETURN(m_convs[size_t(i)], cuda::CudnnConv::create(m_cudnn.get(), cfg, view(s.inputs[0]), view(s.output)));
  }
  return Status();
}

}  // namespace dlr
