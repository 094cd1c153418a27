// MirroredBuffer: `bytes` of device memory mapped twice, back to back, in one
// virtual address range of 2 * bytes, through CUDA virtual memory management:
// address base + x and base + bytes + x (0 <= x < bytes) are the same byte. A
// ring buffer placed in it is contiguous across its wrap point: a region
// [off, off + n) with off < bytes and n <= bytes can be copied to and read by
// kernels as one plain pointer. The ring weight pool of stream mode lives in one
// (docs/streaming.md sections 1 and 2). Physical memory is `bytes`; only the address
// range doubles.
//
// The driver functions are reached through cudaGetDriverEntryPointByVersion, so
// nothing links libcuda directly (binaries still start on machines without a GPU).
// Move-only; the destructor unmaps and frees (callers make sure no work still
// uses it, as for any device buffer).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"

namespace dlr::cuda {

class MirroredBuffer {
 public:
  // The mapping granularity of `device` in bytes (a size must be a multiple of it);
  // 0 when the device or driver has no virtual memory management.
  static Expected<int64_t> granularity(int device);
  // bytes: a positive multiple of granularity(device).
  static Expected<MirroredBuffer> alloc(int device, size_t bytes);

  MirroredBuffer() = default;
  MirroredBuffer(MirroredBuffer&& o) noexcept { *this = static_cast<MirroredBuffer&&>(o); }
  MirroredBuffer& operator=(MirroredBuffer&& o) noexcept;
  MirroredBuffer(const MirroredBuffer&) = delete;
  MirroredBuffer& operator=(const MirroredBuffer&) = delete;
  ~MirroredBuffer() { reset(); }
  void reset();

  char* data() const { return reinterpret_cast<char*>(m_base); }  // 2 * bytes() addressable
  size_t bytes() const { return m_bytes; }                       // physical bytes

 private:
  unsigned long long m_base = 0;    // CUdeviceptr of the reserved range
  unsigned long long m_handle = 0;  // CUmemGenericAllocationHandle
  size_t m_bytes = 0;
  int m_mapped = 0;                 // mappings made (0..2), for partial cleanup
};

}  // namespace dlr::cuda
