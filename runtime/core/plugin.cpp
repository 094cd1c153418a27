#include "runtime/core/plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

namespace dlr {
namespace {

// The folder of the object (executable or shared library) this function is in, with '/'.
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

}  // namespace

std::vector<std::string> plugin_candidates(const PluginSearch& search) {
  if (search.env_var != nullptr) {
    const char* env = std::getenv(search.env_var);
    if (env != nullptr && *env != '\0') return {env};
  }
  const std::string dir = own_folder();
  std::vector<std::string> out;
  if (!dir.empty())
    for (const std::string& folder : search.folders) out.push_back(dir + folder + search.file_name);
  out.push_back(search.file_name);
  return out;
}

Expected<OpenedPlugin> open_plugin(const PluginSearch& search) {
  std::string error;
  for (const std::string& path : plugin_candidates(search)) {
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (handle != nullptr) return OpenedPlugin{handle, path};
    const char* e = dlerror();
    const bool there = path.find('/') != std::string::npos && access(path.c_str(), F_OK) == 0;
    if (there || error.empty() || error.rfind("found but", 0) != 0)
      error = (there ? "found but " : "") + std::string(e != nullptr ? e : path.c_str());
  }
  return unsupported(error);
}

Expected<std::pair<OpenedPlugin, void*>> find_plugin_entry(const PluginSearch& search, const char* entry,
                                                           const PluginNames& names) {
  Expected<OpenedPlugin> plugin = open_plugin(search);
  if (!plugin.ok())
    return unsupported(names.what + " " + search.file_name + " could not be loaded: " + plugin.status().message() +
                       " (" + names.hint + ")");
  void* address = dlsym(plugin->handle, entry);
  return std::make_pair(std::move(*plugin), address);
}

}  // namespace dlr
