#include <cmath>
#include <cstdio>
#include <fstream>

#include "tools/common/tool_support.h"

#ifdef DLR_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace dlr::tools {

ImageView LoadedImage::view() const {
  ImageView v;
  v.data = pixels.data();
  v.width = width;
  v.height = height;
  v.channels = 3;
  v.row_stride = int64_t(width) * 3;
  v.bgr = true;
  return v;
}

bool have_opencv() {
#ifdef DLR_HAVE_OPENCV
  return true;
#else
  return false;
#endif
}

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Binary PPM (P6, maxval 255): RGB on disk, BGR in memory.
Expected<LoadedImage> load_ppm(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return io_error(path + ": cannot open image");
  std::string magic;
  f >> magic;
  auto next_int = [&](int* v) {
    while (f >> std::ws && f.peek() == '#') f.ignore(1 << 20, '\n');
    return bool(f >> *v);
  };
  int w = 0, h = 0, maxval = 0;
  if (magic != "P6" || !next_int(&w) || !next_int(&h) || !next_int(&maxval))
    return parse_error(path + ": not a binary PPM (P6) image");
  if (w < 1 || h < 1 || w > 65535 || h > 65535 || maxval != 255)
    return parse_error(path + ": PPM size " + std::to_string(w) + "x" + std::to_string(h) + " maxval " +
                       std::to_string(maxval) + " is not supported (need 8-bit)");
  f.get();  // the single whitespace after maxval
  LoadedImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t(w) * h * 3);
  if (!f.read(reinterpret_cast<char*>(img.pixels.data()), std::streamsize(img.pixels.size())))
    return parse_error(path + ": PPM data is truncated");
  for (size_t i = 0; i < img.pixels.size(); i += 3) std::swap(img.pixels[i], img.pixels[i + 2]);
  return img;
}

}  // namespace

Expected<LoadedImage> load_image(const std::string& path) {
  if (ends_with(path, ".ppm")) return load_ppm(path);
#ifdef DLR_HAVE_OPENCV
  cv::Mat m = cv::imread(path, cv::IMREAD_COLOR);
  if (m.empty()) return io_error(path + ": cannot read image (missing file or unknown format)");
  LoadedImage img;
  img.width = m.cols;
  img.height = m.rows;
  img.pixels.resize(size_t(m.cols) * m.rows * 3);
  for (int y = 0; y < m.rows; ++y)
    std::copy(m.ptr<uint8_t>(y), m.ptr<uint8_t>(y) + size_t(m.cols) * 3, img.pixels.data() + size_t(y) * m.cols * 3);
  return img;
#else
  return unsupported(path + ": this dlrun was built without OpenCV and reads only .ppm (P6) images");
#endif
}

Status save_ppm(const std::string& path, const LoadedImage& image) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return io_error(path + ": cannot create file");
  std::fprintf(f, "P6\n%d %d\n255\n", image.width, image.height);
  std::vector<uint8_t> row(size_t(image.width) * 3);
  bool ok = true;
  for (int y = 0; y < image.height && ok; ++y) {
    const uint8_t* src = image.pixels.data() + size_t(y) * image.width * 3;
    for (int x = 0; x < image.width; ++x) {
      row[size_t(x) * 3] = src[x * 3 + 2];
      row[size_t(x) * 3 + 1] = src[x * 3 + 1];
      row[size_t(x) * 3 + 2] = src[x * 3];
    }
    ok = std::fwrite(row.data(), 1, row.size(), f) == row.size();
  }
  if (std::fclose(f) != 0 || !ok) return io_error(path + ": write failed");
  return Status();
}

nlohmann::json detections_json(const std::string& image_name, int width, int height,
                               const std::vector<Detection>& dets, const std::vector<std::string>& names) {
  nlohmann::json j;
  j["image"] = image_name;
  j["width"] = width;
  j["height"] = height;
  j["detections"] = nlohmann::json::array();
  for (const Detection& d : dets) {
    nlohmann::json o;
    o["class"] = d.class_id < int(names.size()) ? names[size_t(d.class_id)] : std::to_string(d.class_id);
    o["id"] = d.class_id;
    o["prob"] = d.prob;
    o["box"] = {{"left", (d.box.x - d.box.w / 2) * width},
                {"top", (d.box.y - d.box.h / 2) * height},
                {"width", d.box.w * width},
                {"height", d.box.h * height}};
    o["relative"] = {{"x", d.box.x}, {"y", d.box.y}, {"w", d.box.w}, {"h", d.box.h}};
    j["detections"].push_back(o);
  }
  return j;
}

int fail(const char* tool, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", tool, message.c_str());
  return kExitError;
}

int fail(const char* tool, const Status& status) { return fail(tool, status.message()); }

}  // namespace dlr::tools
