// Everything dlrun writes for a frame's detections: stdout (Darknet text or
// --json lines), --darknet-json, --coco-json, --save-labels, --out images,
// --out-video and the --show windows. open() checks and creates the output files before any work;
// close() finishes them. Errors name the file.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/detect/detection.h"
#include "tools/common/frames.h"
#include "tools/common/inputs.h"
#include "tools/common/result_formats.h"
#include "tools/common/video.h"
#include "tools/dlrun/options.h"
#include "tools/dlrun/show_window.h"

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
  // `names` empty: the classes have no names; text and images say "class N", JSON the index.
  ResultWriter(const Args& args, const std::vector<std::string>& names, std::vector<ModelTag> models,
               double video_fps);
  ~ResultWriter();
  Status open();
  // One frame's detections, dets[m] of models[m]; infer_ms[m] is the time of model m's
  // inference that included the frame.
  Status write(const Frame& frame, const std::vector<std::vector<Detection>>& dets, const std::vector<double>& infer_ms);
  // An input that failed to read (its error already on stderr): with --json, the line
  // {"image": path, "error": message} on stdout; the result files leave it out.
  Status write_failure(const std::string& path, const std::string& message);
  Status close();
  int64_t frames() const { return m_frames; }
  // --show: the user asked to stop (Esc, q, or a window closed).
  bool stop_requested() const { return m_stop_requested; }

 private:
  struct ModelFiles;  // one model's --darknet-json, --coco-json and --out-video
  void print_text(const Frame& frame, const std::vector<std::vector<Detection>>& dets,
                  const std::vector<double>& infer_ms) const;
  void print_json(const Frame& frame, const std::vector<std::vector<Detection>>& dets,
                  const std::vector<double>& infer_ms) const;
  Status write_files(size_t m, const Frame& frame, const std::vector<Detection>& dets);  // model m's files
  // Where model m's annotated image of `frame` goes: --out with _i for image i > 0, or
  // in the --out folder under the source's file name (_i for a name met before).
  std::string image_out_path(size_t m, const Frame& frame);

  const Args& m_args;
  const std::vector<std::string>& m_names;  // empty: none (JSON "class"/"name" is the index as text)
  std::vector<std::string> m_labels;        // text and images: m_names, else "class N"
  std::vector<ModelTag> m_models;
  double m_video_fps;
  std::vector<std::unique_ptr<ModelFiles>> m_files;  // one per model
  int64_t m_frames = 0;   // frames written so far (the Darknet frame_id of the last one)
  int64_t m_images = 0;   // image inputs written so far (the --out index)
  std::map<std::string, int> m_out_names;  // --out folder: times each file name was written
  std::unique_ptr<ShowWindows> m_show;     // --show
  bool m_stop_requested = false;
};

// Creates, before any work, the folders the output files need: the parent folder of
// --out, --out-video, --darknet-json, --coco-json, --report-file, --trace and
// --save-plan, --labels-dir itself, and --out itself when it names a folder (ends in
// '/' or is one). The error names the flag and the folder.
Status create_output_folders(const Args& args);
// The outputs made of image inputs only (--out, --save-labels) refuse a video or
// camera among the inputs, naming it, rather than write nothing for it.
Status check_image_only_outputs(const Args& args, const std::vector<InputItem>& inputs);
// --out names a folder: it ends in '/' or is an existing directory.
bool out_is_folder(const std::string& out);

// `base` with "_i" before its extension for i > 0 (the --out and --trace naming).
std::string indexed_name(const std::string& base, int64_t index);
// `base` with "_model" before its extension; `base` itself when model is "" (the
// --model naming of output files).
std::string model_file_name(const std::string& base, const std::string& model);

}  // namespace dlr::tools
