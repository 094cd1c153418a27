#include "runtime/multi/shared_memory.h"

#include <cstring>

#include "runtime/weight_store.h"

namespace dlr {
namespace {

class HostSharedMemory final : public SharedMemory {
 public:
  Status resize(int64_t arena_bytes, int64_t workspace_bytes) override {
    m_arena.reset();
    m_workspace.reset();
    if (arena_bytes > 0) {
      DLR_ASSIGN_OR_RETURN(m_arena, HostBuffer::aligned(size_t(arena_bytes)));
      std::memset(m_arena.data(), 0, m_arena.bytes());
    }
    if (workspace_bytes > 0) {
      DLR_ASSIGN_OR_RETURN(m_workspace, HostBuffer::aligned(size_t(workspace_bytes)));
    }
    return Status();
  }
  void* arena() const override { return m_arena.data(); }
  void* workspace() const override { return m_workspace.data(); }
  int64_t arena_bytes() const override { return int64_t(m_arena.bytes()); }
  int64_t workspace_bytes() const override { return int64_t(m_workspace.bytes()); }

 private:
  HostBuffer m_arena, m_workspace;
};

}  // namespace

std::unique_ptr<SharedMemory> host_shared_memory() { return std::make_unique<HostSharedMemory>(); }

}  // namespace dlr
