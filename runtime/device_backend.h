// A device backend as a table of factories (docs/architecture.md, "Backends load when
// used"). The CUDA backend is either linked in (runtime/cuda/cuda_backend.cpp: the
// static libraries, the tests, the Python module, dlbench) or loaded on first use from
// its own shared object, libdlrun-cuda.so (runtime/backend_loader.cpp: libdlrun.so and
// dlrun), so that a CPU-only user of a CUDA build maps none of the CUDA libraries.
// backend.cpp calls through the table either way.
//
// The table crosses a shared-object boundary only between objects of one build: its
// C++ types are the same on both sides, which backend_build_id() checks (a loader
// refuses a plugin of another version, compiler or layout).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/backend.h"

namespace dlr {

struct DeviceBackend {
  std::unique_ptr<DeviceStart> (*start_device)(int index);
  Expected<Target> (*make_target)(int index, const std::string& copy_profile);
  // `start`: a DeviceStart this table's start_device made, or null.
  Expected<std::unique_ptr<Engine>> (*create_engine)(const CompiledModel& model, WeightSource& weights,
                                                     DeviceStart* start);
  Status (*memory_info)(int index, int64_t* free_bytes, int64_t* total_bytes);
  std::string (*description)(int index);
  Expected<std::unique_ptr<SharedMemory>> (*shared_memory)(int index);
  // "CUDA: built with ..., runtime ...\ncuDNN: ...\nGPU: ...\n" for --version.
  std::string (*versions)();
  // A loaded backend logs through the loader's logger: every message at or above
  // `level` (an spdlog level) goes to `forward` (level, text without newline).
  void (*attach_log)(int level, void (*forward)(int level, const char* text));
};

// The CUDA backend of this process: linked in, or loaded from libdlrun-cuda.so on the
// first call (thread-safe; later calls return the same table or the same error). The
// error is one line: built without CUDA, or why the shared object did not load.
Expected<const DeviceBackend*> cuda_backend();

// Identifies the build a backend table belongs to: version, compiler and the sizes of
// the types the table passes. Inline: each side computes its own and they must agree.
inline std::string backend_build_id() {
  return std::string(DLR_BACKEND_VERSION) + "/" + __VERSION__ + "/" + std::to_string(sizeof(CompiledModel)) + "." +
         std::to_string(sizeof(Target)) + "." + std::to_string(sizeof(EngineSettings)) + "." +
         std::to_string(sizeof(Status)) + "." + std::to_string(sizeof(std::string));
}

// The plugin's entry point (runtime/cuda/cuda_plugin.cpp): the table, or null when
// `build_id` is not the plugin's own backend_build_id().
using CudaBackendEntry = const DeviceBackend* (*)(const char* build_id);
inline constexpr const char* kCudaBackendEntry = "dlr_cuda_backend_v1";

}  // namespace dlr
