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

// A model whose detections the writer gets. name "" (dlrun CFG WEIGHTS): untagged
// output, the single-model formats. A name (dlrun --model): text lines start with
// "[name] ", --json frames hold {"models": [{"model", "infer_ms", "detections"}]},
// and every output file gets "_name" before its extension.
struct ModelTag {
  std::string name;
  int classes = 0;  // of its output layers (COCO category ids when 80)
};

class ResultWriter {
 public:
  ResultWriter(const Args& args, const std::vector<std::string>& names, std::vector<ModelTag> models,
               double video_fps);
  ~ResultWriter();
  Status open();
  // One frame's detections, dets[m] of models[m]; infer_ms[m] is the time of model m's
  // inference that included the frame.
  Status write(const Frame& frame, const std::vector<std::vector<Detection>>& dets, const std::vector<double>& infer_ms);
  Status close();
  int64_t frames() const { return m_frames; }

 private:
  struct ModelFiles;  // one model's --darknet-json, --coco-json and --out-video
  void print_text(const Frame& frame, const std::vector<std::vector<Detection>>& dets,
                  const std::vector<double>& infer_ms) const;
  void print_json(const Frame& frame, const std::vector<std::vector<Detection>>& dets,
                  const std::vector<double>& infer_ms) const;
  Status write_files(size_t m, const Frame& frame, const std::vector<Detection>& dets);  // model m's files

  const Args& m_args;
  const std::vector<std::string>& m_names;
  std::vector<ModelTag> m_models;
  double m_video_fps;
  std::vector<std::unique_ptr<ModelFiles>> m_files;  // one per model
  int64_t m_frames = 0;   // frames written so far (the Darknet frame_id of the last one)
  int64_t m_images = 0;   // image inputs written so far (the --out index)
};

// `base` with "_i" before its extension for i > 0 (the --out and --trace naming).
std::string indexed_name(const std::string& base, int64_t index);
// `base` with "_model" before its extension; `base` itself when model is "" (the
// --model naming of output files).
std::string model_file_name(const std::string& base, const std::string& model);

}  // namespace dlr::tools
