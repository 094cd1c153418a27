// DLR_CUBLAS_CHECK: a checked cuBLAS call, as DLR_CUDA_CHECK (cuda_check.h) for the CUDA
// runtime: a failure returns a Status naming the call, cuBLAS's status and the place;
// fault injection (runtime/core/fault.h) hits it as any other CUDA call. For .cpp files
// of kernels/cuda only (includes cublas_v2.h). The call goes through the loaded library's
// table (cublas_loader.h): `api->gemm_ex(...)`.
#pragma once

#include <cublas_v2.h>

#include <string>

#include "kernels/cuda/cublas_loader.h"
#include "kernels/cuda/cuda_check.h"

namespace dlr::cuda {

inline Status cublas_status(cublasStatus_t e, const char* call, const char* file, int line) {
  return Status(e == CUBLAS_STATUS_ALLOC_FAILED ? StatusCode::kOutOfMemory : StatusCode::kCudaError,
                std::string(call) + " failed: " + cublas_status_text(e) + " at " + file + ":" + std::to_string(line));
}

}  // namespace dlr::cuda

#define DLR_CUBLAS_CHECK(call)                                                                          \
  do {                                                                                                  \
    if (::dlr::fault::hit(::dlr::cuda::kFaultSite))                                                     \
      return ::dlr::cuda::injected(                                                                     \
          ::dlr::cuda::cublas_status(CUBLAS_STATUS_INTERNAL_ERROR, #call, __FILE__, __LINE__));          \
    const cublasStatus_t dlr_e_ = (call);                                                               \
    if (dlr_e_ != CUBLAS_STATUS_SUCCESS) return ::dlr::cuda::cublas_status(dlr_e_, #call, __FILE__, __LINE__); \
  } while (0)
