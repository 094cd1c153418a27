// cuda_backend() for targets that load the CUDA backend on first use (libdlrun.so,
// dlrun, dlgen, dlimage): dlopen of libdlrun-cuda.so, compiled into those targets
// only (the object library dlr_backend_loader), so the linked cuda_backend() of
// runtime/cuda/cuda_linked.cpp and the CUDA libraries stay out of them.
//
// Where the plugin is looked for, first found wins: $DLRUN_CUDA_BACKEND (a path); the
// folder of the object this code is in, and ../<libdir> and ../runtime from it (an
// install's lib/ beside bin/, the build tree); then the dynamic linker's search path.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/core/log.h"
#include "runtime/device_backend.h"

namespace dlr {
namespace {

const char kPluginName[] = DLR_CUDA_PLUGIN_NAME;  // libdlrun-cuda.so.MAJOR.MINOR

// The folder of the object (executable or shared library) this function is in, with '/'.
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

std::vector<std::string> candidates() {
  if (const char* env = std::getenv("DLRUN_CUDA_BACKEND"); env != nullptr && *env != '\0') return {env};
  const std::string dir = own_folder();
  std::vector<std::string> out;
  if (!dir.empty()) {
    out.push_back(dir + kPluginName);
    out.push_back(dir + "../" DLR_INSTALL_LIBDIR "/" + kPluginName);
    out.push_back(dir + "../runtime/" + kPluginName);
  }
  out.push_back(kPluginName);  // RUNPATH, LD_LIBRARY_PATH, ld.so.cache
  return out;
}

void forward_log(int level, const char* text) { logger().log(spdlog::level::level_enum(level), "{}", text); }

// Loads the first candidate that opens; the handle is kept for the life of the process.
Expected<const DeviceBackend*> load() {
  std::string error;
  for (const std::string& path : candidates()) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      // A file that is there but does not load (a CUDA library missing) is the reason to
      // report; otherwise the last search's.
      const bool there = path.find('/') != std::string::npos && access(path.c_str(), F_OK) == 0;
      if (there || error.empty() || error.rfind("found but", 0) != 0)
        error = (there ? "found but " : "") + std::string(e != nullptr ? e : path.c_str());
      continue;
    }
    auto entry = reinterpret_cast<CudaBackendEntry>(dlsym(handle, kCudaBackendEntry));
    const DeviceBackend* table = entry != nullptr ? entry(backend_build_id().c_str()) : nullptr;
    if (table == nullptr) {
      return unsupported("the CUDA backend " + path + " belongs to another build of dlrun (reinstall both together)");
    }
    DLR_LOG_DEBUG("loaded the CUDA backend {}", path);
    return table;
  }
  return unsupported("the CUDA backend " + std::string(kPluginName) + " could not be loaded: " + error +
                     " (install it beside libdlrun.so, or set DLRUN_CUDA_BACKEND to its path)");
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
