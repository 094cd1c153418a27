// The tools' OpenCV work as one table of functions: decoding and writing images,
// drawing detections, video and stream readers, video writers and --show's windows.
// The wrappers the tools call (load_image, annotate_image, VideoReader::open_file,
// ShowWindows, ...) reach OpenCV only through media(), so a tool links OpenCV only
// where it links the table:
//   - linked (tools/common/opencv/media_linked.cpp, in dlr_tools_opencv): dlbench,
//     dlprobe, dlsoak, dlgen and the tests;
//   - loaded (tools/common/media_loader.cpp, the object library dlr_media_loader):
//     dlrun and dlimage dlopen libdlrun-opencv.so on the first image they decode,
//     draw or write, so `dlrun --help`, a .ppm run and a usage error map no OpenCV
//     library (docs/architecture.md, "Backends load when used").
// Only in builds with OpenCV (DLR_HAVE_OPENCV); without it the wrappers return their
// own "built without OpenCV" errors and nothing here is defined.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "tools/common/tool_support.h"
#include "tools/common/video.h"

namespace dlr::tools {

// highgui (dlrun --show): windows by title. Errors are one line naming --show.
struct GuiOps {
  Status (*show)(const std::string& title, const LoadedImage& image);  // opens the window on first use
  Expected<int> (*wait_key)(int wait_ms);                              // -1: no key
  Expected<bool> (*visible)(const std::string& title);                  // false once the user closed it
  void (*destroy)(const std::string& title);                            // errors ignored
};

struct MediaOps {
  const char* opencv_version = "";  // CV_VERSION
  // OpenCV's, FFmpeg's, GLib's and Qt's own log lines off (true) or OpenCV's default.
  void (*set_logs_quiet)(bool quiet) = nullptr;
  // image_decode.h's checks on `data` (the bytes of `path`), then cv::imread(path).
  Expected<LoadedImage> (*imread_checked)(const std::string& path, const uint8_t* data, size_t size,
                                          const ImageLimits& limits) = nullptr;
  bool (*can_write_image)(const std::string& path) = nullptr;  // cv::haveImageWriter
  Status (*write_image)(const std::string& path, const LoadedImage& image) = nullptr;
  Expected<LoadedImage> (*annotate_image)(const LoadedImage& image, const std::vector<Detection>& dets,
                                          const std::vector<std::string>& names) = nullptr;
  Expected<std::unique_ptr<VideoReader>> (*open_video_file)(const std::string& path) = nullptr;
  Expected<std::unique_ptr<VideoReader>> (*open_camera)(int index) = nullptr;
  // `gstreamer`: a pipeline for the GStreamer backend, else a URL for FFmpeg's.
  Expected<std::unique_ptr<VideoReader>> (*open_stream)(const std::string& source, const std::string& name,
                                                        bool gstreamer) = nullptr;
  Expected<std::unique_ptr<VideoWriter>> (*open_video_writer)(const std::string& path, int width, int height,
                                                              double fps) = nullptr;
  const GuiOps* gui = nullptr;  // null where highgui is not linked (the linked table)
};

// The table. Loaded: the first call dlopens the plugin (it is kept for the life of
// the process) and later calls return the same table or the same one-line error.
Expected<const MediaOps*> media();
// The table when media() has succeeded before (linked: always), else null; never loads.
const MediaOps* media_if_loaded();

// The log setting last asked for with set_opencv_logs_quiet (video.h): -1 none, 0 or 1.
// A loader applies it to the table it loads.
int requested_opencv_logs_quiet();

// Identifies the build the table belongs to (a loader refuses a plugin of another
// version, compiler or layout). Inline: each side computes its own.
inline std::string media_build_id() {
  return std::string(DLR_BACKEND_VERSION) + "/" + __VERSION__ + "/" + std::to_string(sizeof(MediaOps)) + "." +
         std::to_string(sizeof(LoadedImage)) + "." + std::to_string(sizeof(Detection)) + "." +
         std::to_string(sizeof(Status)) + "." + std::to_string(sizeof(std::string));
}

// The plugin's entry point (tools/common/opencv/media_plugin.cpp): the table, or null
// when `build_id` is not the plugin's own media_build_id().
using MediaEntry = const MediaOps* (*)(const char* build_id);
inline constexpr const char* kMediaEntry = "dlr_opencv_media_v1";

}  // namespace dlr::tools
