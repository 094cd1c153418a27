// cuBLAS loaded on first use (dlopen of libcublas.so.MAJOR, the major version of the
// headers this build was compiled with) instead of linked: the CUDA backend needs it
// only for convolutions over a concatenation and 3xTF32 GEMMs, and loading it (with
// cuBLASLt, which it needs) is a large part of a process's start-up and of its mapped
// pages (docs/architecture.md, "cuBLAS loaded when a plan needs it").
//
// Threads: cublas() may be called from any thread; the first call loads, concurrent
// callers wait for it, later calls return the same result without locking (the library
// stays loaded for the life of the process).
#pragma once

#include <cublas_v2.h>

#include <string>

#include "runtime/core/status.h"

namespace dlr::cuda {

// The cuBLAS functions the kernels call (the _v2 entry points cublas_v2.h maps to).
struct CublasApi {
  decltype(&::cublasCreate_v2) create = nullptr;
  decltype(&::cublasDestroy_v2) destroy = nullptr;
  decltype(&::cublasSetStream_v2) set_stream = nullptr;
  decltype(&::cublasSetWorkspace_v2) set_workspace = nullptr;
  // cublas_api.h overloads these two in C++ (a cudaDataType compute type): the C ones.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                            const void* alpha, const void* a, cudaDataType a_type, int lda, const void* b,
                            cudaDataType b_type, int ldb, const void* beta, void* c, cudaDataType c_type, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) = nullptr;
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                                            const void* alpha, const void* a, cudaDataType a_type, int lda,
                                            long long stride_a, const void* b, cudaDataType b_type, int ldb,
                                            long long stride_b, const void* beta, void* c, cudaDataType c_type,
                                            int ldc, long long stride_c, int batch,
                                            cublasComputeType_t compute, cublasGemmAlgo_t algo) = nullptr;
  decltype(&::cublasGetStatusName) status_name = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
};

// The library's file name: "libcublas.so.<CUBLAS_VER_MAJOR>".
std::string cublas_library_name();

// dlopen of `file` (the dynamic linker's search from this library: its RUNPATH,
// LD_LIBRARY_PATH, ld.so.cache) and every function of CublasApi looked up. Each call
// opens again (dlopen counts references); the error is one line naming the file and
// dlerror's reason or the missing function. For tests; the kernels use cublas().
Expected<CublasApi> load_cublas(const std::string& file);

// The process's cuBLAS: load_cublas(cublas_library_name()) once.
Expected<const CublasApi*> cublas();

// "NAME (text)" of a cuBLAS status when the library is loaded, else its number.
std::string cublas_status_text(cublasStatus_t s);

}  // namespace dlr::cuda
