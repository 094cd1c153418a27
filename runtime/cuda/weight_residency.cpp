// How weights reach the device, and the enqueue of one inference, for both
// weight modes of CudaEngine (preload, stream). See docs/streaming.md sections 1 and 6.
#include <cstring>

#include "kernels/cuda/cuda_check.h"
#include "runtime/core/fault_injection.h"
#include "runtime/core/log.h"
#include "runtime/cpu/cpu_threads.h"
#include "runtime/cuda/cuda_engine_impl.h"
#include "runtime/cuda/weight_upload.h"
#include "runtime/core/units.h"

namespace dlr {
namespace {

// Host memory for a pinned store: pageable and 2 MiB-aligned (HostBuffer::aligned), so
// that the threads preparing the store fault its pages in, in parallel; pin_store()
// pins it in place afterwards. Unpinned before it is freed.
Expected<HostBuffer> pinnable_host(size_t bytes) {
  return HostBuffer::aligned(bytes, [](void* q) {
    const cudaError_t e = cudaHostUnregister(q);
    if (e == cudaErrorHostMemoryNotRegistered || e == cudaErrorInvalidValue) {
      (void)cudaGetLastError();  // never pinned (an open that failed first): nothing to undo
    } else if (e != cudaSuccess) {
      DLR_LOG_ERROR("cudaHostUnregister failed: {}", cudaGetErrorString(e));
    }
  });
}

// Pins a store made with pinnable_host (cudaHostRegister: several times faster than
// cudaHostAlloc of the same bytes, which faults every page in on one thread).
Status pin_store(const WeightStore& store) {
  if (store.bytes() == 0) return Status();
  if (fault::hit("pinned_alloc"))
    return out_of_memory("pinning " + std::to_string(store.bytes()) + " bytes of host memory failed" +
                         fault::tag("pinned_alloc"));
  void* p = const_cast<void*>(store.data());
  const cudaError_t e = cudaHostRegister(p, size_t(store.bytes()), cudaHostRegisterDefault);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return out_of_memory("pinning " + std::to_string(store.bytes()) +
                         " bytes of host memory (cudaHostRegister) failed: " + cudaGetErrorString(e));
  }
  return Status();
}

}  // namespace

Status CudaEngine::setup_weights(WeightSource& source) {
  if (zero_copy()) return setup_storage_reads(source);
  if (!m_streaming) {
    // Preload: every blob back to back in one device buffer, prepared and uploaded in chunks.
    m_blob_offsets.clear();
    int64_t total = 0;
    for (const WeightBlob& b : m_plan.weights) {
      m_blob_offsets.push_back(total);
      total += b.bytes;
    }
    DLR_ASSIGN_OR_RETURN(m_weights, cuda::DeviceBuffer::alloc(size_t(total)));
    return upload(source, m_blob_offsets, static_cast<char*>(m_weights.data()));
  }

  return setup_stream_weights(source);
}

int CudaEngine::prepare_threads() const {
  return m_options.threads > 0 ? m_options.threads : available_cpus();
}

Status CudaEngine::upload(WeightSource& source, const std::vector<int64_t>& offsets, char* device) {
  UploadTiming t;
  DLR_RETURN_IF_ERROR(upload_blobs(m_plan, source, offsets, device, m_stream.get(), prepare_threads(), &t));
  m_open_timing.weights_prepare_ms += t.prepare_ms;
  m_open_timing.weights_threads = t.threads;
  DLR_LOG_DEBUG("weights uploaded: {} chunks through {:.1f} MiB of pinned buffers, prepared in {:.1f} ms on {} "
                "threads, {:.1f} ms waiting for copies",
                t.chunks, mib(t.pinned_bytes), t.prepare_ms, t.threads, t.wait_ms);
  return Status();
}

