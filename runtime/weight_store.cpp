#include "runtime/weight_store.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "runtime/core/fault_injection.h"

namespace dlr {

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    m_ptr = o.m_ptr;
    m_bytes = o.m_bytes;
    m_free = std::move(o.m_free);
    o.m_ptr = nullptr;
    o.m_bytes = 0;
  }
  return *this;
}

void HostBuffer::reset() {
  if (m_ptr && m_free) m_free(m_ptr);
  m_ptr = nullptr;
  m_bytes = 0;
}

Expected<HostBuffer> HostBuffer::aligned(size_t bytes) {
  // From 2 MiB on: aligned to 2 MiB and advised as transparent huge pages, so that the
  // first touch costs one page fault per 2 MiB instead of one per 4 KiB (why:
  // docs/results/journal.md, 2026-11-28, CPU weight preparation).
  constexpr size_t kHuge = size_t(2) << 20;
  const size_t align = bytes >= kHuge ? kHuge : 4096;
  const size_t rounded = size_t(align_up(int64_t(bytes == 0 ? 1 : bytes), int64_t(align)));
  void* p = std::aligned_alloc(align, rounded);
  if (p != nullptr && align == kHuge) ::madvise(p, rounded, MADV_HUGEPAGE);  // advisory; failure is harmless
  if (p != nullptr && fault::hit("host_alloc")) {
    std::free(p);
    return out_of_memory("cannot allocate " + std::to_string(bytes) + " bytes of host memory" + fault::tag("host_alloc"));
  }
  if (!p) return out_of_memory("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  return HostBuffer(p, bytes, [](void* q) { std::free(q); });
}

Expected<WeightStore> WeightStore::create(const ExecutionPlan& plan, WeightSource& source,
                                          const HostAllocator& alloc, int threads) {
  return create_subset(plan, source, alloc, std::vector<char>(plan.weights.size(), 1), threads);
}

namespace {

// Prepares the held blobs into `base`, on up to `threads` threads where the source
// allows it; the error of the first failing blob in plan order.
Status prepare_blobs(const ExecutionPlan& plan, WeightSource& source, const std::vector<int64_t>& offsets,
                     char* base, int threads) {
  std::vector<int> todo;
  for (size_t i = 0; i < offsets.size(); ++i)
    if (offsets[i] >= 0) todo.push_back(int(i));
  auto one = [&](int i) { return source.prepare(plan.weights[size_t(i)], plan.options.layout, base + offsets[size_t(i)]); };
  const int n_threads = source.concurrent() ? std::min<int>(std::max(threads, 1), int(todo.size())) : 1;
  if (n_threads <= 1) {
    for (int i : todo) DLR_RETURN_IF_ERROR(one(i));
    return Status();
  }
  std::vector<Status> status(todo.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (size_t k = next++; k < todo.size() && !failed; k = next++) {
      status[k] = one(todo[k]);
      if (!status[k].ok()) failed = true;
    }
  };
  std::vector<std::thread> team;
  for (int t = 1; t < n_threads; ++t) team.emplace_back(work);
  work();
  for (std::thread& t : team) t.join();
  for (const Status& st : status)
    if (!st.ok()) return st;
  return Status();
}

}  // namespace

Expected<WeightStore> WeightStore::create_subset(const ExecutionPlan& plan, WeightSource& source,
                                                 const HostAllocator& alloc, const std::vector<char>& hold,
                                                 int threads) {
  DLR_ASSERT(hold.size() == plan.weights.size());
  WeightStore store;
  int64_t total = 0;
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    store.m_offsets.push_back(hold[i] ? total : -1);
    if (hold[i]) total += plan.weights[i].bytes;
  }
  auto buf = alloc ? alloc(size_t(total)) : HostBuffer::aligned(size_t(total));
  if (!buf.ok()) return buf.status();
  store.m_buffer = std::move(buf).value();
  DLR_RETURN_IF_ERROR(
      prepare_blobs(plan, source, store.m_offsets, static_cast<char*>(store.m_buffer.data()), threads));
  return store;
}

}  // namespace dlr
