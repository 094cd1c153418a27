// Finding and opening a plugin: a shared object of this build that a target loads on
// first use instead of linking it (the CUDA backend, runtime/backend_loader.cpp; the
// tools' OpenCV media, tools/common/media_loader.cpp; docs/architecture.md, "Backends
// load when used").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/core/log.h"
#include "runtime/core/status.h"

namespace dlr {

struct PluginSearch {
  std::string file_name;             // "libdlrun-cuda.so.0.1"
  const char* env_var = nullptr;     // a path that replaces the search when set and not empty
  std::vector<std::string> folders;  // relative to the folder of the object that calls, in order
};

struct OpenedPlugin {
  void* handle = nullptr;  // dlopen's; kept open for the life of the process
  std::string path;        // the candidate that opened
};

// Where `search` looks, first found wins: $env_var alone when set; else each of
// `folders` under the folder of the executable or shared library this code is linked
// into; then the bare file name (the dynamic linker's RUNPATH, LD_LIBRARY_PATH,
// ld.so.cache).
std::vector<std::string> plugin_candidates(const PluginSearch& search);

// dlopen (RTLD_LAZY | RTLD_LOCAL: functions bound on first call, as an executable's own
// libraries are) of the first candidate that opens. The error is the
// reason of a candidate that is there but does not load (a library it needs is
// missing), otherwise the last candidate's; the caller adds what the plugin is.
Expected<OpenedPlugin> open_plugin(const PluginSearch& search);

// What a plugin is called in its errors: "the CUDA backend", and the sentence that
// says how to provide it ("install it beside libdlrun.so, or set ...").
struct PluginNames {
  std::string what;
  std::string hint;
};

// open_plugin, then the address of `entry` in it, or the error "WHAT FILE could not be
// loaded: REASON (HINT)".
Expected<std::pair<OpenedPlugin, void*>> find_plugin_entry(const PluginSearch& search, const char* entry,
                                                           const PluginNames& names);

// The table `entry` returns for `build_id` (a function `const T* entry(const char*
// build_id)` returning null for another build's id), or the one-line error: missing
// plugin, or "WHAT PATH belongs to another build of dlrun".
template <class T>
Expected<const T*> load_plugin_table(const PluginSearch& search, const char* entry, const std::string& build_id,
                                     const PluginNames& names) {
  auto found = find_plugin_entry(search, entry, names);
  if (!found.ok()) return found.status();
  auto function = reinterpret_cast<const T* (*)(const char*)>(found->second);
  const T* table = function != nullptr ? function(build_id.c_str()) : nullptr;
  if (table == nullptr)
    return unsupported(names.what + " " + found->first.path + " belongs to another build of dlrun (reinstall both together)");
  DLR_LOG_DEBUG("loaded {} {}", names.what, found->first.path);
  return table;
}

}  // namespace dlr