Status CudaEngine::setup_stream_weights(WeightSource& source) {
  // Streams and ordering events exist once; the placement below may be set up again by replan().
  if (!m_copy_stream) {
    DLR_ASSIGN_OR_RETURN(m_copies_end, cuda::make_event(false));
    DLR_ASSIGN_OR_RETURN(m_prefetch_done, cuda::make_event(false));  // at open: prefetch() runs inside inferences
    DLR_ASSIGN_OR_RETURN(m_copy_stream, cuda::make_stream());
    DLR_ASSIGN_OR_RETURN(m_fork, cuda::make_event(false));
    DLR_ASSIGN_OR_RETURN(m_join, cuda::make_event(false));
  }
  m_host.reset();
  m_ring = cuda::MirroredBuffer();
  m_weights = cuda::DeviceBuffer();
  m_resident = cuda::DeviceBuffer();
  if (uses_shared_ring()) {
    // The runtime's ring (bind_ring): nothing of its own.
  } else if (m_stream_plan.layout == PoolLayout::kRing && !m_stream_plan.resident) {
    DLR_ASSIGN_OR_RETURN(m_ring, cuda::MirroredBuffer::alloc(m_options.cuda_device, size_t(m_stream_plan.pool_bytes)));
  } else {
    DLR_ASSIGN_OR_RETURN(m_weights, cuda::DeviceBuffer::alloc(size_t(m_stream_plan.pool_bytes)));
  }
  DLR_RETURN_IF_ERROR(make_stream_events());
  if (m_weights_deferred) {
    DLR_LOG_DEBUG("stream mode: {:.2f} MiB pool for measuring kernel times; weights set up after the replan",
                  mib(m_stream_plan.pool_bytes));
    return Status();
  }
  const size_t n = m_plan.weights.size();
  std::vector<char> streamed(n, 1), resident(n, 0);
  std::vector<char> staged(n, 0);
  for (size_t b = 0; b < n; ++b)
    if (m_stream_plan.is_resident(int(b))) {
      streamed[b] = 0;
      resident[b] = 1;
    } else if (m_stream_plan.is_staged(int(b))) {
      streamed[b] = 0;
      staged[b] = 1;
    }
  m_staged_host.reset();
  if (m_stream_plan.staged_bytes > 0) {
    // Blobs staged in the arena: a pinned store of their own (blobs back to back), copied
    // into the arena every inference.
    DLR_ASSIGN_OR_RETURN(WeightStore store,
                         WeightStore::create_subset(m_plan, source, pinnable_host, staged, prepare_threads()));
    DLR_RETURN_IF_ERROR(pin_store(store));
    DLR_ASSERT(store.bytes() == m_stream_plan.staged_bytes);
    for (size_t b = 0; b < n; ++b)
      if (staged[b]) DLR_ASSERT(store.blob_offset(int(b)) == m_stream_plan.blob_host_offset[b]);
    m_staged_host = std::make_unique<WeightStore>(std::move(store));
  }
  if (m_stream_plan.resident_bytes > 0) {
    // Resident blobs: prepared and uploaded chunk by chunk into the region (blobs back
    // to back in plan order, at their pool offsets).
    std::vector<int64_t> at(n, -1);
    int64_t total = 0;
    for (size_t b = 0; b < n; ++b)
      if (resident[b]) {
        DLR_ASSERT(m_stream_plan.blob_pool_offset[b] == total);
        at[b] = total;
        total += m_plan.weights[b].bytes;
      }
    DLR_ASSERT(total == m_stream_plan.resident_bytes);
    DLR_ASSIGN_OR_RETURN(m_resident, cuda::DeviceBuffer::alloc(size_t(total)));
    DLR_RETURN_IF_ERROR(upload(source, at, static_cast<char*>(m_resident.data())));
  }
  if (m_from_storage && !m_stream_plan.resident) {
    DLR_RETURN_IF_ERROR(setup_storage_reads(source));
    DLR_LOG_INFO("stream mode: {} pool of {:.2f} MiB for {:.2f} MiB of streamed weights read from {} each "
                 "inference through {:.2f} MiB of pinned staging ({} reads, {} in flight, {} reader), {:.2f} MiB "
                 "resident beside it",
                 pool_layout_name(m_stream_plan.layout), mib(m_stream_plan.pool_bytes),
                 mib(m_stream_plan.host_store_bytes()), source.name(), mib(m_reads.staging_bytes),
                 m_reads.units.size(), m_reads.queue_depth, reader_kind_name(m_pipeline->reader_kind()),
                 mib(m_stream_plan.resident_bytes));
    return Status();
  }
  // The host store of the streamed blobs, filled blob by blob from the source: pinned
  // (copied every inference), or ordinary memory freed after the one copy at open
  // when weights come from storage and every blob fits the budget.
  const bool once = m_from_storage;
  DLR_ASSIGN_OR_RETURN(WeightStore store,
                       WeightStore::create_subset(m_plan, source, once ? HostAllocator() : pinnable_host, streamed,
                                                  prepare_threads()));
  if (!once) DLR_RETURN_IF_ERROR(pin_store(store));
  m_host = std::make_unique<WeightStore>(std::move(store));
  for (size_t b = 0; b < n; ++b)
    if (streamed[b]) DLR_ASSERT(m_host->blob_offset(int(b)) == m_stream_plan.blob_host_offset[b]);
  if (m_stream_plan.resident) {
    // Every streamed blob has its own region: copy once now; inferences copy nothing.
    for (const TransferUnit& u : m_stream_plan.units)
      DLR_CUDA_CHECK(cudaMemcpy(pool_base() + u.pool_offset,
                                static_cast<const char*>(m_host->data()) + u.host_offset, size_t(u.bytes),
                                cudaMemcpyHostToDevice));
    if (once) m_host.reset();
  }
  DLR_LOG_INFO("stream mode: {} pool of {:.2f} MiB ({} slots of {:.2f} MiB) for {:.2f} MiB of streamed weights, "
               "{:.2f} MiB resident beside it, {} copies per inference (profile {})",
               m_stream_plan.resident ? "resident" : pool_layout_name(m_stream_plan.layout),
               mib(m_stream_plan.pool_bytes), m_stream_plan.slots, mib(m_stream_plan.slot_bytes),
               mib(m_stream_plan.resident ? m_stream_plan.total_weight_bytes : m_stream_plan.host_store_bytes()),
               mib(m_stream_plan.resident_bytes),
               m_stream_plan.resident ? 0 : m_stream_plan.units.size(), m_profile_name);
  return Status();
}

