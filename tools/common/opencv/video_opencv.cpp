// VideoReader and VideoWriter over OpenCV's VideoCapture and VideoWriter.
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <opencv2/core/utils/logger.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#include <opencv2/videoio/registry.hpp>

#include "tools/common/opencv/opencv_media.h"
#include "tools/common/streams.h"

namespace dlr::tools::opencv {
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

class CaptureReader final : public VideoReader {
 public:
  CaptureReader(cv::VideoCapture cap, std::string name, int64_t frames, double fps)
      : VideoReader(std::move(name), frames, fps), m_cap(std::move(cap)) {}

  Expected<bool> read(LoadedImage* frame) override {
    cv::Mat m;
    try {
      QuietOpenCv quiet;
      if (!m_cap.read(m) || m.empty()) return false;
    } catch (const cv::Exception& e) {
      return io_error(name() + ": cannot decode a frame (" + hide_credentials(e.msg) + ")");
    }
    DLR_RETURN_IF_ERROR(to_bgr(m, name(), frame));
    return true;
  }

 private:
  cv::VideoCapture m_cap;
};

// A reader over an opened capture, with its frame count and rate where known.
std::unique_ptr<VideoReader> reader(cv::VideoCapture cap, const std::string& name, bool count_frames) {
  const double n = count_frames ? cap.get(cv::CAP_PROP_FRAME_COUNT) : 0;
  const double fps = cap.get(cv::CAP_PROP_FPS);
  return std::make_unique<CaptureReader>(std::move(cap), name, n >= 1 && n < 1e12 ? int64_t(n) : -1,
                                         fps > 0 && fps < 1000 ? fps : 0);
}

constexpr int kStreamTimeoutMs = 10000;  // FFmpeg: opening, and each read

// Opens `cap` on `source` with `backend`; false when it does not open.
bool open_capture(cv::VideoCapture& cap, const std::string& source, StreamBackend backend) {
  if (backend == StreamBackend::kGStreamer) return cap.open(source, cv::CAP_GSTREAMER) && cap.isOpened();
  const std::vector<int> params = {cv::CAP_PROP_OPEN_TIMEOUT_MSEC, kStreamTimeoutMs, cv::CAP_PROP_READ_TIMEOUT_MSEC,
                                   kStreamTimeoutMs};
  return cap.open(source, cv::CAP_FFMPEG, params) && cap.isOpened();
}

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

class FileWriter final : public VideoWriter {
 public:
  FileWriter(std::string path, int width, int height) : m_path(std::move(path)), m_width(width), m_height(height) {}
  ~FileWriter() override { (void)close(); }

  Status open(int fourcc, double fps) {
    try {
      QuietOpenCv quiet;
      if (!m_writer.open(m_path, cv::CAP_ANY, fourcc, fps, cv::Size(m_width, m_height), true) ||
          !m_writer.isOpened())
        return io_error(m_path + ": cannot create the video (unwritable path or codec missing)");
    } catch (const cv::Exception& e) {
      return io_error(m_path + ": cannot create the video (" + e.msg + ")");
    }
    m_open = true;
    return Status();
  }

  Status write(const LoadedImage& frame) override {
    if (!m_open) return internal_error(m_path + ": video already closed");
    cv::Mat m(frame.height, frame.width, CV_8UC3, const_cast<uint8_t*>(frame.pixels.data()));
    try {
      if (frame.width != m_width || frame.height != m_height) m = letterboxed(m, m_width, m_height);
      m_writer.write(m);
    } catch (const cv::Exception& e) {
      return io_error(m_path + ": write failed (" + e.msg + ")");
    }
    ++m_written;
    return Status();
  }

  Status close() override {
    if (!m_open) return Status();
    m_open = false;
    try {
      m_writer.release();
    } catch (const cv::Exception& e) {
      return io_error(m_path + ": cannot finish the video (" + e.msg + ")");
    }
    return Status();
  }

  int64_t frames_written() const override { return m_written; }

