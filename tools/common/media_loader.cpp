// media() for the tools that load OpenCV on first use (dlrun, dlimage): dlopen of
// libdlrun-opencv.so, compiled into those tools only (the object library
// dlr_media_loader), so the linked media() of tools/common/opencv/media_linked.cpp
// and the OpenCV libraries stay out of them (media.h).
//
// Where the plugin is looked for (runtime/core/plugin.h), first found wins:
// $DLRUN_OPENCV_PLUGIN (a path); the folder of the tool, and ../<libdir> from it (an
// install's lib/ beside bin/); then the dynamic linker's search path.
#include <atomic>
#include <mutex>
#include <string>

#include "runtime/core/plugin.h"
#include "tools/common/media.h"

namespace dlr::tools {
namespace {

const char kPluginName[] = DLR_OPENCV_PLUGIN_NAME;  // libdlrun-opencv.so.MAJOR.MINOR

std::atomic<const MediaOps*> g_loaded{nullptr};

Expected<const MediaOps*> load() {
  const PluginSearch search{kPluginName, "DLRUN_OPENCV_PLUGIN", {"", "../" DLR_INSTALL_LIBDIR "/"}};
  Expected<const MediaOps*> table = load_plugin_table<MediaOps>(
      search, kMediaEntry, media_build_id(),
      {"the OpenCV plugin", "install it in the lib folder beside the tool's bin, or set DLRUN_OPENCV_PLUGIN to its path"});
  if (table.ok() && requested_opencv_logs_quiet() >= 0) (*table)->set_logs_quiet(requested_opencv_logs_quiet() == 1);
  return table;
}

}  // namespace

Expected<const MediaOps*> media() {
  static std::once_flag once;
  static Expected<const MediaOps*> loaded = internal_error("not loaded");
  std::call_once(once, [] {
    loaded = load();
    if (loaded.ok()) g_loaded = *loaded;
  });
  return loaded;
}

const MediaOps* media_if_loaded() { return g_loaded.load(); }

}  // namespace dlr::tools