Status CudaEngine::make_stream_events() {
  m_copy_done.clear();
  m_layer_done.clear();
  m_ev_copy_start.clear();
  m_ev_copy_end.clear();
  for (size_t u = 0; u < m_stream_plan.units.size(); ++u) {
    DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(false));
    m_copy_done.push_back(std::move(ev));
  }
  m_layer_done.resize(m_plan.steps.size());
  std::vector<int> waited = m_stream_plan.tail_waits;  // the tail copies' waits, then the units'
  for (const auto& waits : m_stream_plan.unit_waits) waited.insert(waited.end(), waits.begin(), waits.end());
  for (int layer : waited)
    if (layer >= 0 && !m_layer_done[size_t(layer)]) {
      DLR_ASSIGN_OR_RETURN(m_layer_done[size_t(layer)], cuda::make_event(false));
    }
  DLR_RETURN_IF_ERROR(make_ring_events());
  m_ev_tail_start.clear();
  m_ev_tail_end.clear();
  if (m_options.profile_layers) {
    for (auto* v : {&m_ev_copy_start, &m_ev_copy_end})
      for (size_t u = 0; u < m_stream_plan.units.size(); ++u) {
        DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(true));
        v->push_back(std::move(ev));
      }
    for (auto* v : {&m_ev_tail_start, &m_ev_tail_end})
      for (int k = 0; k < tail_units(); ++k) {
        DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(true));
        v->push_back(std::move(ev));
      }
  }
  return Status();
}

Status CudaEngine::make_ring_events() {
  m_release_layer.clear();
  m_release_end.clear();
  m_release_ev.clear();
  m_chunk_first.clear();
  m_chunk_ev.clear();
  if (!uses_shared_ring()) return Status();
  // Release points: the next model's prefetch overwrites at most the ring's worth of this
  // stream's last bytes, [S - R, S); kReleasePoints layers spread over them by bytes.
  constexpr int kReleasePoints = 16;
  const int64_t total = m_stream_plan.ring_streamed_bytes();
  const int64_t lo = std::max<int64_t>(0, total - m_stream_plan.pool_bytes);
  size_t b = 0;  // the streamed blob holding byte t - 1
  for (int k = 1; k <= kReleasePoints; ++k) {
    const int64_t t = lo + (total - lo) * k / kReleasePoints;
    if (t <= 0) continue;
    for (; b < m_plan.weights.size(); ++b) {
      if (!m_stream_plan.in_ring(int(b))) continue;
      if (m_stream_plan.blob_host_offset[b] + m_plan.weights[b].bytes >= t) break;
    }
    if (b == m_plan.weights.size()) break;
    const int layer = m_plan.weights[b].step;
    if (!m_release_layer.empty() && m_release_layer.back() == layer) continue;
    m_release_layer.push_back(layer);
    m_release_end.push_back(m_stream_plan.blob_host_offset[b] + m_plan.weights[b].bytes);
    DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(false));
    m_release_ev.push_back(std::move(ev));
  }
  // Prefetch chunks: the leading units in up to kChunks runs of about equal bytes.
  constexpr int kChunks = 8;
  const int n = prefetch_units();
  if (n > 0) {
    const int64_t all = m_stream_plan.prefetch_bytes();
    int64_t sum = 0;
    m_chunk_first.push_back(0);
    for (int u = 0; u < n; ++u) {
      sum += m_stream_plan.units[size_t(u)].bytes;
      const int c = int(m_chunk_first.size());  // the chunk boundary being looked for
      if (u + 1 < n && sum * kChunks >= all * c) m_chunk_first.push_back(u + 1);
    }
    m_chunk_first.push_back(n);
    for (size_t c = 0; c + 1 < m_chunk_first.size(); ++c) {
      DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(false));
      m_chunk_ev.push_back(std::move(ev));
    }
  }
  return Status();
}

