// Reads the frames of a list of inputs in order: each image file is one frame,
// each video file or camera gives its frames until it ends (a camera until
// stop is asked or the frame limit is reached). Images are decoded by
// load_image (tool_support.h), videos and cameras by VideoReader (video.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "tools/common/inputs.h"
#include "tools/common/tool_support.h"
#include "tools/common/video.h"

namespace dlr::tools {

struct Frame {
  LoadedImage image;
  InputKind kind = InputKind::kImage;
  std::string path;     // the image or video path; "camera N" for a camera
  std::string name;     // what results call it: the path for an image, "PATH#K" for frame K of a video/camera
  int64_t index = 0;    // frame index within its video or camera (0-based); 0 for an image
  int input = 0;        // index of the input item
};

class FrameReader {
 public:
  explicit FrameReader(std::vector<InputItem> items) : m_items(std::move(items)) {}
  // Opens every video and camera once to check it (an unreadable video or a
  // camera that does not open is an error before any work) and to learn video
  // lengths for total().
  Status probe();
  // The next frame into *f; false when every input is done. An error names the
  // input and ends it (an image that does not decode, a video that stops decoding):
  // failed_path() is its path, and the next call goes on with the next input.
  Expected<bool> next(Frame* f);
  const std::string& failed_path() const { return m_failed_path; }
  // Frames expected: images + known video lengths; -1 when a camera or a video of
  // unknown length is among the inputs. Valid after probe().
  int64_t total() const { return m_total; }
  // Frame rate of the first video or camera with a known one, else 0.
  double first_fps() const { return m_fps; }
  const std::vector<InputItem>& items() const { return m_items; }

 private:
  Expected<bool> next_frame(Frame* f);

  std::vector<InputItem> m_items;
  size_t m_next_item = 0;
  int m_current = 0;  // the input of the last frame or error
  std::string m_failed_path;
  std::unique_ptr<VideoReader> m_video;  // the open video/camera, if any
  int64_t m_video_frame = 0;
  int m_video_item = -1;
  int64_t m_total = 0;
  double m_fps = 0;
};

}  // namespace dlr::tools
