// Checking every CUDA / cuDNN call and kernel launch. Each macro turns a failure
// into a Status naming the call, file and line, and returns it from the
// enclosing function (which must return Status or Expected<T>).
//   DLR_CUDA_CHECK(cudaMemcpyAsync(...));
//   kernel<<<g, b, 0, s>>>(...); DLR_CUDA_LAUNCH_CHECK("maxpool");
// DLR_CUDA_CHECK_LOG is for destructors and cleanup paths: it only logs.
//
// Fault injection (runtime/core/fault_injection.h): every checked call is a site.
// When a test has armed the hit, the call is NOT made and the macro takes its error
// path as if it had failed (cudaErrorUnknown / CUDNN_STATUS_INTERNAL_ERROR; a launch
// check reports cudaErrorLaunchFailure), the message ending in
// " [fault injected at cuda_call]". Disarmed: one relaxed atomic load per checked
// call (a few per inference: graph launch, event, synchronise), no synchronisation.
// Cleanup (DLR_CUDA_CHECK_LOG) is never injected: it must always run.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

#include "runtime/core/fault_injection.h"
#include "runtime/core/status.h"

namespace dlr::cuda {

// A failed call's Status. The runtime's last-error state is cleared (cudaGetLastError),
// so an error returned as this value is not reported a second time by the next launch
// check, which may be another engine's after the caller went on (a sticky error stays).
inline Status cuda_status(cudaError_t e, const char* call, const char* file, int line) {
  (void)cudaGetLastError();
  return Status(e == cudaErrorMemoryAllocation ? StatusCode::kOutOfMemory : StatusCode::kCudaError,
                std::string(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") at " + file +
                    ":" + std::to_string(line));
}

inline Status cudnn_status(cudnnStatus_t e, const char* call, const char* file, int line) {
  return Status(e == CUDNN_STATUS_ALLOC_FAILED ? StatusCode::kOutOfMemory : StatusCode::kCudnnError,
                std::string(call) + " failed: " + cudnnGetErrorString(e) + " at " + file + ":" + std::to_string(line));
}

void log_cuda_error(cudaError_t e, const char* call, const char* file, int line);

// The site name of every checked CUDA/cuDNN call and launch.
inline constexpr const char* kFaultSite = "cuda_call";

inline Status injected(Status s) { return Status(s.code(), s.message() + fault::tag(kFaultSite)); }

}  // namespace dlr::cuda

#define DLR_CUDA_CHECK(call)                                                     \
  do {                                                                           \
    if (::dlr::fault::hit(::dlr::cuda::kFaultSite))                              \
      return ::dlr::cuda::injected(::dlr::cuda::cuda_status(cudaErrorUnknown, #call, __FILE__, __LINE__)); \
    const cudaError_t dlr_e_ = (call);                                           \
    if (dlr_e_ != cudaSuccess) return ::dlr::cuda::cuda_status(dlr_e_, #call, __FILE__, __LINE__); \
  } while (0)

#define DLR_CUDNN_CHECK(call)                                                    \
  do {                                                                           \
    if (::dlr::fault::hit(::dlr::cuda::kFaultSite))                              \
      return ::dlr::cuda::injected(                                              \
          ::dlr::cuda::cudnn_status(CUDNN_STATUS_INTERNAL_ERROR, #call, __FILE__, __LINE__)); \
    const cudnnStatus_t dlr_e_ = (call);                                         \
    if (dlr_e_ != CUDNN_STATUS_SUCCESS) return ::dlr::cuda::cudnn_status(dlr_e_, #call, __FILE__, __LINE__); \
  } while (0)

// After every <<<>>> launch: catches launch-configuration errors (asynchronous
// errors surface at a later checked call).
#define DLR_CUDA_LAUNCH_CHECK(kernel_name)                                       \
  do {                                                                           \
    if (::dlr::fault::hit(::dlr::cuda::kFaultSite))                              \
      return ::dlr::cuda::injected(                                              \
          ::dlr::cuda::cuda_status(cudaErrorLaunchFailure, "launch of " kernel_name, __FILE__, __LINE__)); \
    const cudaError_t dlr_e_ = cudaGetLastError();                               \
    if (dlr_e_ != cudaSuccess) return ::dlr::cuda::cuda_status(dlr_e_, "launch of " kernel_name, __FILE__, __LINE__); \
  } while (0)

#define DLR_CUDA_CHECK_LOG(call)                                                 \
  do {                                                                           \
    const cudaError_t dlr_e_ = (call);                                           \
    if (dlr_e_ != cudaSuccess) ::dlr::cuda::log_cuda_error(dlr_e_, #call, __FILE__, __LINE__); \
  } while (0)