int CudaEngine::prefetch_chunk(int unit) const {
  int c = 0;
  while (c + 2 < int(m_chunk_first.size()) && m_chunk_first[size_t(c) + 1] <= unit) ++c;
  return c;
}

int CudaEngine::release_index(int64_t pos, int64_t bytes) const {
  if (!uses_shared_ring() || m_release_ev.empty() || m_sring_bytes <= 0 || bytes <= 0) return -1;
  const int64_t R = m_sring_bytes;
  const int64_t S = m_stream_plan.ring_streamed_bytes();
  auto mod = [R](int64_t x) { return ((x % R) + R) % R; };
  // This stream's byte p lives at ring offset (start + p) % R; the last one written at
  // ring offset r is p(r) = S - 1 - ((r_last - r) mod R), with r_last its last byte's offset.
  // Over [pos, pos + bytes) the largest p is S - 1 if r_last is inside, else at the end.
  const int64_t r_last = mod(m_sring_start + S - 1);
  const int64_t p = mod(r_last - pos) < bytes ? S - 1 : S - 1 - mod(r_last - (pos + bytes - 1));
  if (p < 0) return -1;  // bytes this run never wrote: an earlier model's, long done
  for (size_t k = 0; k < m_release_end.size(); ++k)
    if (m_release_end[k] > p) return int(k);
  return int(m_release_end.size()) - 1;
}

