#include "runtime/weight_store.h"

#include <cstdlib>
#include <cstring>

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
  const size_t rounded = size_t(align_up(int64_t(bytes == 0 ? 1 : bytes), 4096));
  void* p = std::aligned_alloc(4096, rounded);
  if (p != nullptr && fault::hit("host_alloc")) {
    std::free(p);
    return out_of_memory("cannot allocate " + std::to_string(bytes) + " bytes of host memory" + fault::tag("host_alloc"));
  }
  if (!p) return out_of_memory("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  return HostBuffer(p, bytes, [](void* q) { std::free(q); });
}

Expected<WeightStore> WeightStore::create(const ExecutionPlan& plan, WeightSource& source,
                                          const HostAllocator& alloc) {
  return create_subset(plan, source, alloc, std::vector<char>(plan.weights.size(), 1));
}

Expected<WeightStore> WeightStore::create_subset(const ExecutionPlan& plan, WeightSource& source,
                                                 const HostAllocator& alloc, const std::vector<char>& hold) {
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
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    if (!hold[i]) continue;
    const WeightBlob& w = plan.weights[i];
    DLR_RETURN_IF_ERROR(
        source.prepare(w, plan.options.layout, static_cast<char*>(store.m_buffer.data()) + store.m_offsets[i]));
  }
  return store;
}

}  // namespace dlr
