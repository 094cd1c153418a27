// highgui's windows for dlrun --show (media.h's GuiOps). Linked into the OpenCV plugin
// only: the other tools have no windows and do not load the GUI libraries.
#include <opencv2/core.hpp>
#include <opencv2/highgui.hpp>

#include "tools/common/opencv/opencv_media.h"

namespace dlr::tools::opencv {
namespace {

Status show(const std::string& title, const LoadedImage& image) {
  try {
    cv::namedWindow(title, cv::WINDOW_AUTOSIZE | cv::WINDOW_KEEPRATIO | cv::WINDOW_GUI_NORMAL);  // once per title
    const cv::Mat img(image.height, image.width, CV_8UC3, const_cast<uint8_t*>(image.pixels.data()));
    cv::imshow(title, img);
  } catch (const cv::Exception& e) {
    return unsupported("--show: cannot show the window " + title + " (" + e.msg + ")");
  }
  return Status();
}

Expected<int> wait_key(int wait_ms) {
  try {
    return cv::waitKey(wait_ms);
  } catch (const cv::Exception& e) {
    return unsupported("--show: the window failed (" + e.msg + ")");
  }
}

Expected<bool> visible(const std::string& title) {
  try {
    return cv::getWindowProperty(title, cv::WND_PROP_VISIBLE) >= 1;
  } catch (const cv::Exception& e) {
    return unsupported("--show: the window failed (" + e.msg + ")");
  }
}

void destroy(const std::string& title) {
  try {
    cv::destroyWindow(title);
  } catch (const cv::Exception&) {
    // the window is gone already (closed by the user)
  }
}

}  // namespace

const GuiOps* highgui_ops() {
  static const GuiOps ops{show, wait_key, visible, destroy};
  return &ops;
}

}  // namespace dlr::tools::opencv
