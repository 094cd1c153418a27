// media() for the tools and tests that link OpenCV (media.h): the table, without
// windows (highgui is the plugin's alone).
#include "tools/common/opencv/opencv_media.h"

namespace dlr::tools {

const MediaOps* media_if_loaded() {
  static const MediaOps ops = opencv::media_table(nullptr);
  return &ops;
}

Expected<const MediaOps*> media() { return media_if_loaded(); }

}  // namespace dlr::tools
