// CudaEngine's weights from storage (docs/streaming.md sections 7 and 9): the staging
// area, the read pipeline, and the two ways an inference follows the reads.
//  - Graph (EngineSettings::cuda_graph): the inference is captured once; each copy (three
//    stages) or each layer reading mapped staging (zero copy) waits on the device for its
//    read, a kernel polling the pipeline's landed word (kernels/cuda/host_wait.h), so a
//    replay is one launch whatever the reads do. The reader waits for the copies or
//    layers that last used the staging it refills through events recorded inside the
//    graph as external nodes (m_read_release, m_layer_done): every replay records them.
//  - Eager (no graph): the engine's thread enqueues layer by layer and waits for each
//    read in ReadPipeline::wait_unit().
#include <cstring>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/host_wait.h"
#include "runtime/core/log.h"
#include "runtime/cuda/cuda_engine_impl.h"
#include "runtime/core/units.h"

namespace dlr {
namespace {

// A device wait for a read gives up after this long (a reader that never publishes
// would otherwise hold the GPU forever); the inference then fails with a line naming the read.
constexpr uint64_t kReadWaitTimeoutNs = uint64_t(120) * 1000 * 1000 * 1000;

}  // namespace

std::vector<ReadTiming> CudaEngine::read_timings() const {
  // Not while finalize()'s early reads are under way (the reader thread writes them).
  return m_pipeline && !m_reads_started ? m_pipeline->timings() : std::vector<ReadTiming>();
}

int64_t CudaEngine::read_cached_bytes() const {
  return m_pipeline && !m_reads_started ? m_pipeline->cached_bytes() : 0;
}

// The words a graph's device waits poll: one per read unit (the pipeline's landed
// words), then the inference the graph waits for, then the first wait that gave up.
Status CudaEngine::setup_read_words() {
  m_read_words = cuda::PinnedBuffer();
  m_read_words_host = nullptr;
  m_read_words_dev = nullptr;
  if (!m_options.cuda_graph) return Status();
  const size_t n = m_reads.units.size() + 2;
  DLR_ASSIGN_OR_RETURN(m_read_words, cuda::PinnedBuffer::alloc(n * sizeof(int32_t), cudaHostAllocMapped));
  std::memset(m_read_words.data(), 0, n * sizeof(int32_t));
  void* dev = nullptr;
  DLR_CUDA_CHECK(cudaHostGetDevicePointer(&dev, m_read_words.data(), 0));
  m_read_words_host = static_cast<int32_t*>(m_read_words.data());
  m_read_words_dev = static_cast<int32_t*>(dev);
  return Status();
}

// The events the reader waits for before it refills staging: per copy unit (three
// stages) or per layer that ends a read's use (zero copy).
Status CudaEngine::make_release_events() {
  m_read_release.clear();
  if (m_reads.two_stage) {  // no copies: m_layer_done serves the reader alone
    m_layer_done.clear();
    m_layer_done.resize(m_plan.steps.size());
    for (size_t l = 0; l < m_plan.steps.size(); ++l)
      if (m_reads.layer_releases[l]) {
        DLR_ASSIGN_OR_RETURN(m_layer_done[l], cuda::make_event(false));
      }
    return Status();
  }
  for (size_t u = 0; u < m_stream_plan.units.size(); ++u) {
    DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(false));
    m_read_release.push_back(std::move(ev));
  }
  return Status();
}

Status CudaEngine::setup_storage_reads(WeightSource& source) {
  m_pipeline.reset();
  m_reads_started = false;
  m_staging = cuda::PinnedBuffer();
  m_staging_host = nullptr;
  m_staging_dev = nullptr;
  const BlobFile* file = source.blob_file();
  if (!file) return invalid_argument(source.name() + ": weights from storage need a prepared weight file");
  const bool two = m_reads.two_stage;
  // O_DIRECT needs 4096-aligned buffers; small pinned allocations may come from a
  // suballocator that does not page-align them (measured: yolo-fastest's 0.5 MiB
  // staging), so one extra page is allocated and the start rounded up.
  DLR_ASSIGN_OR_RETURN(m_staging, cuda::PinnedBuffer::alloc(size_t(m_reads.staging_bytes + kReadAlign),
                                                            two ? cudaHostAllocMapped : cudaHostAllocDefault));
  const uintptr_t raw = reinterpret_cast<uintptr_t>(m_staging.data());
  m_staging_host = reinterpret_cast<char*>((raw + kReadAlign - 1) / kReadAlign * kReadAlign);
  if (two) {
    void* dev = nullptr;
    DLR_CUDA_CHECK(cudaHostGetDevicePointer(&dev, m_staging.data(), 0));
    m_staging_dev = static_cast<char*>(dev) + (m_staging_host - static_cast<char*>(m_staging.data()));
  }
  DLR_RETURN_IF_ERROR(make_release_events());
  DLR_RETURN_IF_ERROR(setup_read_words());
  // The reader thread waits for the copy (three stages) or the layer (two stages) that
  // last used the staging it refills, of this inference or, reading ahead, of the one
  // before; the engine's thread has recorded that event (or launched the graph that does).
  auto event = [this](int index) -> cudaEvent_t {
    return m_reads.two_stage ? m_layer_done[size_t(index)].get() : m_read_release[size_t(index)].get();
  };
  // The reader thread makes this engine's device current before touching its events.
  ReadPipeline::DeviceWait wait;
  const int device = m_options.cuda_device;
  wait.ready = [event, device](int index) {
    return cudaSetDevice(device) == cudaSuccess && cudaEventQuery(event(index)) == cudaSuccess;
  };
  wait.wait = [event, device](int index) -> Status {
    DLR_CUDA_CHECK(cudaSetDevice(device));
    DLR_CUDA_CHECK(cudaEventSynchronize(event(index)));
    return Status();
  };
  wait.landed = m_read_words_host;
  // Read ahead: run() synchronises before it returns, so an inference starts with the
  // previous one's staging free (ReadPipeline's contract).
  DLR_ASSIGN_OR_RETURN(m_pipeline, ReadPipeline::open(m_reads, *file, m_staging_host, m_options.reader,
                                                      std::move(wait), m_options.prefetch_reads,
                                                      m_options.thread_placement, m_options.cache_hits));
  if (two)
    DLR_LOG_INFO("weights from storage, zero copy: {:.2f} MiB read from {} each inference into {:.2f} MiB of mapped "
                 "pinned staging that the kernels read ({} reads, {} in flight, {} reader)",
                 mib(m_reads.read_bytes()), source.name(), mib(m_reads.staging_bytes), m_reads.units.size(),
                 m_reads.queue_depth, reader_kind_name(m_pipeline->reader_kind()));
  return Status();
}

