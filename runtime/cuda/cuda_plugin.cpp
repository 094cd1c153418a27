// The entry point of libdlrun-cuda.so, the CUDA backend loaded on first use
// (runtime/backend_loader.cpp). The only symbol the plugin exports (cuda_plugin.map).
#include "runtime/cuda/cuda_backend.h"

extern "C" __attribute__((visibility("default"))) const dlr::DeviceBackend* dlr_cuda_backend_v1(const char* build_id) {
  if (build_id == nullptr || dlr::backend_build_id() != build_id) return nullptr;
  return dlr::cuda_backend_table();
}
