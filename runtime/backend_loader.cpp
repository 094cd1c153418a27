// cuda_backend() for targets that load the CUDA backend on first use (libdlrun.so,
// dlrun, dlgen, dlimage): dlopen of libdlrun-cuda.so, compiled into those targets
// only (the object library dlr_backend_loader), so the linked cuda_backend() of
// runtime/cuda/cuda_linked.cpp and the CUDA libraries stay out of them.
//
// Where the plugin is looked for (runtime/core/plugin.h), first found wins:
// $DLRUN_CUDA_BACKEND (a path); the folder of the object this code is in, and
// ../<libdir> and ../runtime from it (an install's lib/ beside bin/, the build tree);
// then the dynamic linker's search path.
#include <mutex>
#include <string>

#include "runtime/core/log.h"
#include "runtime/core/plugin.h"
#include "runtime/device_backend.h"

namespace dlr {
namespace {

const char kPluginName[] = DLR_CUDA_PLUGIN_NAME;  // libdlrun-cuda.so.MAJOR.MINOR

void forward_log(int level, const char* text) { logger().log(spdlog::level::level_enum(level), "{}", text); }

// Loads the first candidate that opens; the handle is kept for the life of the process.
Expected<const DeviceBackend*> load() {
  const PluginSearch search{kPluginName, "DLRUN_CUDA_BACKEND", {"", "../" DLR_INSTALL_LIBDIR "/", "../runtime/"}};
  return load_plugin_table<DeviceBackend>(
      search, kCudaBackendEntry, backend_build_id(),
      {"the CUDA backend", "install it beside libdlrun.so, or set DLRUN_CUDA_BACKEND to its path"});
}

}  // namespace

Expected<const DeviceBackend*> cuda_backend() {
  static std::once_flag once;
  static Expected<const DeviceBackend*> loaded = internal_error("not loaded");
  std::call_once(once, [] { loaded = load(); });
  if (loaded.ok()) (*loaded)->attach_log(int(log_level()), forward_log);  // the caller's level now
  return loaded;
}

}  // namespace dlr
