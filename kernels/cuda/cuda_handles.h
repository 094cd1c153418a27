// Move-only RAII owners of CUDA resources. Creation returns Expected; release
// never throws and only logs a failure (DLR_CUDA_CHECK_LOG).
#pragma once

#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include <cudnn.h>

#include <cstddef>
#include <utility>

#include "kernels/cuda/cuda_check.h"

namespace dlr::cuda {

template <class Traits>
class Handle {
 public:
  using T = typename Traits::Type;
  Handle() = default;
  explicit Handle(T h) : m_h(h) {}
  Handle(Handle&& o) noexcept : m_h(std::exchange(o.m_h, T{})) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      m_h = std::exchange(o.m_h, T{});
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  void reset() {
    if (m_h) Traits::destroy(m_h);
    m_h = T{};
  }
  T get() const { return m_h; }
  explicit operator bool() const { return m_h != T{}; }

 private:
  T m_h{};
};

struct StreamTraits {
  using Type = cudaStream_t;
  static void destroy(cudaStream_t s);
};
struct EventTraits {
  using Type = cudaEvent_t;
  static void destroy(cudaEvent_t e);
};
struct CudnnTraits {
  using Type = cudnnHandle_t;
  static void destroy(cudnnHandle_t h);
};
struct CublasTraits {
  using Type = cublasHandle_t;
  static void destroy(cublasHandle_t h);
};
struct GraphExecTraits {
  using Type = cudaGraphExec_t;
  static void destroy(cudaGraphExec_t g);
};

using Stream = Handle<StreamTraits>;
using Event = Handle<EventTraits>;
using CudnnHandle = Handle<CudnnTraits>;
using GraphExec = Handle<GraphExecTraits>;
using CublasHandle = Handle<CublasTraits>;

// A non-blocking stream (never synchronises with the legacy default stream).
Expected<Stream> make_stream();
// timing=false: cudaEventDisableTiming (ordering only).
Expected<Event> make_event(bool timing);
Expected<CudnnHandle> make_cudnn();
Expected<CublasHandle> make_cublas();  // default math, host pointer mode

// Device memory (cudaMalloc) or pinned host memory (cudaHostAlloc), move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Expected<DeviceBuffer> alloc(size_t bytes);  // bytes == 0 gives an empty buffer
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }
  void reset();
  void* data() const { return m_ptr; }
  size_t bytes() const { return m_bytes; }

 private:
  void* m_ptr = nullptr;
  size_t m_bytes = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  // flags: cudaHostAllocDefault, or cudaHostAllocMapped for zero-copy.
  static Expected<PinnedBuffer> alloc(size_t bytes, unsigned flags = cudaHostAllocDefault);
  PinnedBuffer(PinnedBuffer&& o) noexcept { *this = std::move(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { reset(); }
  void reset();
  void* data() const { return m_ptr; }
  size_t bytes() const { return m_bytes; }

 private:
  void* m_ptr = nullptr;
  size_t m_bytes = 0;
};

}  // namespace dlr::cuda
