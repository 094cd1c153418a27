#include "kernels/cuda/cuda_handles.h"

#include "kernels/cuda/cublas_loader.h"

#include "runtime/core/fault_injection.h"
#include "runtime/core/log.h"

namespace dlr::cuda {

void log_cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // logged here: not reported again by the next launch check
  DLR_LOG_ERROR("{} failed: {} ({}) at {}:{}", call, cudaGetErrorName(e), cudaGetErrorString(e), file, line);
}

void StreamTraits::destroy(cudaStream_t s) { DLR_CUDA_CHECK_LOG(cudaStreamDestroy(s)); }
void EventTraits::destroy(cudaEvent_t e) { DLR_CUDA_CHECK_LOG(cudaEventDestroy(e)); }
void GraphExecTraits::destroy(cudaGraphExec_t g) { DLR_CUDA_CHECK_LOG(cudaGraphExecDestroy(g)); }
void CudnnTraits::destroy(cudnnHandle_t h) {
  const cudnnStatus_t s = cudnnDestroy(h);
  if (s != CUDNN_STATUS_SUCCESS) DLR_LOG_ERROR("cudnnDestroy failed: {}", cudnnGetErrorString(s));
}

void CublasTraits::destroy(cublasHandle_t h) {
  const Expected<const CublasApi*> api = cublas();  // loaded: the handle was made through it
  const cublasStatus_t s = api.ok() ? (*api)->destroy(h) : CUBLAS_STATUS_NOT_INITIALIZED;
  if (s != CUBLAS_STATUS_SUCCESS) DLR_LOG_ERROR("cublasDestroy failed: {}", cublas_status_text(s));
}

Expected<CublasHandle> make_cublas() {
  DLR_ASSIGN_OR_RETURN(const CublasApi* api, cublas());
  cublasHandle_t h = nullptr;
  const cublasStatus_t s = api->create(&h);
  if (s != CUBLAS_STATUS_SUCCESS)
    return Status(s == CUBLAS_STATUS_ALLOC_FAILED ? StatusCode::kOutOfMemory : StatusCode::kCudaError,
                  std::string("cublasCreate failed: ") + cublas_status_text(s));
  return CublasHandle(h);
}

Expected<Stream> make_stream() {
  cudaStream_t s = nullptr;
  DLR_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

Expected<Event> make_event(bool timing) {
  cudaEvent_t e = nullptr;
  DLR_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return Event(e);
}

Expected<CudnnHandle> make_cudnn() {
  cudnnHandle_t h = nullptr;
  DLR_CUDNN_CHECK(cudnnCreate(&h));
  return CudnnHandle(h);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    m_ptr = std::exchange(o.m_ptr, nullptr);
    m_bytes = std::exchange(o.m_bytes, 0);
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (m_ptr) DLR_CUDA_CHECK_LOG(cudaFree(m_ptr));
  m_ptr = nullptr;
  m_bytes = 0;
}

Expected<DeviceBuffer> DeviceBuffer::alloc(size_t bytes) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  if (fault::hit("device_alloc"))  // before the call: nothing to free
    return out_of_memory("cudaMalloc of " + std::to_string(bytes) + " bytes failed" + fault::tag("device_alloc"));
  const cudaError_t e = cudaMalloc(&b.m_ptr, bytes);
  if (e != cudaSuccess) {
    b.m_ptr = nullptr;
    return out_of_memory("cudaMalloc of " + std::to_string(bytes) + " bytes failed: " + cudaGetErrorString(e));
  }
  b.m_bytes = bytes;
  return b;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    m_ptr = std::exchange(o.m_ptr, nullptr);
    m_bytes = std::exchange(o.m_bytes, 0);
  }
  return *this;
}

void PinnedBuffer::reset() {
  if (m_ptr) DLR_CUDA_CHECK_LOG(cudaFreeHost(m_ptr));
  m_ptr = nullptr;
  m_bytes = 0;
}

Expected<PinnedBuffer> PinnedBuffer::alloc(size_t bytes, unsigned flags) {
  PinnedBuffer b;
  if (bytes == 0) return b;
  if (fault::hit("pinned_alloc"))
    return out_of_memory("cudaHostAlloc of " + std::to_string(bytes) + " bytes of pinned memory failed" +
                         fault::tag("pinned_alloc"));
  const cudaError_t e = cudaHostAlloc(&b.m_ptr, bytes, flags);
  if (e != cudaSuccess) {
    b.m_ptr = nullptr;
    return out_of_memory("cudaHostAlloc of " + std::to_string(bytes) + " bytes of pinned memory failed: " +
                         cudaGetErrorString(e));
  }
  b.m_bytes = bytes;
  return b;
}

}  // namespace dlr::cuda
