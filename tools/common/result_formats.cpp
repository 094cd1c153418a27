#include "tools/common/result_formats.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

namespace dlr::tools {
namespace {

double r6(double v) { return std::round(v * 1e6) / 1e6; }

bool dont_show(const std::vector<std::string>& names, int id) {
  return id >= 0 && id < int(names.size()) && names[size_t(id)].rfind("dont_show", 0) == 0;
}

// Every (class, prob) of a detection above the threshold, in class order (Darknet walks classes 0..n-1).
std::vector<Detection::Extra> classes_of(const Detection& d) {
  std::vector<Detection::Extra> all;
  all.push_back({d.class_id, d.prob});
  all.insert(all.end(), d.others.begin(), d.others.end());
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.class_id < b.class_id; });
  return all;
}

// Leading decimal digits of s (atoi-like); -1 when there are none.
long long leading_number(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i > 18) return -1;
  return std::stoll(s.substr(0, i));
}

}  // namespace

nlohmann::ordered_json darknet_frame_json(long long frame_id, const std::string& filename, const std::vector<Detection>& dets,
                                  const std::vector<std::string>& names) {
  nlohmann::ordered_json objects = nlohmann::ordered_json::array();
  for (const Detection& d : dets) {
    for (const Detection::Extra& c : classes_of(d)) {
      if (dont_show(names, c.class_id)) continue;
      nlohmann::ordered_json o;
      o["class_id"] = c.class_id;
      o["name"] = c.class_id >= 0 && c.class_id < int(names.size()) ? names[size_t(c.class_id)]
                                                                     : std::to_string(c.class_id);
      o["relative_coordinates"] = {{"center_x", r6(d.box.x)},
                                   {"center_y", r6(d.box.y)},
                                   {"width", r6(d.box.w)},
                                   {"height", r6(d.box.h)}};
      o["confidence"] = r6(c.prob);
      objects.push_back(std::move(o));
    }
  }
  nlohmann::ordered_json f;
  f["frame_id"] = frame_id;
  f["filename"] = filename;
  f["objects"] = std::move(objects);
  return f;
}

const std::array<int, 80>& coco80_category_ids() {
  static const std::array<int, 80> ids = {
      1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31,
      32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59,
      60, 61, 62, 63, 64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90};
  return ids;
}

long long coco_image_id(const std::string& path, long long fallback) {
  const std::string file = std::filesystem::path(path).filename().string();
  const size_t us = file.rfind('_');
  const long long n = leading_number(us == std::string::npos ? file : file.substr(us + 1));
  return n >= 0 ? n : fallback;
}

nlohmann::ordered_json coco_results(long long image_id, const std::vector<Detection>& dets, int classes, int image_w,
                            int image_h) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Detection& d : dets) {
    // Pixel corners (double, as Darknet's "/ 2." promotes), clamped to the image.
    double xmin = double(d.box.x) * image_w - double(d.box.w) * image_w / 2.;
    double xmax = double(d.box.x) * image_w + double(d.box.w) * image_w / 2.;
    double ymin = double(d.box.y) * image_h - double(d.box.h) * image_h / 2.;
    double ymax = double(d.box.y) * image_h + double(d.box.h) * image_h / 2.;
    xmin = std::max(xmin, 0.0);
    ymin = std::max(ymin, 0.0);
    xmax = std::min(xmax, double(image_w));
    ymax = std::min(ymax, double(image_h));
    for (const Detection::Extra& c : classes_of(d)) {
      const int cat = classes == 80 && c.class_id >= 0 && c.class_id < 80 ? coco80_category_ids()[size_t(c.class_id)]
                                                                          : c.class_id;
      nlohmann::ordered_json e;
      e["image_id"] = image_id;
      e["category_id"] = cat;
      e["bbox"] = {r6(xmin), r6(ymin), r6(xmax - xmin), r6(ymax - ymin)};
      e["score"] = r6(c.prob);
      out.push_back(std::move(e));
    }
  }
  return out;
}

std::string yolo_labels(const std::vector<Detection>& dets) {
  std::string out;
  char buf[160];
  for (const Detection& d : dets) {
    std::snprintf(buf, sizeof(buf), "%d %.4f %.4f %.4f %.4f\n", d.class_id, double(d.box.x), double(d.box.y),
                  double(d.box.w), double(d.box.h));
    out += buf;
  }
  return out;
}

std::string label_path(const std::string& image_path, const std::string& dir) {
  std::filesystem::path p(image_path);
  if (dir.empty()) return p.replace_extension(".txt").string();
  return (std::filesystem::path(dir) / p.stem()).string() + ".txt";
}

JsonArrayFile::~JsonArrayFile() {
  if (m_file) (void)close();
}

Status JsonArrayFile::open(const std::string& path) {
  if (m_file) return internal_error(m_path + ": already open");
  m_file = std::fopen(path.c_str(), "w");
  if (!m_file) return io_error(path + ": cannot create the file");
  m_path = path;
  m_first = true;
  return write("[\n");
}

Status JsonArrayFile::write(const std::string& text) {
  if (!m_file) return internal_error(m_path + ": not open");
  if (std::fwrite(text.data(), 1, text.size(), m_file) != text.size()) return io_error(m_path + ": write failed");
  return Status();
}

Status JsonArrayFile::append(const nlohmann::ordered_json& element) {
  if (element.is_array()) {
    for (const auto& e : element) DLR_RETURN_IF_ERROR(append(e));
    return Status();
  }
  DLR_RETURN_IF_ERROR(write((m_first ? "" : ",\n") + element.dump()));
  m_first = false;
  if (std::fflush(m_file) != 0) return io_error(m_path + ": write failed");
  return Status();
}

Status JsonArrayFile::close() {
  if (!m_file) return Status();
  Status st = write(m_first ? "]\n" : "\n]\n");
  if (std::fclose(m_file) != 0 && st.ok()) st = io_error(m_path + ": write failed");
  m_file = nullptr;
  return st;
}

Status write_text_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return io_error(path + ": cannot create the file");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return io_error(path + ": write failed");
  return Status();
}

}  // namespace dlr::tools
