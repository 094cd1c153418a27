// decode_with_opencv and imread_checked (image_decode.h): OpenCV's decoding with the
// size checks before OpenCV allocates. Needs only image_decode.h (the image fuzz harness
// compiles it alone).
#include <algorithm>
#include <new>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "tools/common/image_decode.h"

namespace dlr::tools {
namespace {

// Known formats are checked before OpenCV allocates; unknown ones are left to OpenCV's limits.
Status check_header(const uint8_t* data, size_t size, const std::string& name, const ImageLimits& limits) {
  Expected<ImageHeader> h = read_image_header(data, size, name);
  if (!h.ok()) return h.status().code() == StatusCode::kUnsupported ? Status() : h.status();
  return check_image_size(name, h->format, h->width, h->height, limits);
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

template <class F>
Expected<LoadedImage> decode_guarded(const std::string& name, const ImageLimits& limits, F&& decode) {
  try {
    cv::Mat m = decode();
    if (m.empty()) return io_error(name + ": cannot read image (missing file, unknown format or corrupt data)");
    if (m.type() != CV_8UC3) return internal_error(name + ": OpenCV returned an image that is not 8-bit BGR");
    DLR_RETURN_IF_ERROR(check_image_size(name, "decoded", m.cols, m.rows, limits));
    LoadedImage img;
    img.width = m.cols;
    img.height = m.rows;
    img.pixels.resize(size_t(m.cols) * size_t(m.rows) * 3);
    for (int y = 0; y < m.rows; ++y)
      std::copy(m.ptr<uint8_t>(y), m.ptr<uint8_t>(y) + size_t(m.cols) * 3,
                img.pixels.data() + size_t(y) * size_t(m.cols) * 3);
    return img;
  } catch (const cv::Exception& e) {
    return parse_error(name + ": OpenCV cannot decode the image: " + one_line(e.what()));
  } catch (const std::bad_alloc&) {
    return out_of_memory(name + ": out of memory while decoding the image");
  }
}

}  // namespace

Expected<LoadedImage> decode_with_opencv(const uint8_t* data, size_t size, const std::string& name,
                                         const ImageLimits& limits) {
  DLR_RETURN_IF_ERROR(check_header(data, size, name, limits));
  return decode_guarded(name, limits, [&] {
    const cv::Mat buf(1, int(std::min<size_t>(size, INT32_MAX)), CV_8UC1, const_cast<uint8_t*>(data));
    return cv::imdecode(buf, cv::IMREAD_COLOR);
  });
}

Expected<LoadedImage> imread_checked(const std::string& path, const uint8_t* data, size_t size,
                                     const ImageLimits& limits) {
  DLR_RETURN_IF_ERROR(check_header(data, size, path, limits));
  return decode_guarded(path, limits, [&] { return cv::imread(path, cv::IMREAD_COLOR); });
}

}  // namespace dlr::tools
