// Boxes and labels drawn with OpenCV like Darknet's draw_detections_v3 (draw.h).
#include <algorithm>
#include <cstdio>

#include <opencv2/imgproc.hpp>

#include "tools/common/opencv/opencv_media.h"

namespace dlr::tools::opencv {
namespace {

void draw(cv::Mat& out, const std::vector<Detection>& dets, const std::vector<std::string>& names) {
  const int width = out.cols, height = out.rows;
  for (const Detection& d : dets) {
    auto clampi = [](int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); };
    const int left = clampi(int((d.box.x - d.box.w / 2) * width), width - 1);
    const int right = clampi(int((d.box.x + d.box.w / 2) * width), width - 1);
    const int top = clampi(int((d.box.y - d.box.h / 2) * height), height - 1);
    const int bot = clampi(int((d.box.y + d.box.h / 2) * height), height - 1);
    const int hue = (d.class_id * 47) % 180;
    cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(hue, 200, 255)), bgr;
    cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
    const cv::Vec3b c = bgr.at<cv::Vec3b>(0, 0);
    const cv::Scalar color(c[0], c[1], c[2]);
    const int thick = std::max(1, int(height * 0.006));
    cv::rectangle(out, cv::Point(left, top), cv::Point(right, bot), color, thick);
    char label[128];
    const std::string& name = d.class_id >= 0 && d.class_id < int(names.size()) ? names[size_t(d.class_id)] : "?";
    std::snprintf(label, sizeof(label), "%s: %.2f", name.c_str(), d.prob);
    int base = 0;
    const double scale = std::max(0.4, height / 1000.0);
    const cv::Size ts = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, scale, 1, &base);
    const int ty = std::max(ts.height + 2, top);
    cv::rectangle(out, cv::Point(left, ty - ts.height - 2), cv::Point(left + ts.width, ty + base - 2), color,
                  cv::FILLED);
    cv::putText(out, label, cv::Point(left, ty - 2), cv::FONT_HERSHEY_SIMPLEX, scale, cv::Scalar(0, 0, 0), 1);
  }
}

}  // namespace

Expected<LoadedImage> annotate_image(const LoadedImage& image, const std::vector<Detection>& dets,
                                     const std::vector<std::string>& names) {
  LoadedImage copy = image;
  cv::Mat m(copy.height, copy.width, CV_8UC3, copy.pixels.data());
  try {
    draw(m, dets, names);
  } catch (const cv::Exception& e) {
    return internal_error("drawing detections failed (" + e.msg + ")");
  }
  return copy;
}

}  // namespace dlr::tools::opencv
