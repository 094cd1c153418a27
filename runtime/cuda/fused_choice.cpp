// CudaEngine's per-layer choice between a conv's cuDNN graph and the conv with its
// epilogue pass (Fusion::kAuto): both timed at open on the engine's own buffers, each as
// a CUDA graph of kRepeats back-to-back runs (as an inference replays them), the faster
// kept (with find_algorithms, the graph's fastest of several cuDNN engines). The times go
// to the plan cache (runtime/cache/fused_plan_cache.h), so later opens neither time nor
// build a graph that lost.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "runtime/core/log.h"
#include "runtime/cuda/cuda_engine_impl.h"

namespace dlr {
namespace {

constexpr int kRepeats = 16;  // runs of the step per captured graph
constexpr int kReplays = 5;   // timed replays (the median is taken), after one warm-up

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

// One replay of `g` on the compute stream, timed between two events on an idle GPU, as
// run() launches an inference (queued behind other work it would show no launch latency).
Status CudaEngine::time_replay(const cuda::GraphExec& g, double* ms) {
  cudaStream_t s = m_stream.get();
  DLR_CUDA_CHECK(cudaStreamSynchronize(s));
  DLR_CUDA_CHECK(cudaEventRecord(m_ev_start.get(), s));
  DLR_CUDA_CHECK(cudaGraphLaunch(g.get(), s));
  DLR_CUDA_CHECK(cudaEventRecord(m_ev_end.get(), s));
  DLR_CUDA_CHECK(cudaStreamSynchronize(s));
  float t = 0;
  DLR_CUDA_CHECK(cudaEventElapsedTime(&t, m_ev_start.get(), m_ev_end.get()));
  *ms = t;
  return Status();
}

// GPU time per run of `st` as the engine enqueues it now (graph or not), weights where
// the step reads them (their contents do not matter), outputs overwritten.
Status CudaEngine::time_step(const Step& st, double* ms_per_run) {
  cudaStream_t s = m_stream.get();
  auto repeated = [&]() -> Status {
    for (int r = 0; r < kRepeats; ++r) DLR_RETURN_IF_ERROR(enqueue_step(st, s, true));
    return Status();
  };
  Expected<cuda::GraphExec> captured = capture(repeated);
  if (!captured.ok()) {  // a first run may load kernels, which a capture refuses: run it eagerly first
    DLR_RETURN_IF_ERROR(enqueue_step(st, s, true));
    DLR_CUDA_CHECK(cudaStreamSynchronize(s));
    captured = capture(repeated);
  }
  DLR_ASSIGN_OR_RETURN(cuda::GraphExec g, std::move(captured));
  std::vector<double> ms;
  for (int rep = -1; rep < kReplays; ++rep) {  // rep -1: warm-up
    double t = 0;
    DLR_RETURN_IF_ERROR(time_replay(g, &t));
    if (rep >= 0) ms.push_back(t / kRepeats);
  }
  *ms_per_run = median_of(ms);
  return Status();
}

// Every finalised plan of `graph` timed on `st`; the fastest selected.
Status CudaEngine::time_fused_plans(const Step& st, cuda::FusedConv* graph, double* best_ms) {
  int best = 0;
  for (int i = 0; i < graph->plan_count(); ++i) {
    DLR_RETURN_IF_ERROR(graph->select(i));
    double ms = 0;
    DLR_RETURN_IF_ERROR(time_step(st, &ms));
    DLR_LOG_DEBUG("layer {}: cuDNN graph plan {} ({}) {:.4f} ms per run", st.layer, i, graph->describe(), ms);
    if (i == 0 || ms < *best_ms) {
      best = i;
      *best_ms = ms;
    }
  }
  return graph->select(best);
}

Status CudaEngine::fit_workspace() {
  size_t need = 0;
  for (const auto& c : m_convs)
    if (c) need = std::max(need, c->workspace_bytes());
  for (const auto& f : m_fused_convs)
    if (f) need = std::max(need, f->workspace_bytes());
  for (const auto& x : m_x3_convs)
    if (x) need = std::max(need, x->workspace_bytes());
  m_workspace_need = need;
  if (m_options.shared_memory || need >= m_workspace.bytes()) return Status();
  return realloc_workspace(need);
}

Status CudaEngine::grow_workspace(size_t bytes) {
  if (m_options.shared_memory || bytes <= m_workspace_bytes) return Status();
  return realloc_workspace(bytes);
}

Status CudaEngine::realloc_workspace(size_t bytes) {
  m_workspace = cuda::DeviceBuffer();  // freed first: the two never coexist
  DLR_ASSIGN_OR_RETURN(m_workspace, cuda::DeviceBuffer::alloc(bytes));
  m_workspace_ptr = m_workspace.data();
  m_workspace_bytes = m_workspace.bytes();
  return Status();
}

Status CudaEngine::choose_fused_convs() {
  const auto t0 = std::chrono::steady_clock::now();
  FusedSetup& f = m_fused;
  for (const std::string& key : f.to_time) {
    const std::vector<int>& steps = f.steps[key];
    const Step& st = m_plan.steps[size_t(steps.front())];
    std::shared_ptr<const cuda::FusedConv> graph = m_fused_convs[size_t(st.index)];
    FusedPlanEntry entry = f.keep.count(key) ? f.keep[key] : FusedPlanEntry();
    cuda::FusedConv* built = f.built[key].get();
    DLR_RETURN_IF_ERROR(time_fused_plans(st, built, &entry.graph_ms));
    if (built->plan_count() > 1) {  // the plan kept is the one selected
      Expected<std::string> text = built->serialize();
      entry.plan = text.ok() ? std::move(text).value() : std::string();
    }
    m_fused_convs[size_t(st.index)] = nullptr;
    const Status unfused = time_step(st, &entry.epilogue_ms);
    m_fused_convs[size_t(st.index)] = graph;
    DLR_RETURN_IF_ERROR(unfused);
    m_open_timing.fused_timed += 1;
    DLR_LOG_DEBUG("layer {}: cuDNN graph {:.4f} ms, conv + epilogue {:.4f} ms per run ({} steps)", st.layer,
                  entry.graph_ms, entry.epilogue_ms, steps.size());
    if (entry.graph_ms > entry.epilogue_ms) {
      entry.plan.clear();  // kept as "measured slower"
      for (int i : steps) m_fused_convs[size_t(i)] = nullptr;
      m_open_timing.convs_fused -= int(steps.size());
      m_open_timing.fused_slower += int(steps.size());
      f.keep[key] = entry;
    } else if (!entry.plan.empty()) {  // no plan text: cuDNN did not serialise it, nothing to keep
      f.keep[key] = entry;
    }
  }
  if (!f.to_time.empty()) DLR_RETURN_IF_ERROR(fit_workspace());
  if (!f.path.empty() && f.keep != f.stored) {
    const Status saved = save_fused_plans(f.path, f.key, f.keep);
    if (!saved.ok()) DLR_LOG_WARN("cuDNN graph plans not kept: {}", saved.message());
  }
  m_fused = FusedSetup();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  m_open_timing.fused_choice_ms += ms;
  m_open_timing.conv_setup_ms += ms;
  return Status();
}

}  // namespace dlr
