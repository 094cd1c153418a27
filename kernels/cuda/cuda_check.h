// Checking every CUDA / cuDNN call and kernel launch. Each macro turns a failure
// into a Status naming the call, file and line, and returns it from the
// enclosing function (which must return Status or Expected<T>).
//   DLR_CUDA_CHECK(cudaMemcpyAsync(...));
//   kernel<<<g, b, 0, s>>>(...); DLR_CUDA_LAUNCH_CHECK("maxpool");
// DLR_CUDA_CHECK_LOG is for destructors and cleanup paths: it only logs.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

#include "runtime/core/status.h"

namespace dlr::cuda {

inline Status cuda_status(cudaError_t e, const char* call, const char* file, int line) {
  return Status(e == cudaErrorMemoryAllocation ? StatusCode::kOutOfMemory : StatusCode::kCudaError,
                std::string(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") at " + file +
                    ":" + std::to_string(line));
}

inline Status cudnn_status(cudnnStatus_t e, const char* call, const char* file, int line) {
  return Status(e == CUDNN_STATUS_ALLOC_FAILED ? StatusCode::kOutOfMemory : StatusCode::kCudnnError,
                std::string(call) + " failed: " + cudnnGetErrorString(e) + " at " + file + ":" + std::to_string(line));
}

void log_cuda_error(cudaError_t e, const char* call, const char* file, int line);

}  // namespace dlr::cuda

#define DLR_CUDA_CHECK(call)                                                     \
  do {                                                                           \
    const cudaError_t dlr_e_ = (call);                                           \
    if (dlr_e_ != cudaSuccess) return ::dlr::cuda::cuda_status(dlr_e_, #call, __FILE__, __LINE__); \
  } while (0)

#define DLR_CUDNN_CHECK(call)                                                    \
  do {                                                                           \
    const cudnnStatus_t dlr_e_ = (call);                                         \
    if (dlr_e_ != CUDNN_STATUS_SUCCESS) return ::dlr::cuda::cudnn_status(dlr_e_, #call, __FILE__, __LINE__); \
  } while (0)

// After every <<<>>> launch: catches launch-configuration errors (asynchronous
// errors surface at a later checked call).
#define DLR_CUDA_LAUNCH_CHECK(kernel_name)                                       \
  do {                                                                           \
    const cudaError_t dlr_e_ = cudaGetLastError();                               \
    if (dlr_e_ != cudaSuccess) return ::dlr::cuda::cuda_status(dlr_e_, "launch of " kernel_name, __FILE__, __LINE__); \
  } while (0)

#define DLR_CUDA_CHECK_LOG(call)                                                 \
  do {                                                                           \
    const cudaError_t dlr_e_ = (call);                                           \
    if (dlr_e_ != cudaSuccess) ::dlr::cuda::log_cuda_error(dlr_e_, #call, __FILE__, __LINE__); \
  } while (0)
