// SharedMemory: the activation arena and the workspace that every session of a
// Runtime uses in turn (they never run at the same moment). Owned by the Runtime;
// engines get raw pointers through Engine::bind_shared and are bound again when it moves.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/core/status.h"

namespace dlr {

class SharedMemory {
 public:
  virtual ~SharedMemory() = default;
  // Reallocates to exactly these sizes (bytes; 0 frees), the arena zeroed. The old
  // memory is freed first, so the peak stays at the larger of the two; every pointer
  // handed out before is invalid afterwards. Never while an engine runs.
  virtual Status resize(int64_t arena_bytes, int64_t workspace_bytes) = 0;
  virtual void* arena() const = 0;
  virtual void* workspace() const = 0;
  virtual int64_t arena_bytes() const = 0;
  virtual int64_t workspace_bytes() const = 0;
  // The ring the models stream their weights through (CUDA only): `bytes` of device
  // memory mapped twice back to back (cuda::MirroredBuffer; 0 frees it). Waits for the
  // device first: nothing may still copy into or read the old ring. Never while an
  // engine runs; every engine bound to the old ring must be bound again.
  virtual Status resize_ring(int64_t bytes) {
    return bytes == 0 ? Status() : unsupported("a shared ring needs the CUDA backend");
  }
  virtual void* ring() const { return nullptr; }
  // Waits until the device has finished everything queued (CUDA); nothing on the host.
  virtual Status synchronize() { return Status(); }
  virtual int64_t ring_bytes() const { return 0; }
};

// Host memory (the CPU backend): 64-byte aligned.
std::unique_ptr<SharedMemory> host_shared_memory();
// Device memory of CUDA device `device` (runtime/cuda/shared_memory_cuda.cpp; CUDA
// builds only: make_shared_memory(), runtime/backend.h, is the way to it).
Expected<std::unique_ptr<SharedMemory>> cuda_shared_memory(int device);

}  // namespace dlr
