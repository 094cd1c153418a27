// The CUDA side of runtime/multi/shared_memory.h.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_handles.h"
#include "runtime/cuda/mirrored_buffer.h"
#include "runtime/multi/shared_memory.h"

namespace dlr {
namespace {

class CudaSharedMemory final : public SharedMemory {
 public:
  explicit CudaSharedMemory(int device) : m_device(device) {}
  Status resize(int64_t arena_bytes, int64_t workspace_bytes) override {
    DLR_CUDA_CHECK(cudaSetDevice(m_device));
    // Nothing may still read the old memory (a failed run can leave work queued).
    DLR_CUDA_CHECK(cudaDeviceSynchronize());
    m_arena.reset();
    m_workspace.reset();
    DLR_ASSIGN_OR_RETURN(m_arena, cuda::DeviceBuffer::alloc(size_t(arena_bytes)));
    if (arena_bytes > 0) DLR_CUDA_CHECK(cudaMemset(m_arena.data(), 0, size_t(arena_bytes)));
    DLR_ASSIGN_OR_RETURN(m_workspace, cuda::DeviceBuffer::alloc(size_t(workspace_bytes)));
    return Status();
  }
  void* arena() const override { return m_arena.data(); }
  void* workspace() const override { return m_workspace.data(); }
  int64_t arena_bytes() const override { return int64_t(m_arena.bytes()); }
  int64_t workspace_bytes() const override { return int64_t(m_workspace.bytes()); }
  Status resize_ring(int64_t bytes) override {
    if (bytes == int64_t(m_ring.bytes())) return Status();
    DLR_CUDA_CHECK(cudaSetDevice(m_device));
    DLR_CUDA_CHECK(cudaDeviceSynchronize());  // a prefetch may still copy into the old ring
    m_ring.reset();
    if (bytes > 0) {
      DLR_ASSIGN_OR_RETURN(m_ring, cuda::MirroredBuffer::alloc(m_device, size_t(bytes)));
    }
    return Status();
  }
  Status synchronize() override {
    DLR_CUDA_CHECK(cudaSetDevice(m_device));
    DLR_CUDA_CHECK(cudaDeviceSynchronize());
    return Status();
  }
  void* ring() const override { return m_ring.bytes() ? m_ring.data() : nullptr; }
  int64_t ring_bytes() const override { return int64_t(m_ring.bytes()); }

 private:
  int m_device = 0;
  cuda::DeviceBuffer m_arena, m_workspace;
  cuda::MirroredBuffer m_ring;
};

}  // namespace

Expected<std::unique_ptr<SharedMemory>> cuda_shared_memory(int device) {
  return std::unique_ptr<SharedMemory>(new CudaSharedMemory(device));
}

}  // namespace dlr
