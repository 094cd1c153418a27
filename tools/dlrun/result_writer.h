// Everything dlrun writes for a frame's detections: stdout (Darknet text or
// --json lines), --darknet-json, --coco-json, --save-labels, --out images and
// --out-video. open() checks and creates the output files before any work;
// close() finishes them. Errors name the file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/detect/detection.h"
#include "tools/common/frames.h"
#include "tools/common/result_formats.h"
#include "tools/common/video.h"
#include "tools/dlrun/options.h"

namespace dlr::tools {

class ResultWriter {
 public:
  ResultWriter(const Args& args, const std::vector<std::string>& names, int classes, double video_fps)
      : m_args(args), m_names(names), m_classes(classes), m_video_fps(video_fps) {}
  Status open();
  // One frame's detections; infer_ms is the time of the inference that included it.
  Status write(const Frame& frame, const std::vector<Detection>& dets, double infer_ms);
  Status close();
  int64_t frames() const { return m_frames; }

 private:
  const Args& m_args;
  const std::vector<std::string>& m_names;
  int m_classes;
  double m_video_fps;
  JsonArrayFile m_darknet, m_coco;
  std::unique_ptr<VideoWriter> m_video;
  int64_t m_frames = 0;   // frames written so far (the Darknet frame_id of the last one)
  int64_t m_images = 0;   // image inputs written so far (the --out index)
};

// `base` with "_i" before its extension for i > 0 (the --out and --trace naming).
std::string indexed_name(const std::string& base, int64_t index);

}  // namespace dlr::tools
