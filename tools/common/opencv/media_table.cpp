#include <opencv2/core/version.hpp>

#include "tools/common/image_decode.h"
#include "tools/common/opencv/opencv_media.h"

namespace dlr::tools::opencv {

MediaOps media_table(const GuiOps* gui) {
  MediaOps ops;
  ops.opencv_version = CV_VERSION;
  ops.set_logs_quiet = set_logs_quiet;
  ops.imread_checked = tools::imread_checked;
  ops.can_write_image = can_write_image;
  ops.write_image = write_image;
  ops.annotate_image = annotate_image;
  ops.open_video_file = open_video_file;
  ops.open_camera = open_camera;
  ops.open_stream = open_stream;
  ops.open_video_writer = open_video_writer;
  ops.gui = gui;
  return ops;
}

}  // namespace dlr::tools::opencv
