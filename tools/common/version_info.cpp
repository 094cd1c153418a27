#include "tools/common/version_info.h"

#ifdef DLR_HAVE_OPENCV
#include "tools/common/media.h"
#endif
#include "runtime/backend.h"

#ifndef DLR_VERSION
#define DLR_VERSION "unknown"
#endif

namespace dlr::tools {

const char* build_version() { return DLR_VERSION; }

std::string version_text(const std::string& tool) {
  std::string out = tool + " " + build_version() + " (git " + build_git_hash() + ")\n";
#ifdef DLR_HAVE_CUDA
  out += device_versions(DeviceKind::kCUDA);  // loads the CUDA backend where it is a plugin
#else
  out += "CUDA: not built (CPU backend only)\n";
#endif
#ifdef DLR_HAVE_OPENCV
  Expected<const MediaOps*> media_ops = media();  // loads OpenCV where it is a plugin
  out += "OpenCV: " + (media_ops.ok() ? std::string((*media_ops)->opencv_version) : media_ops.status().message()) + "\n";
#else
  out += "OpenCV: not built (images: binary .ppm only; no videos or cameras)\n";
#endif
  return out;
}

}  // namespace dlr::tools
