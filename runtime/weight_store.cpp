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

Expected<HostBuffer> HostBuffer::aligned(size_t bytes, Free before_free) {
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
  return HostBuffer(p, bytes, [before_free](void* q) {
    if (before_free) before_free(q);
    std::free(q);
  });
}

Expected<WeightStore> WeightStore::create(const ExecutionPlan& plan, WeightSource& source,
                                          const HostAllocator& alloc, int threads) {
  return create_subset(plan, source, alloc, std::vector<char>(plan.weights.size(), 1), threads);
}

namespace {

// One piece of preparation work: filters [begin, end) of a blob (the whole blob where
// the source does not split).
struct PrepTask {
  int blob = 0;
  int begin = 0;
  int end = 0;
  bool whole = true;
};

// The held blobs cut into tasks of about kTaskBytes each, in plan order: a large blob
// is shared by several threads, so that the slowest thread ends with the others.
constexpr int64_t kTaskBytes = int64_t(256) << 10;

std::vector<PrepTask> prep_tasks(const ExecutionPlan& plan, const WeightSource& source,
                                 const std::vector<int64_t>& offsets, int threads) {
  std::vector<PrepTask> tasks;
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] < 0) continue;
    const WeightBlob& b = plan.weights[i];
    const Step& st = plan.steps[size_t(b.step)];
    const int filters = st.kind == LayerKind::kConv ? std::get<ConvParams>(st.params).filters : 0;
    if (!source.splits() || threads <= 1 || filters <= 1 || b.bytes <= kTaskBytes) {
      tasks.push_back({int(i), 0, filters, true});
      continue;
    }
    const int parts = int(std::min<int64_t>(filters, (b.bytes + kTaskBytes - 1) / kTaskBytes));
    for (int k = 0; k < parts; ++k)
      tasks.push_back({int(i), int(int64_t(filters) * k / parts), int(int64_t(filters) * (k + 1) / parts), false});
  }
  return tasks;
}

}  // namespace

Status prepare_blobs(const ExecutionPlan& plan, WeightSource& source, const std::vector<int64_t>& offsets, char* base,
                     int threads) {
  const int n_threads = source.concurrent() ? std::max(threads, 1) : 1;
  const std::vector<PrepTask> tasks = prep_tasks(plan, source, offsets, n_threads);
  auto one = [&](const PrepTask& t) {
    const WeightBlob& b = plan.weights[size_t(t.blob)];
    char* dst = base + offsets[size_t(t.blob)];
    return t.whole ? source.prepare(b, plan.options.layout, dst)
                   : source.prepare_filters(b, plan.options.layout, dst, t.begin, t.end);
  };
  const int team_size = std::min<int>(n_threads, int(tasks.size()));
  if (team_size <= 1) {
    for (const PrepTask& t : tasks) DLR_RETURN_IF_ERROR(one(t));
    return Status();
  }
  std::vector<Status> status(tasks.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (size_t k = next++; k < tasks.size() && !failed; k = next++) {
      status[k] = one(tasks[k]);
      if (!status[k].ok()) failed = true;
    }
  };
  std::vector<std::thread> team;
  for (int t = 1; t < team_size; ++t) team.emplace_back(work);
  work();
  for (std::thread& t : team) t.join();
  for (const Status& st : status)
    if (!st.ok()) return st;
  return Status();
}

std::vector<UploadChunk> upload_chunks(const ExecutionPlan& plan, const std::vector<int64_t>& offsets,
                                       int64_t chunk_bytes) {
  std::vector<UploadChunk> chunks;
  for (size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] < 0) continue;
    const int64_t bytes = plan.weights[i].bytes;
    const bool joins = !chunks.empty() && chunks.back().bytes + bytes <= chunk_bytes &&
                       chunks.back().offset + chunks.back().bytes == offsets[i];
    if (joins) {
      chunks.back().bytes += bytes;
    } else {
      chunks.push_back({int(i), int(i) + 1, offsets[i], bytes});
    }
    chunks.back().end = int(i) + 1;
  }
  return chunks;
}

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
