// Detection result files in the formats Darknet users already read:
//  - Darknet's `detector test -out result.json`: a JSON array of frames
//    {"frame_id": 1-based, "filename", "objects": [{"class_id", "name",
//    "relative_coordinates": {"center_x", "center_y", "width", "height"}, "confidence"}]};
//    one object per class above the threshold of each box (classes whose name
//    starts with "dont_show" are left out, as Darknet does); coordinates relative
//    to the image and not clamped.
//  - COCO detection results (what Darknet's `detector valid` writes for COCO):
//    a JSON array of {"image_id", "category_id", "bbox": [x, y, w, h] in pixels
//    clamped to the image, "score"}, one entry per class above the threshold.
//  - YOLO label files (Darknet's -save_labels): one line "class cx cy w h" per box
//    (best class, relative, 4 decimals) in a .txt per image.
// Numbers are rounded to 6 decimals (Darknet prints them with %f); keys keep
// Darknet's order (ordered_json).
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.h"
#include "runtime/detect/detection.h"

namespace dlr::tools {

nlohmann::ordered_json darknet_frame_json(long long frame_id, const std::string& filename, const std::vector<Detection>& dets,
                                  const std::vector<std::string>& names);

// The 91-id COCO category of each of the 80 Darknet COCO classes (1-based, with gaps).
const std::array<int, 80>& coco80_category_ids();
// Darknet's COCO image id: the number after the last '_' of the file name
// (COCO_val2014_000000000042.jpg -> 42), else the file name's leading number
// (000000000042.jpg -> 42); `fallback` when there is no number.
long long coco_image_id(const std::string& path, long long fallback);
// COCO result entries of one image. category_id: coco80_category_ids() when the
// network has 80 classes, else the class index.
nlohmann::ordered_json coco_results(long long image_id, const std::vector<Detection>& dets, int classes, int image_w,
                            int image_h);

// The label file text of one image: "class cx cy w h\n" per detection.
std::string yolo_labels(const std::vector<Detection>& dets);
// Where the labels of `image_path` go: beside the image (extension replaced by
// .txt) when `dir` is empty, else DIR/<file stem>.txt.
std::string label_path(const std::string& image_path, const std::string& dir);

// A JSON array written element by element ("[\n", elements joined by ",\n",
// "\n]\n"), so a long run's results reach the file as they come.
class JsonArrayFile {
 public:
  JsonArrayFile() = default;
  JsonArrayFile(const JsonArrayFile&) = delete;
  JsonArrayFile& operator=(const JsonArrayFile&) = delete;
  ~JsonArrayFile();
  Status open(const std::string& path);
  // An array element: each of its elements when it is an array.
  Status append(const nlohmann::ordered_json& element);
  Status close();
  bool is_open() const { return m_file != nullptr; }

 private:
  Status write(const std::string& text);
  std::FILE* m_file = nullptr;
  std::string m_path;
  bool m_first = true;
};

// Writes `text` to `path` (created or replaced); the error names the file.
Status write_text_file(const std::string& path, const std::string& text);

}  // namespace dlr::tools