// Before copy unit `unit` (three stages) or a layer reading it from mapped staging (zero
// copy), on `s`: inside a capture, a device wait for its read; else this thread waits.
Status CudaEngine::wait_for_read(int unit, cudaStream_t s) {
  if (!m_capturing) return m_pipeline->wait_unit(unit);
  if (!m_read_words_dev) return internal_error("storage graph: captured without its read words");
  const int n = int(m_reads.units.size());
  cuda::HostWait w;
  w.word = m_read_words_dev + unit;
  w.target = m_read_words_dev + n;
  w.timed_out = m_read_words_dev + n + 1;
  w.code = unit + 1;
  w.timeout_ns = kReadWaitTimeoutNs;
  DLR_CUDA_CHECK(cuda::launch_host_wait(w, s));
  return Status();
}

// After copy unit `ui` is enqueued: the reader may refill its staging once its release
// event has completed (an external node inside a capture: every replay records it).
Status CudaEngine::release_read(int ui, cudaStream_t s) {
  DLR_CUDA_CHECK(cudaEventRecordWithFlags(m_read_release[size_t(ui)].get(), s,
                                          m_capturing ? cudaEventRecordExternal : cudaEventRecordDefault));
  if (!m_capturing) m_pipeline->progress(ui);
  return Status();
}

// One inference whose weights come from storage: enqueued (no graph) while the reads
// land; the reader's errors and this thread's are both reported, the reads drained.
Status CudaEngine::enqueue_network_storage(bool profile) {
  if (!m_reads_started) m_pipeline->start();  // else finalize() started this inference's reads already
  m_reads_started = false;
  const Status st = enqueue_network(profile);
  if (!st.ok()) {
    m_pipeline->abort();
    (void)m_pipeline->finish();
    return st;
  }
  return m_pipeline->finish();
}

// One inference from storage as a replay of the graph: the graph waits on the device for
// each read of inference `gen` (its number written for the waits to compare with). The
// launch records every release event, so the reader may then wait for any of them. A
// failed read releases the device's waits (ReadPipeline::DeviceWait::landed): the
// replay ends, then the error is returned.
Status CudaEngine::launch_storage_graph() {
  const int gen = m_reads_started ? m_pipeline->started() : m_pipeline->start();
  m_reads_started = false;
  __atomic_store_n(&m_read_words_host[m_reads.units.size()], int32_t(gen), __ATOMIC_RELEASE);
  const cudaError_t launched = cudaGraphLaunch(m_graph.get(), m_stream.get());
  if (launched != cudaSuccess) {
    m_pipeline->abort();
    (void)m_pipeline->finish();
    return cuda::cuda_status(launched, "cudaGraphLaunch", __FILE__, __LINE__);
  }
  m_pipeline->progress(m_reads.two_stage ? int(m_plan.steps.size()) - 1 : int(m_stream_plan.units.size()) - 1);
  const Status read = m_pipeline->finish();
  if (read.ok()) return Status();
  DLR_CUDA_CHECK_LOG(cudaStreamSynchronize(m_stream.get()));  // the staging is not read after run() returns
  return read;
}

// After a replay has ended: a device wait that gave up fails the inference.
Status CudaEngine::check_read_waits() {
  if (!m_read_words_host) return Status();
  int32_t* timed_out = &m_read_words_host[m_reads.units.size() + 1];
  const int32_t code = __atomic_load_n(timed_out, __ATOMIC_ACQUIRE);
  if (code == 0) return Status();
  __atomic_store_n(timed_out, 0, __ATOMIC_RELAXED);
  return internal_error("weights from storage: the GPU waited more than " +
                        std::to_string(kReadWaitTimeoutNs / 1000000000) + " s for read " + std::to_string(code - 1) +
                        " of the inference (the reader never announced it)");
}

}  // namespace dlr
