// The factories of video.h: through media() where built with OpenCV (the readers and
// writers are tools/common/opencv/video_opencv.cpp's), else "built without OpenCV".
#include "tools/common/video.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>

#ifdef DLR_HAVE_OPENCV
#include "tools/common/media.h"
#endif

namespace dlr::tools {
namespace {

std::atomic<int> g_logs_quiet{-1};

#ifdef DLR_HAVE_OPENCV
std::string lower_ext(const std::string& path) {
  std::string e = std::filesystem::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e;
}
#endif

}  // namespace

#ifdef DLR_HAVE_OPENCV
int requested_opencv_logs_quiet() { return g_logs_quiet.load(); }
#endif

void set_opencv_logs_quiet(bool quiet) {
  g_logs_quiet = quiet ? 1 : 0;
#ifdef DLR_HAVE_OPENCV
  if (const MediaOps* m = media_if_loaded()) m->set_logs_quiet(quiet);
#endif
}

Expected<std::unique_ptr<VideoReader>> VideoReader::open_file(const std::string& path) {
#ifdef DLR_HAVE_OPENCV
  DLR_ASSIGN_OR_RETURN(const MediaOps* m, media());
  return m->open_video_file(path);
#else
  return unsupported(path + ": reading videos needs OpenCV, and this dlrun was built without it");
#endif
}

Expected<std::unique_ptr<VideoReader>> VideoReader::open_camera(int index) {
#ifdef DLR_HAVE_OPENCV
  DLR_ASSIGN_OR_RETURN(const MediaOps* m, media());
  return m->open_camera(index);
#else
  return unsupported("camera " + std::to_string(index) + ": cameras need OpenCV, and this dlrun was built without it");
#endif
}

Expected<std::unique_ptr<VideoReader>> VideoReader::open_stream(const std::string& source, const std::string& name) {
#ifdef DLR_HAVE_OPENCV
  DLR_ASSIGN_OR_RETURN(const MediaOps* m, media());
  return m->open_stream(source, name, stream_backend(source) == StreamBackend::kGStreamer);
#else
  (void)source;
  return unsupported(name + ": streams need OpenCV, and this dlrun was built without it");
#endif
}

Expected<std::unique_ptr<VideoWriter>> VideoWriter::open(const std::string& path, int width, int height,
                                                         double fps) {
  DLR_RETURN_IF_ERROR(check_name(path));
#ifdef DLR_HAVE_OPENCV
  DLR_ASSIGN_OR_RETURN(const MediaOps* m, media());
  return m->open_video_writer(path, width, height, fps);
#else
  (void)width;
  (void)height;
  (void)fps;
  return unsupported(path + ": --out-video needs OpenCV, and this dlrun was built without it");
#endif
}

Status VideoWriter::check_name(const std::string& path) {
#ifdef DLR_HAVE_OPENCV
  const std::string ext = lower_ext(path);
  if (ext == ".avi" || ext == ".mkv" || ext == ".mp4" || ext == ".m4v" || ext == ".mov") return Status();
  return invalid_argument(path + ": --out-video needs a .avi, .mkv (MJPG) or .mp4, .m4v, .mov (mp4v) name");
#else
  return unsupported(path + ": --out-video needs OpenCV, and this dlrun was built without it");
#endif
}

}  // namespace dlr::tools
