// Video files and cameras in (OpenCV VideoCapture) and an annotated video out
// (OpenCV VideoWriter). Without OpenCV every open() returns a clear error.
// OpenCV's own log lines are silenced while opening, so a failure is one line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "runtime/core/status.h"
#include "tools/common/streams.h"
#include "tools/common/tool_support.h"

namespace dlr::tools {

// Turns OpenCV's own log lines (imread/VideoCapture warnings on stderr; FFmpeg's and
// highgui's Qt's through their environment variables, unless the user set them; GLib's,
// which GStreamer uses, through GLib's default log handler) off, so a
// tool's error is its one line; `quiet` false restores OpenCV's default level. Where
// OpenCV is loaded on use (media.h) the setting is kept and applied when it loads.
void set_opencv_logs_quiet(bool quiet);

// A source of frames. The implementations (tools/common/opencv/video_opencv.cpp) live
// where OpenCV is linked; the factories reach them through media() (media.h).
class VideoReader {
 public:
  // A video file; the error names the file.
  static Expected<std::unique_ptr<VideoReader>> open_file(const std::string& path);
  // A camera by index (/dev/videoN on Linux); the error names the camera.
  static Expected<std::unique_ptr<VideoReader>> open_camera(int index);
  // A URL (FFmpeg backend; opening and each read time out after 10 s) or a GStreamer
  // pipeline (GStreamer backend), by streams.h's rules. `name` is what the reader and
  // its errors call it (hide_credentials(source)); the error names the backend tried.
  static Expected<std::unique_ptr<VideoReader>> open_stream(const std::string& source, const std::string& name);
  virtual ~VideoReader() = default;

  // The next frame as 8-bit BGR; false at the end of the stream.
  virtual Expected<bool> read(LoadedImage* frame) = 0;
  int64_t frame_count() const { return m_frames; }  // -1 when unknown (cameras, live streams, some containers)
  double fps() const { return m_fps; }              // 0 when unknown
  const std::string& name() const { return m_name; }

 protected:
  VideoReader(std::string name, int64_t frames, double fps) : m_name(std::move(name)), m_frames(frames), m_fps(fps) {}

 private:
  std::string m_name;
  int64_t m_frames = -1;
  double m_fps = 0;
};

// An annotated video being written; the implementation's destructor finishes the file
// (unchecked) where close() was not called.
class VideoWriter {
 public:
  // Codec by extension: .avi -> MJPG, .mp4/.m4v/.mov -> mp4v, .mkv -> MJPG; others are an error.
  static Expected<std::unique_ptr<VideoWriter>> open(const std::string& path, int width, int height, double fps);
  // The extension check of open(), without creating anything (to fail before any work).
  static Status check_name(const std::string& path);
  virtual ~VideoWriter() = default;
  // A frame of another size than open()'s is letterboxed into it: scaled with its
  // aspect ratio kept and centred on black.
  virtual Status write(const LoadedImage& frame) = 0;
  virtual Status close() = 0;  // finishes the file; later calls do nothing
  virtual int64_t frames_written() const = 0;
};

}  // namespace dlr::tools