Status CudaEngine::enqueue_network(bool profile) {
  cudaStream_t cs = m_stream.get();
  cudaStream_t ps = m_copy_stream.get();
  // Timing events: inside a graph capture they must be external record nodes so that
  // every replay records them (device timestamps without host launch gaps).
  const unsigned timing_flags = m_capturing ? cudaEventRecordExternal : cudaEventRecordDefault;
  auto stamp = [&](const cuda::Event& ev, cudaStream_t s) -> Status {
    DLR_CUDA_CHECK(cudaEventRecordWithFlags(ev.get(), s, timing_flags));
    return Status();
  };
  const bool copies = m_streaming && !m_stream_plan.resident && !m_kernels_only;
  const int skipped = m_skip_units;
  m_out_forked = false;  // a failed enqueue before may have left it set
  // Shared ring: prefetched units are waited for chunk by chunk, from inside the graph
  // (external wait nodes: prefetch() records the events before each replay).
  const bool chunked = skipped > 0 && uses_shared_ring();
  const unsigned wait_flags = m_capturing ? cudaEventWaitExternal : cudaEventWaitDefault;
  if (copies) {  // the copy stream joins after everything already on the compute stream
    DLR_CUDA_CHECK(cudaEventRecord(m_fork.get(), cs));
    DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, m_fork.get(), 0));
    // ... and after the prefetch's copies (the copy engine brings the units in order).
    if (chunked) DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, m_prefetch_done.get(), wait_flags));
  }
  // A wait implied by an earlier one on the same stream is skipped: copies finish in
  // order on the copy stream and layers in order on the compute stream, so having
  // waited for unit u (layer L) covers every unit < u (layer < L). Each cross-stream
  // edge costs the graph a few microseconds.
  Expansion x;  // int8 weights: expanded on their own stream ahead of their step
  x.copies = copies;
  x.skipped = skipped;
  x.chunked = chunked;
  x.wait_flags = wait_flags;
  if (zero_copy() && !m_kernels_only) x.read_through = -1;  // expanded once the thread has waited for the read
  DLR_RETURN_IF_ERROR(expand_begin(&x));
  int waited_unit = -1;   // compute stream: the highest unit waited for
  int waited_layer = -1;  // copy stream: the highest layer waited for
  int waited_chunk = -1;  // compute stream: the highest prefetch chunk waited for
  size_t next_release = 0;  // shared ring: the next release event to record
  auto enqueue_copy = [&](int ui) -> Status {
    if (ui < skipped) return Status();  // prefetch() copied it; run() waited for it
    const TransferUnit& u = m_stream_plan.units[size_t(ui)];
    for (int layer : m_stream_plan.unit_waits[size_t(ui)]) {
      if (layer <= waited_layer) continue;
      DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, m_layer_done[size_t(layer)].get(), 0));
      waited_layer = layer;
    }
    if (profile) DLR_RETURN_IF_ERROR(stamp(m_ev_copy_start[size_t(ui)], ps));
    if (m_pipeline) DLR_RETURN_IF_ERROR(wait_for_read(ui, ps));  // its bytes are in staging
    char* dst = u.in_arena ? arena_base() + u.pool_offset : pool_base() + pool_pos(u.pool_offset);
    DLR_CUDA_CHECK(cudaMemcpyAsync(dst, copy_source(u), size_t(u.bytes), cudaMemcpyHostToDevice, ps));
    DLR_CUDA_CHECK(cudaEventRecord(m_copy_done[size_t(ui)].get(), ps));
    if (m_pipeline) DLR_RETURN_IF_ERROR(release_read(ui, ps));  // its staging can be waited for
    if (profile) DLR_RETURN_IF_ERROR(stamp(m_ev_copy_end[size_t(ui)], ps));
    x.copied = ui;
    return expand_issue(&x);
  };
  auto enqueue_layer = [&](int layer) -> Status {
    const Step& st = m_plan.steps[size_t(layer)];
    if (profile) DLR_RETURN_IF_ERROR(stamp(m_ev_layer_start[size_t(layer)], cs));
    const int unit = copies && st.weight >= 0 ? m_stream_plan.blob_last_unit[size_t(st.weight)] : -1;
    if (unit > waited_unit && unit >= skipped) {
      waited_unit = unit;
      DLR_CUDA_CHECK(cudaStreamWaitEvent(cs, m_copy_done[size_t(waited_unit)].get(), 0));
    } else if (chunked && unit >= 0 && unit < skipped && prefetch_chunk(unit) > waited_chunk) {
      waited_chunk = prefetch_chunk(unit);
      DLR_CUDA_CHECK(cudaStreamWaitEvent(cs, m_chunk_ev[size_t(waited_chunk)].get(), wait_flags));
    }
    const bool two_stage = zero_copy() && !m_kernels_only;
    if (two_stage && m_reads.layer_read_unit[size_t(layer)] >= 0)  // its weights are in (mapped) staging
      DLR_RETURN_IF_ERROR(wait_for_read(m_reads.layer_read_unit[size_t(layer)], cs));
    if (two_stage) x.read_through = layer;
    DLR_RETURN_IF_ERROR(expand_before_kernels(st, &x));
    if (profile) DLR_RETURN_IF_ERROR(stamp(m_ev_layer_ready[size_t(layer)], cs));
    DLR_RETURN_IF_ERROR(enqueue_layer_kernels(st, cs, true));
    // Zero copy: the reader waits for it (an external node inside a capture).
    if ((copies || two_stage) && m_layer_done[size_t(layer)])
      DLR_CUDA_CHECK(cudaEventRecordWithFlags(m_layer_done[size_t(layer)].get(), cs,
                                              two_stage && m_capturing ? cudaEventRecordExternal : 0));
    // For the next model's prefetch (an external node inside a graph: recorded at each replay).
    if (copies && next_release < m_release_layer.size() && m_release_layer[next_release] == layer)
      DLR_CUDA_CHECK(cudaEventRecordWithFlags(m_release_ev[next_release++].get(), cs,
                                              m_capturing ? cudaEventRecordExternal : 0));
    if (two_stage && m_reads.layer_releases[size_t(layer)] && !m_capturing) m_pipeline->progress(layer);
    if (profile) DLR_RETURN_IF_ERROR(stamp(m_ev_layer_end[size_t(layer)], cs));
    return enqueue_output(layer, cs);
  };
  if (copies) {
    for (const StreamAction& a : m_stream_plan.order)
      DLR_RETURN_IF_ERROR(a.kind == StreamAction::Kind::kCopy ? enqueue_copy(a.index) : enqueue_layer(a.index));
    DLR_RETURN_IF_ERROR(enqueue_tail_copies(profile, &waited_layer));
    // For other engines' prefetch (an external node inside a graph: recorded at each replay).
    DLR_CUDA_CHECK(cudaEventRecordWithFlags(m_copies_end.get(), ps, m_capturing ? cudaEventRecordExternal : 0));
    DLR_CUDA_CHECK(cudaEventRecord(m_join.get(), ps));
    DLR_CUDA_CHECK(cudaStreamWaitEvent(cs, m_join.get(), 0));
  } else {
    for (const Step& st : m_plan.steps) DLR_RETURN_IF_ERROR(enqueue_layer(st.index));
  }
  DLR_RETURN_IF_ERROR(expand_end());
  return join_outputs(cs);
}

