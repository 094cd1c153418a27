// CudaEngine's warm-up of the convolutions' kernels at open (docs/architecture.md,
// "Kernels loaded at open"): each distinct configuration run once, on several threads,
// before the graph capture or the first inference. Thread 0 is the calling thread with
// the engine's handle and stream; the others take the cuDNN handle the plans' loading
// thread of their number kept (cuda_engine_fused_load.cpp) or create one, create a stream
// of their own and use a slice of the engine's workspace (runtime/warm_split.h). The outputs land
// in the engine's own arena and are overwritten by the first inference; the weights read
// are whatever the engine's weight memory holds.
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "runtime/core/clock.h"
#include "runtime/core/log.h"
#include "runtime/core/thread_fan.h"
#include "runtime/cuda/cuda_engine_impl.h"

namespace dlr {

// One item per configuration cuDNN runs (a CudnnConv's key, or a shared cuDNN graph);
// 3xTF32 convs and convs over a concatenation's parts are left to the capture.
std::vector<WarmItem> CudaEngine::warm_items() const {
  std::vector<WarmItem> items;
  std::set<std::string> seen;
  for (const Step& st : m_plan.steps) {
    if (st.kind != LayerKind::kConv || st.weight < 0 || st.inputs.size() != 1) continue;
    const size_t i = size_t(st.index);
    if (m_x3_convs[i]) continue;
    const cuda::FusedConv* fused = m_fused_convs[i].get();
    if (fused == nullptr && !m_convs[i]) continue;
    const std::string key = fused != nullptr
                                ? "graph " + std::to_string(reinterpret_cast<uintptr_t>(fused))
                                : cuda::CudnnConv::config_key(conv_config(st), view(st.inputs[0]), view(st.output));
    if (!seen.insert(key).second) continue;
    items.push_back({st.index, int64_t(fused != nullptr ? fused->workspace_bytes() : m_convs[i]->workspace_bytes())});
  }
  return items;
}

Status CudaEngine::warm_kernels() {
  const int asked = m_options.warm_threads;
  if (asked <= 0 || m_options.shared_memory || m_options.shared_ring) return Status();
  const auto t0 = Clock::now();
  const std::vector<WarmItem> items = warm_items();
  if (items.empty()) return Status();
  const WarmSplit split = split_warm_up(items, asked, int64_t(workspace_bytes()));
  const int n = int(split.threads.size());
  char* const ws = static_cast<char*>(workspace_ptr());
  // Thread t's items on `cudnn` and `s`, with its slice of the workspace; synchronises `s`.
  auto run = [&](int t, cudnnContext* cudnn, cudaStream_t s) -> Status {
    const StepContext ctx{cudnn, ws + t * split.slice_bytes, size_t(split.slice_bytes)};
    for (int i : split.threads[size_t(t)])
      DLR_RETURN_IF_ERROR(enqueue_step(m_plan.steps[size_t(items[size_t(i)].step)], s, true, &ctx));
    DLR_CUDA_CHECK(cudaStreamSynchronize(s));
    return Status();
  };
  const ThreadFan fan = run_on_threads(n, [&](int t) -> Status {
    if (t == 0) return run(0, m_cudnn.get(), m_stream.get());
    DLR_CUDA_CHECK(cudaSetDevice(m_options.cuda_device));
    cuda::CudnnHandle own;  // a plan-loading thread's handle where there is one
    if (size_t(t - 1) >= m_aux_cudnn.size() || !m_aux_cudnn[size_t(t - 1)]) {
      DLR_ASSIGN_OR_RETURN(own, cuda::make_cudnn());
    }
    cudnnContext* cudnn = own ? own.get() : m_aux_cudnn[size_t(t - 1)].get();
    DLR_ASSIGN_OR_RETURN(cuda::Stream s, cuda::make_stream());
    return run(t, cudnn, s.get());
  });
  for (const Status& st : fan.status) DLR_RETURN_IF_ERROR(st);
  std::vector<int> after = split.after;  // and the items of a thread that could not start
  for (int t = 1; t < n; ++t)
    if (!fan.started[size_t(t)]) after.insert(after.end(), split.threads[size_t(t)].begin(), split.threads[size_t(t)].end());
  const StepContext whole{m_cudnn.get(), ws, workspace_bytes()};
  for (int i : after)
    DLR_RETURN_IF_ERROR(enqueue_step(m_plan.steps[size_t(items[size_t(i)].step)], m_stream.get(), true, &whole));
  DLR_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
  m_open_timing.kernels_warm_ms = ms_since(t0);
  m_open_timing.kernels_warm_convs = int(items.size());
  m_open_timing.kernels_warm_threads = fan.ran();
  DLR_LOG_DEBUG("cuda engine: {} convolutions warmed on {} threads ({} after them, whole workspace) in {:.1f} ms",
                items.size(), m_open_timing.kernels_warm_threads, after.size(), m_open_timing.kernels_warm_ms);
  return Status();
}

}  // namespace dlr
