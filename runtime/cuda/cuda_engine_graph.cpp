// CudaEngine's finalize() (the warm-up at open) and its CUDA graphs: the capture of
// one inference on the compute stream (with the copy stream forked into it), and the
// pair of graphs run() replays (with and without the prefetched copies).
#include <chrono>
#include <functional>
#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "runtime/core/clock.h"
#include "runtime/core/fault_injection.h"
#include "runtime/core/log.h"
#include "runtime/cuda/cuda_engine_impl.h"

namespace dlr {

Status CudaEngine::finalize() {
  if (m_options.shared_memory && !m_bound)
    return internal_error("finalize: a shared-memory engine needs bind_shared() first");
  if (!ring_ready()) return internal_error("finalize: a shared-ring engine needs bind_ring() first");
  if (m_weights_deferred)
    return internal_error("finalize: the model needs kernel times measured at open and a replan before it can run");
  DLR_RETURN_IF_ERROR(make_layer_events());
  // From storage, the first inference's reads begin now and overlap the warm-up (or the
  // time until the first run()): the reader fills staging with the units that need no
  // earlier copy (as much as staging holds) and then waits, as in any inference, for the
  // first run()'s copies.
  if (m_from_storage && m_pipeline && !m_reads_started) {
    (void)m_pipeline->start();
    m_reads_started = true;
  }
  // The warm-up makes the first inference after open a warm one. With a graph it is the
  // graph's first replay: the capture itself loads every kernel (each cuDNN
  // convolution's first call, each of our kernels' first launch), so an eager run before
  // it would do that work twice. The network runs eagerly only where the capture fails
  // without an eager run first (cuDNN's first call of a configuration may do what a
  // capture cannot hold: then eager warm-up, capture again). From storage the graph's
  // replay is an inference with its reads, so nothing is replayed at open (the graph is
  // uploaded; the capture loaded the kernels); without a graph (cuda_graph off) nothing
  // runs at open unless warm_up_at_open is set: the first inference loads the kernels
  // itself while its reads run (docs/streaming.md section 9).
  m_open_timing.warmup_run = (m_options.cuda_graph && !m_from_storage) || m_options.warm_up_at_open;
  m_open_timing.warmup_eager = false;
  double eager_ms = 0;
  m_graph = cuda::GraphExec();
  DLR_RETURN_IF_ERROR(warm_kernels());
  if (m_options.cuda_graph) DLR_RETURN_IF_ERROR(capture_at_open(&eager_ms));
  if (m_graph && m_from_storage) DLR_CUDA_CHECK(cudaGraphUpload(m_graph.get(), m_stream.get()));
  const auto t2 = Clock::now();
  if (m_open_timing.warmup_run && !m_open_timing.warmup_eager) {
    if (m_graph && !m_from_storage) {
      DLR_CUDA_CHECK(cudaGraphLaunch(m_graph.get(), m_stream.get()));
      DLR_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
      pool_overwritten();  // the replay's copies
    } else {
      DLR_RETURN_IF_ERROR(warm_up_eagerly(&eager_ms));
    }
  }
  m_open_timing.warmup_ms = eager_ms + ms_since(t2);
  m_finalized = true;
  DLR_LOG_DEBUG("cuda engine: {} ({:.1f} ms)",
                !m_open_timing.warmup_run    ? "no warm-up: the first inference loads the kernels"
                : m_open_timing.warmup_eager ? "warm-up done (eager)"
                                             : "warm-up done (the graph's first replay)",
                m_open_timing.warmup_ms);
  return Status();
}

Status CudaEngine::make_layer_events() {
  if (!m_options.profile_layers || !m_ev_layer_start.empty()) return Status();
  for (auto* v : {&m_ev_layer_start, &m_ev_layer_ready, &m_ev_layer_end}) {
    for (size_t i = 0; i < m_plan.steps.size(); ++i) {
      DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(true));
      v->push_back(std::move(ev));
    }
  }
  return Status();
}

Status CudaEngine::warm_up_eagerly(double* ms) {
  const auto te = Clock::now();
  // From storage the warm-up runs the layers alone on whatever the pool holds: a full
  // read of the weights would only delay the first detection.
  m_kernels_only = m_from_storage;
  const Status warm = enqueue_network(false);
  m_kernels_only = false;
  DLR_RETURN_IF_ERROR(warm);
  DLR_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
  pool_overwritten();  // the warm-up's copies
  m_open_timing.warmup_eager = true;
  *ms = ms_since(te);
  return Status();
}

