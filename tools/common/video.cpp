#include "tools/common/video.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>

#ifdef DLR_HAVE_OPENCV
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#include <opencv2/videoio/registry.hpp>
#endif

namespace dlr::tools {

#ifdef DLR_HAVE_OPENCV
struct VideoReader::Impl {
  cv::VideoCapture cap;
};
struct VideoWriter::Impl {
  cv::VideoWriter writer;
};

namespace {

// OpenCV prints backend warnings on stderr when a capture fails; our error says it in one line.
struct QuietOpenCv {
  cv::utils::logging::LogLevel saved = cv::utils::logging::getLogLevel();
  QuietOpenCv() {
    cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
    // OpenCV's FFmpeg backend reads this once, at its first use: quiet (AV_LOG_QUIET),
    // unless the user set it.
    ::setenv("OPENCV_FFMPEG_LOGLEVEL", "-8", 0);
  }
  ~QuietOpenCv() { cv::utils::logging::setLogLevel(saved); }
};

// Copies a decoded frame (any depth-8 1/3/4-channel Mat) into a packed BGR image.
Status to_bgr(const cv::Mat& m, const std::string& name, LoadedImage* out) {
  if (m.depth() != CV_8U || (m.channels() != 1 && m.channels() != 3 && m.channels() != 4))
    return unsupported(name + ": frame format is not 8-bit gray/BGR/BGRA");
  cv::Mat bgr = m;
  if (m.channels() == 1) cv::cvtColor(m, bgr, cv::COLOR_GRAY2BGR);
  if (m.channels() == 4) cv::cvtColor(m, bgr, cv::COLOR_BGRA2BGR);
  out->width = bgr.cols;
  out->height = bgr.rows;
  out->pixels.resize(size_t(bgr.cols) * bgr.rows * 3);
  for (int y = 0; y < bgr.rows; ++y)
    std::copy(bgr.ptr<uint8_t>(y), bgr.ptr<uint8_t>(y) + size_t(bgr.cols) * 3,
              out->pixels.data() + size_t(y) * bgr.cols * 3);
  return Status();
}

std::string lower_ext(const std::string& path) {
  std::string e = std::filesystem::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e;
}

}  // namespace
#else
struct VideoReader::Impl {};
struct VideoWriter::Impl {};
#endif

#ifdef DLR_HAVE_OPENCV
namespace {

// GLib's messages (GStreamer's criticals when a pipeline does not parse) go to stderr
// through GLib's default log handler: while quiet, one that drops them. GLib is asked
// through dlsym only when already loaded (by OpenCV's GStreamer backend).
extern "C" void drop_glib_message(const char*, int, const char*, void*) {}

void set_glib_logs_quiet(bool quiet) {
  using Handler = void (*)(const char*, int, const char*, void*);
  using SetDefault = Handler (*)(Handler, void*);
  static Handler saved = nullptr;
  static bool quieted = false;
  void* glib = ::dlopen("libglib-2.0.so.0", RTLD_NOW | RTLD_NOLOAD);
  if (!glib) return;
  auto set_default = reinterpret_cast<SetDefault>(::dlsym(glib, "g_log_set_default_handler"));
  if (set_default && quiet && !quieted) saved = set_default(drop_glib_message, nullptr), quieted = true;
  if (set_default && !quiet && quieted) set_default(saved, nullptr), quieted = false;
  ::dlclose(glib);  // drops the reference NOLOAD took; the library stays loaded
}

}  // namespace
#endif

void set_opencv_logs_quiet(bool quiet) {
#ifdef DLR_HAVE_OPENCV
  set_glib_logs_quiet(quiet);
  cv::utils::logging::setLogLevel(quiet ? cv::utils::logging::LOG_LEVEL_SILENT : cv::utils::logging::LOG_LEVEL_INFO);
  if (quiet) ::setenv("OPENCV_FFMPEG_LOGLEVEL", "-8", 0);
  // highgui's Qt (dlrun --show) warns on stderr, e.g. when XDG_RUNTIME_DIR is not set; unless the user set rules.
  if (quiet) ::setenv("QT_LOGGING_RULES", "*.debug=false;*.info=false;*.warning=false", 0);
#else
  (void)quiet;
#endif
}

VideoReader::~VideoReader() = default;
VideoWriter::~VideoWriter() {
  if (m_impl) (void)close();
}

Expected<std::unique_ptr<VideoReader>> VideoReader::open_file(const std::string& path) {
#ifdef DLR_HAVE_OPENCV
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return io_error(path + ": no such video file");
  std::unique_ptr<VideoReader> r(new VideoReader());
  r->m_impl = std::make_unique<Impl>();
  r->m_name = path;
  try {
    QuietOpenCv quiet;
    if (!r->m_impl->cap.open(path, cv::CAP_ANY) || !r->m_impl->cap.isOpened())
      return io_error(path + ": cannot open the video (unreadable file or a codec OpenCV lacks)");
    const double n = r->m_impl->cap.get(cv::CAP_PROP_FRAME_COUNT);
    r->m_frames = n >= 1 && n < 1e12 ? int64_t(n) : -1;
    const double fps = r->m_impl->cap.get(cv::CAP_PROP_FPS);
    r->m_fps = fps > 0 && fps < 1000 ? fps : 0;
  } catch (const cv::Exception& e) {
    return io_error(path + ": cannot open the video (" + e.msg + ")");
  }
  return r;
#else
  return unsupported(path + ": reading videos needs OpenCV, and this dlrun was built without it");
#endif
}

Expected<std::unique_ptr<VideoReader>> VideoReader::open_camera(int index) {
  const std::string name = "camera " + std::to_string(index);
#ifdef DLR_HAVE_OPENCV
  std::unique_ptr<VideoReader> r(new VideoReader());
  r->m_impl = std::make_unique<Impl>();
  r->m_name = name;
  try {
    QuietOpenCv quiet;
    if (!r->m_impl->cap.open(index, cv::CAP_ANY) || !r->m_impl->cap.isOpened())
      return io_error(name + ": cannot open the camera (no such device, or it is busy)");
    const double fps = r->m_impl->cap.get(cv::CAP_PROP_FPS);
    r->m_fps = fps > 0 && fps < 1000 ? fps : 0;
  } catch (const cv::Exception& e) {
    return io_error(name + ": cannot open the camera (" + e.msg + ")");
  }
  return r;
#else
  return unsupported(name + ": cameras need OpenCV, and this dlrun was built without it");
#endif
}

#ifdef DLR_HAVE_OPENCV
namespace {

constexpr int kStreamTimeoutMs = 10000;  // FFmpeg: opening, and each read

// Opens `cap` on `source` with `backend`; false when it does not open.
bool open_capture(cv::VideoCapture& cap, const std::string& source, StreamBackend backend) {
  if (backend == StreamBackend::kGStreamer) return cap.open(source, cv::CAP_GSTREAMER) && cap.isOpened();
  const std::vector<int> params = {cv::CAP_PROP_OPEN_TIMEOUT_MSEC, kStreamTimeoutMs, cv::CAP_PROP_READ_TIMEOUT_MSEC,
                                   kStreamTimeoutMs};
  return cap.open(source, cv::CAP_FFMPEG, params) && cap.isOpened();
}

}  // namespace
#endif

Expected<std::unique_ptr<VideoReader>> VideoReader::open_stream(const std::string& source, const std::string& name) {
#ifdef DLR_HAVE_OPENCV
  const StreamBackend backend = stream_backend(source);
  const std::string tried = std::string(" (OpenCV's ") + backend_name(backend) + " backend)";
  const cv::VideoCaptureAPIs api = backend == StreamBackend::kGStreamer ? cv::CAP_GSTREAMER : cv::CAP_FFMPEG;
  if (!cv::videoio_registry::hasBackend(api))
    return unsupported(name + ": this OpenCV has no " + backend_name(backend) +
                       " backend to open it (cv::getBuildInformation() lists the video backends)");
  std::unique_ptr<VideoReader> r(new VideoReader());
  r->m_impl = std::make_unique<Impl>();
  r->m_name = name;
  try {
    QuietOpenCv quiet;
    if (!open_capture(r->m_impl->cap, source, backend))
      return io_error(name + ": cannot open the stream" + tried +
                      (backend == StreamBackend::kGStreamer
                           ? ": a bad pipeline, a missing GStreamer plugin, or no appsink at its end"
                           : ": unreachable, refused, not found, or a format FFmpeg lacks"));
    const double n = r->m_impl->cap.get(cv::CAP_PROP_FRAME_COUNT);
    r->m_frames = n >= 1 && n < 1e12 ? int64_t(n) : -1;
    const double fps = r->m_impl->cap.get(cv::CAP_PROP_FPS);
    r->m_fps = fps > 0 && fps < 1000 ? fps : 0;
  } catch (const cv::Exception& e) {
    return io_error(name + ": cannot open the stream" + tried + ": " + hide_credentials(e.msg));
  }
  return r;
#else
  (void)source;
  return unsupported(name + ": streams need OpenCV, and this dlrun was built without it");
#endif
}

Expected<bool> VideoReader::read(LoadedImage* frame) {
#ifdef DLR_HAVE_OPENCV
  cv::Mat m;
  try {
    QuietOpenCv quiet;
    if (!m_impl->cap.read(m) || m.empty()) return false;
  } catch (const cv::Exception& e) {
    return io_error(m_name + ": cannot decode a frame (" + hide_credentials(e.msg) + ")");
  }
  DLR_RETURN_IF_ERROR(to_bgr(m, m_name, frame));
  return true;
#else
  (void)frame;
  return unsupported(m_name + ": reading videos needs OpenCV");
#endif
}

Expected<std::unique_ptr<VideoWriter>> VideoWriter::open(const std::string& path, int width, int height,
                                                         double fps) {
#ifdef DLR_HAVE_OPENCV
  DLR_RETURN_IF_ERROR(check_name(path));
  const std::string ext = lower_ext(path);
  const int fourcc = ext == ".avi" || ext == ".mkv" ? cv::VideoWriter::fourcc('M', 'J', 'P', 'G')
                                                    : cv::VideoWriter::fourcc('m', 'p', '4', 'v');
  if (width < 1 || height < 1) return invalid_argument(path + ": video frame size must be positive");
  std::unique_ptr<VideoWriter> w(new VideoWriter());
  w->m_impl = std::make_unique<Impl>();
  w->m_path = path;
  w->m_width = width;
  w->m_height = height;
  try {
    QuietOpenCv quiet;
    if (!w->m_impl->writer.open(path, cv::CAP_ANY, fourcc, fps > 0 ? fps : 25.0, cv::Size(width, height), true) ||
        !w->m_impl->writer.isOpened())
      return io_error(path + ": cannot create the video (unwritable path or codec missing)");
  } catch (const cv::Exception& e) {
    return io_error(path + ": cannot create the video (" + e.msg + ")");
  }
  return w;
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

#ifdef DLR_HAVE_OPENCV
namespace {

// `frame` scaled to fit w x h with its aspect ratio kept, centred on black.
cv::Mat letterboxed(const cv::Mat& frame, int w, int h) {
  const double s = std::min(double(w) / frame.cols, double(h) / frame.rows);
  const int sw = std::clamp(int(std::lround(frame.cols * s)), 1, w);
  const int sh = std::clamp(int(std::lround(frame.rows * s)), 1, h);
  cv::Mat out(h, w, CV_8UC3, cv::Scalar(0, 0, 0));
  cv::Mat scaled;
  cv::resize(frame, scaled, cv::Size(sw, sh), 0, 0, cv::INTER_AREA);
  scaled.copyTo(out(cv::Rect((w - sw) / 2, (h - sh) / 2, sw, sh)));
  return out;
}

}  // namespace
#endif

Status VideoWriter::write(const LoadedImage& frame) {
#ifdef DLR_HAVE_OPENCV
  if (!m_impl) return internal_error(m_path + ": video already closed");
  cv::Mat m(frame.height, frame.width, CV_8UC3, const_cast<uint8_t*>(frame.pixels.data()));
  try {
    if (frame.width != m_width || frame.height != m_height) m = letterboxed(m, m_width, m_height);
    m_impl->writer.write(m);
  } catch (const cv::Exception& e) {
    return io_error(m_path + ": write failed (" + e.msg + ")");
  }
  ++m_written;
  return Status();
#else
  (void)frame;
  return unsupported(m_path + ": --out-video needs OpenCV");
#endif
}

Status VideoWriter::close() {
#ifdef DLR_HAVE_OPENCV
  if (!m_impl) return Status();
  try {
    m_impl->writer.release();
  } catch (const cv::Exception& e) {
    m_impl.reset();
    return io_error(m_path + ": cannot finish the video (" + e.msg + ")");
  }
#endif
  m_impl.reset();
  return Status();
}

}  // namespace dlr::tools
