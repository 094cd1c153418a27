// CudaEngine's warm-up of the convolutions' kernels at open (docs/architecture.md,
// "Kernels loaded at open"): each distinct configuration run once, on several threads,
// before the graph capture or the first inference. Thread 0 is the calling thread with
// the engine's handles and stream; the others create a cuDNN handle, a stream and, when
// one of their configurations runs on cuBLAS, a cuBLAS handle of their own, and use a
// slice of the engine's workspace (runtime/warm_split.h). The outputs land
// in the engine's own arena and are overwritten by the first inference; the weights read
// are whatever the engine's weight memory holds.
#include <chrono>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "runtime/core/clock.h"
#include "runtime/core/log.h"
#include "runtime/cuda/cuda_engine_impl.h"

namespace dlr {
namespace {

// What a GEMM over `v` depends on: its type, shape and pixel stride.
std::string view_key(const TensorView& v) {
  return std::string(dtype_name(v.dtype)) + " " + std::to_string(v.n) + "x" + std::to_string(v.c) + "x" +
         std::to_string(v.h) + "x" + std::to_string(v.w) + "/" + std::to_string(v.pixel_stride);
}

}  // namespace

// One item per distinct configuration: a CudnnConv's key, a shared cuDNN graph, a
// 3xTF32 conv's key, or a conv over a concatenation's parts and shapes (the last two run
// on cuBLAS as well, so a thread running one needs a cuBLAS handle: uses_cublas).
std::vector<WarmItem> CudaEngine::warm_items() const {
  std::vector<WarmItem> items;
  std::set<std::string> seen;
  for (const Step& st : m_plan.steps) {
    if (st.kind != LayerKind::kConv || st.weight < 0) continue;
    const size_t i = size_t(st.index);
    const cuda::FusedConv* fused = m_fused_convs[i].get();
    std::string key;
    int64_t workspace = 0;
    if (m_concat_convs[i]) {
      key = "concat";
      for (const ViewRef& r : st.inputs) key += " " + view_key(view(r));
      key += " -> " + view_key(view(st.output)) + " act " + std::to_string(int(std::get<ConvParams>(st.params).activation));
    } else if (st.inputs.size() != 1) {
      continue;
    } else if (m_x3_convs[i]) {
      key = "x3 " + cuda::CudnnConv::config_key(conv_config(st), view(st.inputs[0]), view(st.output));
      workspace = int64_t(m_x3_convs[i]->workspace_bytes());
    } else if (fused != nullptr) {
      key = "graph " + std::to_string(reinterpret_cast<uintptr_t>(fused));
      workspace = int64_t(fused->workspace_bytes());
    } else if (m_convs[i]) {
      key = cuda::CudnnConv::config_key(conv_config(st), view(st.inputs[0]), view(st.output));
      workspace = int64_t(m_convs[i]->workspace_bytes());
    } else {
      continue;
    }
    if (!seen.insert(key).second) continue;
    items.push_back({st.index, workspace});
  }
  return items;
}

bool CudaEngine::uses_cublas(int step) const {
  const size_t i = size_t(step);
  return m_concat_convs[i] || (m_x3_convs[i] && m_x3_convs[i]->uses_cublas());
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
  auto any_on_cublas = [&](const std::vector<int>& mine) {
    for (int i : mine)
      if (uses_cublas(items[size_t(i)].step)) return true;
    return false;
  };
  // Thread t's items on `cudnn`, `cublas` and `s`, with its slice of the workspace; synchronises `s`.
  auto run = [&](int t, cudnnContext* cudnn, cublasContext* cublas, cudaStream_t s) -> Status {
    const StepContext ctx{cudnn, cublas, ws + t * split.slice_bytes, size_t(split.slice_bytes)};
    for (int i : split.threads[size_t(t)])
      DLR_RETURN_IF_ERROR(enqueue_step(m_plan.steps[size_t(items[size_t(i)].step)], s, true, &ctx));
    DLR_CUDA_CHECK(cudaStreamSynchronize(s));
    return Status();
  };
  std::vector<Status> outcome(static_cast<size_t>(n));
  std::vector<int> after = split.after;  // and the items of a thread that could not start
  std::vector<std::thread> helpers;
  for (int t = 1; t < n; ++t) {
    try {
      helpers.emplace_back([&, t] {
        outcome[size_t(t)] = [&]() -> Status {
          DLR_CUDA_CHECK(cudaSetDevice(m_options.cuda_device));
          DLR_ASSIGN_OR_RETURN(cuda::CudnnHandle cudnn, cuda::make_cudnn());
          DLR_ASSIGN_OR_RETURN(cuda::Stream s, cuda::make_stream());
          cuda::CublasHandle cublas;
          if (any_on_cublas(split.threads[size_t(t)])) {
            DLR_ASSIGN_OR_RETURN(cublas, cuda::make_cublas());
          }
          return run(t, cudnn.get(), cublas.get(), s.get());
        }();
      });
    } catch (const std::system_error&) {
      after.insert(after.end(), split.threads[size_t(t)].begin(), split.threads[size_t(t)].end());
    }
  }
  outcome[0] = run(0, m_cudnn.get(), m_cublas.get(), m_stream.get());
  for (std::thread& h : helpers) h.join();
  for (const Status& st : outcome) DLR_RETURN_IF_ERROR(st);
  const StepContext whole{m_cudnn.get(), m_cublas.get(), ws, workspace_bytes()};
  for (int i : after)
    DLR_RETURN_IF_ERROR(enqueue_step(m_plan.steps[size_t(items[size_t(i)].step)], m_stream.get(), true, &whole));
  DLR_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
  m_open_timing.kernels_warm_ms = ms_since(t0);
  m_open_timing.kernels_warm_convs = int(items.size());
  m_open_timing.kernels_warm_cublas = 0;
  for (const WarmItem& it : items) m_open_timing.kernels_warm_cublas += uses_cublas(it.step) ? 1 : 0;
  m_open_timing.kernels_warm_threads = 1 + int(helpers.size());
  DLR_LOG_DEBUG("cuda engine: {} convolutions ({} on cuBLAS) warmed on {} threads ({} after them, whole workspace) "
                "in {:.1f} ms",
                items.size(), m_open_timing.kernels_warm_cublas, m_open_timing.kernels_warm_threads, after.size(),
                m_open_timing.kernels_warm_ms);
  return Status();
}

}  // namespace dlr