 private:
  cv::VideoWriter m_writer;
  std::string m_path;
  int m_width = 0, m_height = 0;
  bool m_open = false;
  int64_t m_written = 0;
};

}  // namespace

void set_logs_quiet(bool quiet) {
  set_glib_logs_quiet(quiet);
  cv::utils::logging::setLogLevel(quiet ? cv::utils::logging::LOG_LEVEL_SILENT : cv::utils::logging::LOG_LEVEL_INFO);
  if (quiet) ::setenv("OPENCV_FFMPEG_LOGLEVEL", "-8", 0);
  // highgui's Qt (dlrun --show) warns on stderr, e.g. when XDG_RUNTIME_DIR is not set; unless the user set rules.
  if (quiet) ::setenv("QT_LOGGING_RULES", "*.debug=false;*.info=false;*.warning=false", 0);
}

Expected<std::unique_ptr<VideoReader>> open_video_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return io_error(path + ": no such video file");
  try {
    QuietOpenCv quiet;
    cv::VideoCapture cap;
    if (!cap.open(path, cv::CAP_ANY) || !cap.isOpened())
      return io_error(path + ": cannot open the video (unreadable file or a codec OpenCV lacks)");
    return reader(std::move(cap), path, true);
  } catch (const cv::Exception& e) {
    return io_error(path + ": cannot open the video (" + e.msg + ")");
  }
}

Expected<std::unique_ptr<VideoReader>> open_camera(int index) {
  const std::string name = "camera " + std::to_string(index);
  try {
    QuietOpenCv quiet;
    cv::VideoCapture cap;
    if (!cap.open(index, cv::CAP_ANY) || !cap.isOpened())
      return io_error(name + ": cannot open the camera (no such device, or it is busy)");
    return reader(std::move(cap), name, false);
  } catch (const cv::Exception& e) {
    return io_error(name + ": cannot open the camera (" + e.msg + ")");
  }
}

Expected<std::unique_ptr<VideoReader>> open_stream(const std::string& source, const std::string& name,
                                                   bool gstreamer) {
  const StreamBackend backend = gstreamer ? StreamBackend::kGStreamer : StreamBackend::kFFmpeg;
  const std::string tried = std::string(" (OpenCV's ") + backend_name(backend) + " backend)";
  if (!cv::videoio_registry::hasBackend(gstreamer ? cv::CAP_GSTREAMER : cv::CAP_FFMPEG))
    return unsupported(name + ": this OpenCV has no " + backend_name(backend) +
                       " backend to open it (cv::getBuildInformation() lists the video backends)");
  try {
    QuietOpenCv quiet;
    cv::VideoCapture cap;
    if (!open_capture(cap, source, backend))
      return io_error(name + ": cannot open the stream" + tried +
                      (gstreamer ? ": a bad pipeline, a missing GStreamer plugin, or no appsink at its end"
                                 : ": unreachable, refused, not found, or a format FFmpeg lacks"));
    return reader(std::move(cap), name, true);
  } catch (const cv::Exception& e) {
    return io_error(name + ": cannot open the stream" + tried + ": " + hide_credentials(e.msg));
  }
}

Expected<std::unique_ptr<VideoWriter>> open_video_writer(const std::string& path, int width, int height,
                                                         double fps) {
  if (width < 1 || height < 1) return invalid_argument(path + ": video frame size must be positive");
  const std::string ext = lower_ext(path);
  const int fourcc = ext == ".avi" || ext == ".mkv" ? cv::VideoWriter::fourcc('M', 'J', 'P', 'G')
                                                    : cv::VideoWriter::fourcc('m', 'p', '4', 'v');
  auto w = std::make_unique<FileWriter>(path, width, height);
  DLR_RETURN_IF_ERROR(w->open(fourcc, fps > 0 ? fps : 25.0));
  return std::unique_ptr<VideoWriter>(std::move(w));
}

}  // namespace dlr::tools::opencv
