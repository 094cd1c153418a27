// Reads the frames of a list of inputs in order: each image file is one frame,
// each video file, stream or camera gives its frames until it ends (a camera until
// stop is asked or the frame limit is reached). Images are decoded by
// load_image (tool_support.h), videos, streams and cameras by VideoReader (video.h).
//
// End of a stream (streams.h): a stream whose length is known (an http URL of a
// video file) ends at its end, as a file does. A live URL (no known length: rtsp,
// udp, an http camera) that stops delivering frames is opened again per
// ReconnectOptions, one notice line per attempt and one when it gives up; then its
// input ends normally (not a failed input). A GStreamer pipeline ends at its end of
// stream (a pipeline reconnects itself, e.g. rtspsrc's retry properties).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "tools/common/inputs.h"
#include "tools/common/streams.h"
#include "tools/common/tool_support.h"
#include "tools/common/video.h"

namespace dlr::tools {

struct Frame {
  LoadedImage image;
  InputKind kind = InputKind::kImage;
  std::string path;     // the image or video path; "camera N" for a camera; a stream's name
  std::string name;     // what results call it: the path for an image, "PATH#K" for frame K of a video/camera
  int64_t index = 0;    // frame index within its video or camera (0-based); 0 for an image
  int input = 0;        // index of the input item
};

class FrameReader {
 public:
  explicit FrameReader(std::vector<InputItem> items) : m_items(std::move(items)) {}
  // Live streams' reconnects, and where their notices go (one line each, without a
  // trailing newline; none: not reported).
  void set_reconnect(const ReconnectOptions& options, std::function<void(const std::string&)> notice) {
    m_reconnect = options;
    m_notice = std::move(notice);
  }
  // Opens every video, stream and camera once to check it (one that does not open is
  // an error before any work) and to learn video lengths for total(). Streams stay
  // open for next() (a live source is not connected to twice).
  Status probe();
  // The next frame into *f; false when every input is done. An error names the
  // input and ends it (an image that does not decode, a video that stops decoding):
  // failed_path() is its path, and the next call goes on with the next input.
  Expected<bool> next(Frame* f);
  const std::string& failed_path() const { return m_failed_path; }
  // Frames expected: images + known video lengths; -1 when a camera, a live stream or
  // a video of unknown length is among the inputs. Valid after probe().
  int64_t total() const { return m_total; }
  // Frame rate of the first video or camera with a known one, else 0.
  double first_fps() const { return m_fps; }
  const std::vector<InputItem>& items() const { return m_items; }

 private:
  Expected<bool> next_frame(Frame* f);
  Expected<std::unique_ptr<VideoReader>> open_item(int item);
  // The open live stream stopped (`why`): true once it is open again, false when the
  // attempts are spent (or stop was asked) and its input ends.
  bool reconnect(const std::string& why);
  void notice(const std::string& line) const {
    if (m_notice) m_notice(line);
  }

  std::vector<InputItem> m_items;
  size_t m_next_item = 0;
  int m_current = 0;  // the input of the last frame or error
  std::string m_failed_path;
  std::unique_ptr<VideoReader> m_video;  // the open video/camera, if any
  std::map<int, std::unique_ptr<VideoReader>> m_probed;  // streams opened by probe(), by item
  int64_t m_video_frame = 0;
  int m_attempts = 0;  // reconnect attempts since the open stream's last frame
  int m_video_item = -1;
  int64_t m_total = 0;
  double m_fps = 0;
  ReconnectOptions m_reconnect;
  std::function<void(const std::string&)> m_notice;
};

}  // namespace dlr::tools