const char* CudaEngine::copy_source(const TransferUnit& u) const {
  if (m_pipeline) return m_staging_host + m_reads.copy_src_offset[size_t(u.index)];
  if (u.in_arena) return static_cast<const char*>(m_staged_host->data()) + u.host_offset;
  return static_cast<const char*>(m_host->data()) + u.host_offset;
}

Status CudaEngine::enqueue_tail_copies(bool profile, int* waited_layer) {
  cudaStream_t ps = m_copy_stream.get();
  // Timing events: external record nodes inside a capture (as enqueue_network's).
  const unsigned timing_flags = m_capturing ? cudaEventRecordExternal : cudaEventRecordDefault;
  const bool stamps = profile && m_ev_tail_start.size() == size_t(tail_units());
  for (int k = 0; k < tail_units(); ++k) {
    const TransferUnit& u = m_stream_plan.units[size_t(k)];
    const int layer = m_stream_plan.tail_waits[size_t(k)];  // -1: no byte of it is read in this inference
    if (layer > *waited_layer) {
      DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, m_layer_done[size_t(layer)].get(), 0));
      *waited_layer = layer;
    }
    if (stamps) DLR_CUDA_CHECK(cudaEventRecordWithFlags(m_ev_tail_start[size_t(k)].get(), ps, timing_flags));
    DLR_CUDA_CHECK(cudaMemcpyAsync(pool_base() + pool_pos(u.pool_offset), copy_source(u), size_t(u.bytes),
                                   cudaMemcpyHostToDevice, ps));
    if (stamps) DLR_CUDA_CHECK(cudaEventRecordWithFlags(m_ev_tail_end[size_t(k)].get(), ps, timing_flags));
  }
  return Status();
}

Status CudaEngine::read_profile(int skipped) {
  auto since_start = [&](const cuda::Event& ev, double* ms) -> Status {
    float v = 0;
    DLR_CUDA_CHECK(cudaEventElapsedTime(&v, m_ev_start.get(), ev.get()));
    *ms = v;
    return Status();
  };
  const bool copies = m_streaming && !m_stream_plan.resident;
  for (const Step& st : m_plan.steps) {
    LayerTiming& t = m_timings[size_t(st.index)];
    t.layer = st.layer;
    t.step = st.index;
    t.slice = st.slice;
    DLR_RETURN_IF_ERROR(since_start(m_ev_layer_start[size_t(st.index)], &t.start_ms));
    DLR_RETURN_IF_ERROR(since_start(m_ev_layer_ready[size_t(st.index)], &t.ready_ms));
    DLR_RETURN_IF_ERROR(since_start(m_ev_layer_end[size_t(st.index)], &t.end_ms));
    t.weight_bytes = copies && st.weight >= 0 ? m_plan.weights[size_t(st.weight)].bytes : 0;
  }
  m_copy_timings.clear();
  if (copies) {
    for (const TransferUnit& u : m_stream_plan.units) {
      if (u.index < skipped) continue;  // copied before the run (no events recorded)
      CopyTiming c;
      c.unit = u.index;
      c.first_layer = u.first_layer;
      c.bytes = u.bytes;
      DLR_RETURN_IF_ERROR(since_start(m_ev_copy_start[size_t(u.index)], &c.start_ms));
      DLR_RETURN_IF_ERROR(since_start(m_ev_copy_end[size_t(u.index)], &c.end_ms));
      m_copy_timings.push_back(c);
    }
    for (size_t k = 0; k < m_ev_tail_start.size() && k < size_t(tail_units()); ++k) {
      const TransferUnit& u = m_stream_plan.units[k];
      CopyTiming c;
      c.unit = u.index;
      c.first_layer = u.first_layer;
      c.bytes = u.bytes;
      c.next_inference = true;
      DLR_RETURN_IF_ERROR(since_start(m_ev_tail_start[k], &c.start_ms));
      DLR_RETURN_IF_ERROR(since_start(m_ev_tail_end[k], &c.end_ms));
      m_copy_timings.push_back(c);
    }
  }
  return Status();
}

}  // namespace dlr