Status CudaEngine::capture_at_open(double* eager_ms) {
  const auto t1 = Clock::now();
  Status st = capture_graph();
  if (!st.ok()) {
    DLR_LOG_DEBUG("cuda engine: graph capture without an eager run first failed ({}); warming up eagerly",
                  st.message());
    DLR_RETURN_IF_ERROR(warm_up_eagerly(eager_ms));
    st = capture_graph();
  }
  m_open_timing.graph_ms = ms_since(t1) - *eager_ms;
  if (!st.ok()) DLR_LOG_WARN("CUDA graph capture failed, running without a graph: {}", st.message());
  DLR_LOG_DEBUG("cuda engine: graph {} ({:.1f} ms)", m_graph ? "captured" : "not used", m_open_timing.graph_ms);
  return Status();
}

Expected<cuda::GraphExec> CudaEngine::capture(const std::function<Status()>& enqueue) {
  cudaStream_t s = m_stream.get();
  cudaGraph_t graph = nullptr;
  DLR_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  m_capturing = true;
  const Status st = enqueue();
  m_capturing = false;
  // The enqueue failed after forking the copy, expand or output stream into the capture: join it
  // back, or the capture cannot end cleanly (cudaErrorStreamCaptureUnjoined).
  auto join = [s](const cuda::Stream& forked, const cuda::Event& ev) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (!forked || cudaStreamIsCapturing(forked.get(), &cs) != cudaSuccess || cs != cudaStreamCaptureStatusActive)
      return;
    DLR_CUDA_CHECK_LOG(cudaEventRecord(ev.get(), forked.get()));
    DLR_CUDA_CHECK_LOG(cudaStreamWaitEvent(s, ev.get(), 0));
  };
  if (!st.ok()) {
    join(m_copy_stream, m_join);
    join(m_expand_stream, m_ex_join);
    join(m_out_stream, m_out_join);
    m_out_forked = false;
  }
  const cudaError_t end = cudaStreamEndCapture(s, &graph);
  // A failed end of capture leaves its error as the thread's last CUDA error, which the
  // next launch check (cudaGetLastError) would report as its own: clear it here.
  if (end != cudaSuccess) (void)cudaGetLastError();
  if (!st.ok()) {
    if (graph) DLR_CUDA_CHECK_LOG(cudaGraphDestroy(graph));
    return st;
  }
  if (end != cudaSuccess) return cuda::cuda_status(end, "cudaStreamEndCapture", __FILE__, __LINE__);
  cudaGraphExec_t exec = nullptr;
  if (fault::hit(cuda::kFaultSite)) {  // a checked call (cuda_check.h): skipped and failed
    DLR_CUDA_CHECK_LOG(cudaGraphDestroy(graph));
    return cuda::injected(cuda::cuda_status(cudaErrorUnknown, "cudaGraphInstantiate", __FILE__, __LINE__));
  }
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  DLR_CUDA_CHECK_LOG(cudaGraphDestroy(graph));
  if (inst != cudaSuccess) return cuda::cuda_status(inst, "cudaGraphInstantiate", __FILE__, __LINE__);
  return cuda::GraphExec(exec);
}

// Both graphs or neither: after a failure the engine holds no graph (never one of an
// earlier placement) and runs eagerly.
Status CudaEngine::capture_graph() {
  m_graph = cuda::GraphExec();
  m_graph_body = cuda::GraphExec();
  if (!ring_ready()) return Status();  // captured once the runtime binds the ring (bind_ring)
  DLR_ASSIGN_OR_RETURN(cuda::GraphExec graph, capture([&] { return enqueue_network(m_options.profile_layers); }));
  cuda::GraphExec body;
  // Without the leading units a prefetch (a Runtime) or the previous inference's tail copied.
  const int skip = prefetch_units() > 0 ? prefetch_units() : tail_units();
  if (skip > 0) {
    m_skip_units = skip;
    Expected<cuda::GraphExec> b = capture([&] { return enqueue_network(m_options.profile_layers); });
    m_skip_units = 0;
    DLR_RETURN_IF_ERROR(b.status());
    body = std::move(b).value();
  }
  m_graph = std::move(graph);
  m_graph_body = std::move(body);
  return Status();
}

}  // namespace dlr
