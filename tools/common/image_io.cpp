#include <cmath>
#include <cstdio>
#include <fstream>

#include "tools/common/tool_support.h"

#include <algorithm>
#include <new>

#include "loaders/cfg_lexer.h"

#ifdef DLR_HAVE_OPENCV
#include "tools/common/media.h"
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

}  // namespace

Expected<LoadedImage> load_image(const std::string& path) {
  try {
    std::string bytes;
    Status st = read_text_file(path, &bytes, kMaxImageFileBytes);
    if (!st.ok()) return st;
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    if (ends_with(path, ".ppm")) return decode_ppm(data, bytes.size(), path);
#ifdef DLR_HAVE_OPENCV
    DLR_ASSIGN_OR_RETURN(const MediaOps* m, media());
    return m->imread_checked(path, data, bytes.size(), ImageLimits{});
#else
    return unsupported(path + ": this dlrun was built without OpenCV and reads only .ppm (P6) images");
#endif
  } catch (const std::bad_alloc&) {
    return out_of_memory(path + ": out of memory while reading the image");
  }
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

int guarded_main(const char* tool, const std::function<int()>& body) noexcept {
  try {
    try {
      return body();
    } catch (const std::bad_alloc&) {
      return fail(tool, "out of memory (std::bad_alloc)");
    } catch (const std::exception& e) {
      std::string what = e.what();
      std::replace(what.begin(), what.end(), '\n', ' ');
      return fail(tool, "unexpected error: " + what);
    } catch (...) {
      return fail(tool, "unexpected error (unknown exception)");
    }
  } catch (...) {  // building the message itself failed
    std::fprintf(stderr, "%s: out of memory\n", tool);
    return kExitError;
  }
}

}  // namespace dlr::tools
