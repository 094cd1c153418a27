// Annotated images: boxes and labels drawn like Darknet's draw_detections_v3
// (boxes truncated to int and clamped to the image). Needs OpenCV.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "tools/common/tool_support.h"

namespace dlr::tools {

// A copy of `image` with `dets` drawn on it.
Expected<LoadedImage> annotate_image(const LoadedImage& image, const std::vector<Detection>& dets,
                                     const std::vector<std::string>& names);

// True when OpenCV can write an image with this file name (it picks the format
// by extension: .jpg, .png, .bmp, .ppm, ...).
bool can_write_image(const std::string& path);

}  // namespace dlr::tools
