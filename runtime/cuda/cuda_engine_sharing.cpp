// CudaEngine's facets for a Runtime (runtime/engine_sharing.h): binding to the
// runtime's arena, workspace and shared ring, and the prefetch of the next inference's
// leading units on the copy stream (giving one up for another engine's run).
#include <algorithm>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "runtime/cuda/cuda_engine_impl.h"

namespace dlr {

Status CudaEngine::bind_shared(void* arena, int64_t arena_bytes, void* workspace, int64_t workspace_bytes) {
  if (!m_options.shared_memory) return invalid_argument("bind_shared: this engine owns its memory");
  if (arena_bytes < m_plan.arena_bytes || workspace_bytes < int64_t(m_workspace_need) ||
      (arena == nullptr && m_plan.arena_bytes > 0))
    return invalid_argument("bind_shared: " + std::to_string(arena_bytes) + " arena and " +
                            std::to_string(workspace_bytes) + " workspace bytes for an engine needing " +
                            std::to_string(m_plan.arena_bytes) + " and " + std::to_string(m_workspace_need));
  m_arena_ptr = static_cast<char*>(arena);
  m_workspace_ptr = workspace;
  m_workspace_bytes = size_t(workspace_bytes);
  m_bound = true;
  // The graphs hold the old addresses.
  if (m_graph) DLR_RETURN_IF_ERROR(capture_graph());
  return Status();
}

Status CudaEngine::bind_ring(void* base, int64_t bytes, int64_t start) {
  if (!m_options.shared_ring) return invalid_argument("bind_ring: this engine owns its pool");
  if (!uses_shared_ring()) return Status();  // its plan keeps every blob resident: no ring
  if (base == nullptr || bytes != m_stream_plan.pool_bytes || start < 0 || start >= bytes)
    return invalid_argument("bind_ring: a ring of " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(start) + " for a plan streaming through " +
                            std::to_string(m_stream_plan.pool_bytes));
  if (m_sring_base == base && m_sring_bytes == bytes && m_sring_start == start && (m_graph || !m_finalized))
    return Status();  // bound there already
  m_sring_base = static_cast<char*>(base);
  m_sring_bytes = bytes;
  m_sring_start = start;
  pool_overwritten();  // a prefetch went to the old place
  // The graphs hold the old addresses.
  if (m_finalized && m_options.cuda_graph) DLR_RETURN_IF_ERROR(capture_graph());
  return Status();
}

Status CudaEngine::drop_prefetch(Engine& waiter) {
  if (m_prefetch_issued == 0) return Status();
  auto* w = dynamic_cast<CudaEngine*>(&waiter);
  if (w == nullptr) return internal_error("drop_prefetch: the waiter is not a CUDA engine");
  // The waiter's compute stream orders everything it enqueues next (its graph, its copy
  // stream's fork) after this engine's prefetch copies.
  DLR_CUDA_CHECK(cudaStreamWaitEvent(w->m_stream.get(), m_prefetch_done.get(), 0));
  m_prefetch_issued = 0;
  return Status();
}

int64_t CudaEngine::prefetch_issued_bytes() const {
  int64_t bytes = 0;
  for (int u = 0; u < m_prefetch_issued; ++u) bytes += m_stream_plan.units[size_t(u)].bytes;
  return bytes;
}

Status CudaEngine::prefetch(Engine* after, int64_t limit_bytes, Engine* behind) {
  const int all = prefetch_units();
  const int n = limit_bytes < 0 ? all : std::min(all, m_stream_plan.prefetch_units_within(limit_bytes));
  if (n <= m_prefetch_issued || m_weights_deferred || !m_host || !ring_ready()) return Status();
  cudaStream_t cs = m_stream.get();
  cudaStream_t ps = m_copy_stream.get();
  // After whatever the compute stream still holds (a failed run may have left work that
  // reads the pool); normally that is nothing, run() having synchronised.
  DLR_CUDA_CHECK(cudaEventRecord(m_fork.get(), cs));
  DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, m_fork.get(), 0));
  // After the launched engine's own copies: the copy engine is a FIFO that its inference
  // needs first (a prefetch in between would delay its input upload and its units).
  auto* other = dynamic_cast<CudaEngine*>(after);
  if (other && other != this && other->m_copies_end)
    DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, other->m_copies_end.get(), 0));
  // Shared ring: the launched engine may still read the ring bytes these copies fill;
  // each copy waits for the layer of it that reads them last (its release events).
  const bool shared = uses_shared_ring();
  const bool cross = shared && other && other != this && other->uses_shared_ring() &&
                     other->m_sring_base == m_sring_base;
  // ... and after what the launched engine's compute stream waited for before its
  // inference: a prefetch of a third model given up for it (drop_prefetch) may still be
  // copying into these bytes, and a resident model records no copies to wait for.
  if (shared && other && other != this) DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, other->m_ev_start.get(), 0));
  // Behind another engine's prefetch just enqueued (it runs first: its copies go first).
  auto* first_in_line = dynamic_cast<CudaEngine*>(behind);
  if (first_in_line && first_in_line != this && first_in_line->m_prefetch_issued > 0)
    DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, first_in_line->m_prefetch_done.get(), 0));
  int waited = -1;  // release events are in layer order: a later one covers the earlier ones
  // Runs of units contiguous on both sides go as one copy: the host cost of the enqueue
  // (inside another model's run() when a Runtime calls this) stays a few microseconds.
  // In the shared ring a run stays inside one prefetch chunk (the first layers wait
  // for their chunk only). A call with a limit may end inside a chunk: the call that
  // goes on from there records the chunk's event.
  for (int first = m_prefetch_issued; first < n;) {
    const TransferUnit& u0 = m_stream_plan.units[size_t(first)];
    const int chunk = shared ? prefetch_chunk(first) : 0;
    const int chunk_end = shared ? m_chunk_first[size_t(chunk) + 1] : n;
    int64_t bytes = u0.bytes;
    int next = first + 1;
    for (; next < std::min(chunk_end, n); ++next) {
      const TransferUnit& u = m_stream_plan.units[size_t(next)];
      if (u.host_offset != u0.host_offset + bytes || u.pool_offset != u0.pool_offset + bytes) break;
      bytes += u.bytes;
    }
    const int64_t pos = pool_pos(u0.pool_offset);
    if (cross) {
      const int release = other->release_index(pos, bytes);
      if (release > waited) {
        DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, other->m_release_ev[size_t(release)].get(), 0));
        waited = release;
      }
    }
    DLR_CUDA_CHECK(cudaMemcpyAsync(pool_base() + pos, copy_source(u0), size_t(bytes), cudaMemcpyHostToDevice, ps));
    if (shared && next == chunk_end) DLR_CUDA_CHECK(cudaEventRecord(m_chunk_ev[size_t(chunk)].get(), ps));
    first = next;
  }
  DLR_CUDA_CHECK(cudaEventRecord(m_prefetch_done.get(), ps));
  m_prefetch_issued = n;
  return Status();
}

}  // namespace dlr
