#include "kernels/cuda/cublas_loader.h"

#include <dlfcn.h>

#include <mutex>

namespace dlr::cuda {
namespace {

template <class F>
bool find(void* lib, const char* name, F* out, std::string* missing) {
  *out = reinterpret_cast<F>(::dlsym(lib, name));
  if (*out == nullptr && missing->empty()) *missing = name;
  return *out != nullptr;
}

}  // namespace

std::string cublas_library_name() { return "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR); }

Expected<CublasApi> load_cublas(const std::string& file) {
  void* lib = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = ::dlerror();
    return Status(StatusCode::kCudaError,
                  "cuBLAS (" + file + ") could not be loaded: " + (why ? why : "unknown reason") +
                      " (needed for convolutions over a concatenation and 3xTF32 GEMMs; install the CUDA "
                      "toolkit's cuBLAS or add its folder to LD_LIBRARY_PATH)");
  }
  CublasApi api;
  std::string missing;
  find(lib, "cublasCreate_v2", &api.create, &missing);
  find(lib, "cublasDestroy_v2", &api.destroy, &missing);
  find(lib, "cublasSetStream_v2", &api.set_stream, &missing);
  find(lib, "cublasSetWorkspace_v2", &api.set_workspace, &missing);
  find(lib, "cublasGemmEx", &api.gemm_ex, &missing);
  find(lib, "cublasGemmStridedBatchedEx", &api.gemm_strided_batched_ex, &missing);
  find(lib, "cublasGetStatusName", &api.status_name, &missing);
  find(lib, "cublasGetStatusString", &api.status_string, &missing);
  if (!missing.empty()) {
    ::dlclose(lib);
    return Status(StatusCode::kCudaError, "cuBLAS (" + file + ") has no function " + missing +
                                              " (expected cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) + ".x)");
  }
  return api;
}

namespace {

Expected<CublasApi>& loaded() {
  static Expected<CublasApi> api = internal_error("cuBLAS not loaded");
  return api;
}

}  // namespace

Expected<const CublasApi*> cublas() {
  static std::once_flag once;
  std::call_once(once, [] { loaded() = load_cublas(cublas_library_name()); });
  if (!loaded().ok()) return loaded().status();
  return &*loaded();
}

std::string cublas_status_text(cublasStatus_t s) {
  const Expected<CublasApi>& api = loaded();  // not loading: a status came from a loaded library or a fault
  if (!api.ok()) return "cuBLAS status " + std::to_string(int(s));
  return std::string(api->status_name(s)) + " (" + api->status_string(s) + ")";
}

}  // namespace dlr::cuda
