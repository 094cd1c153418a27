// The OpenCV implementations behind media.h's table (dlr_tools_opencv). Each returns
// one-line errors naming the file, camera or stream; no cv::Exception escapes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/common/media.h"

namespace dlr::tools::opencv {

// images (image_opencv.cpp; decode_with_opencv and imread_checked: image_decode.h,
// image_decode_opencv.cpp)
bool can_write_image(const std::string& path);
Status write_image(const std::string& path, const LoadedImage& image);

// drawing (draw_opencv.cpp)
Expected<LoadedImage> annotate_image(const LoadedImage& image, const std::vector<Detection>& dets,
                                     const std::vector<std::string>& names);

// video (video_opencv.cpp)
void set_logs_quiet(bool quiet);
Expected<std::unique_ptr<VideoReader>> open_video_file(const std::string& path);
Expected<std::unique_ptr<VideoReader>> open_camera(int index);
Expected<std::unique_ptr<VideoReader>> open_stream(const std::string& source, const std::string& name, bool gstreamer);
Expected<std::unique_ptr<VideoWriter>> open_video_writer(const std::string& path, int width, int height, double fps);

// highgui's windows (show_opencv.cpp; only in the plugin, which links highgui).
const GuiOps* highgui_ops();

// The table of the functions above with `gui` (null, or highgui's: show_opencv.cpp).
MediaOps media_table(const GuiOps* gui);

}  // namespace dlr::tools::opencv
