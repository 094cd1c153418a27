// The entry point of libdlrun-opencv.so, the tools' OpenCV work loaded on first use
// (tools/common/media_loader.cpp). The only symbol the plugin exports (media_plugin.map).
#include "tools/common/opencv/opencv_media.h"

extern "C" __attribute__((visibility("default"))) const dlr::tools::MediaOps* dlr_opencv_media_v1(
    const char* build_id) {
  if (build_id == nullptr || dlr::tools::media_build_id() != build_id) return nullptr;
#ifdef DLR_NO_HIGHGUI
  static const dlr::tools::MediaOps ops = dlr::tools::opencv::media_table(nullptr);
#else
  static const dlr::tools::MediaOps ops = dlr::tools::opencv::media_table(dlr::tools::opencv::highgui_ops());
#endif
  return &ops;
}
