// Writing images with OpenCV (media.h's can_write_image and write_image).
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "tools/common/opencv/opencv_media.h"

namespace dlr::tools {
namespace opencv {

bool can_write_image(const std::string& path) {
  try {
    return cv::haveImageWriter(path);
  } catch (const cv::Exception&) {
    return false;
  }
}

Status write_image(const std::string& path, const LoadedImage& image) {
  // imwrite throws (rather than returning false) for a name without a known extension.
  if (!can_write_image(path))
    return invalid_argument(path + ": cannot write an image with this name (use an extension OpenCV writes: "
                                   ".jpg, .png, .bmp, .ppm, ...)");
  const cv::Mat m(image.height, image.width, CV_8UC3, const_cast<uint8_t*>(image.pixels.data()));
  try {
    if (!cv::imwrite(path, m)) return io_error(path + ": cannot write the image (unwritable path)");
  } catch (const cv::Exception& e) {
    return io_error(path + ": cannot write the image (" + e.msg + ")");
  }
  return Status();
}

}  // namespace opencv
}  // namespace dlr::tools
