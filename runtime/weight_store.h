// Prepared weights in host memory, one blob per conv layer (ExecutionPlan::weights),
// laid out back to back at blob offsets. The CPU executor computes from it; the
// CUDA executors upload from it (preload) or stream from it (stream mode, where
// the memory is pinned: the allocator is injected).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/compile/plan.h"
#include "runtime/weight_source.h"

namespace dlr {

// Host memory owner with a custom free (plain aligned memory or pinned memory).
class HostBuffer {
 public:
  using Free = std::function<void(void*)>;
  HostBuffer() = default;
  HostBuffer(void* p, size_t bytes, Free f) : m_ptr(p), m_bytes(bytes), m_free(std::move(f)) {}
  HostBuffer(HostBuffer&& o) noexcept { *this = std::move(o); }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { reset(); }
  void reset();
  void* data() const { return m_ptr; }
  size_t bytes() const { return m_bytes; }

  // 4096-aligned pageable memory; from 2 MiB on, 2 MiB-aligned and advised as huge
  // pages (fails with kOutOfMemory). `before_free`, when given, runs on the memory
  // before it is freed (e.g. unpinning it).
  static Expected<HostBuffer> aligned(size_t bytes, Free before_free = {});

 private:
  void* m_ptr = nullptr;
  size_t m_bytes = 0;
  Free m_free;
};

using HostAllocator = std::function<Expected<HostBuffer>(size_t bytes)>;

// Prepares the blobs of `plan` whose offsets[b] >= 0 into base + offsets[b], on up to
// `threads` threads where the source is concurrent() (large blobs in parts where it
// splits()); the bytes do not depend on the thread count. The first failing task's error,
// in plan order, after every started task ended.
Status prepare_blobs(const ExecutionPlan& plan, WeightSource& source, const std::vector<int64_t>& offsets, char* base,
                     int threads);

// A run of blobs uploaded together: blobs [first, end) of the plan, those held
// (offsets >= 0) lying back to back at [offset, offset + bytes).
struct UploadChunk {
  int first = 0;
  int end = 0;
  int64_t offset = 0;
  int64_t bytes = 0;
};

// The held blobs (offsets[b] >= 0, each blob's bytes after the one before it) grouped
// in plan order into chunks of at most `chunk_bytes`; a larger blob is a chunk alone.
std::vector<UploadChunk> upload_chunks(const ExecutionPlan& plan, const std::vector<int64_t>& offsets,
                                       int64_t chunk_bytes);

class WeightStore {
 public:
  // Prepares every blob of `plan` from `source` into one host allocation from `alloc`
  // (default: HostBuffer::aligned), blob by blob; on up to `threads` threads when the
  // source is concurrent() (the bytes do not depend on the thread count).
  static Expected<WeightStore> create(const ExecutionPlan& plan, WeightSource& source,
                                      const HostAllocator& alloc = {}, int threads = 1);
  // Only the blobs `hold` marks (per plan.weights entry, non-zero = held), back to back
  // in plan order; blob_offset() of a blob not held is -1.
  static Expected<WeightStore> create_subset(const ExecutionPlan& plan, WeightSource& source,
                                             const HostAllocator& alloc, const std::vector<char>& hold,
                                             int threads = 1);

  const void* blob(int index) const { return static_cast<const char*>(m_buffer.data()) + m_offsets[size_t(index)]; }
  int64_t blob_offset(int index) const { return m_offsets[size_t(index)]; }
  int64_t bytes() const { return int64_t(m_buffer.bytes()); }
  const void* data() const { return m_buffer.data(); }

 private:
  HostBuffer m_buffer;
  std::vector<int64_t> m_offsets;
};

}  // namespace dlr
