#include "tools/common/version_info.h"

#ifdef DLR_HAVE_OPENCV
#include <opencv2/core/version.hpp>
#endif
#ifdef DLR_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "runtime/cuda/cuda_engine.h"
#endif

#ifndef DLR_VERSION
#define DLR_VERSION "unknown"
#endif

namespace dlr::tools {
namespace {

#ifdef DLR_HAVE_CUDA
std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
std::string cudnn_version(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
}
#endif

}  // namespace

const char* build_version() { return DLR_VERSION; }

std::string version_text(const std::string& tool) {
  std::string out = tool + " " + build_version() + " (git " + build_git_hash() + ")\n";
#ifdef DLR_HAVE_CUDA
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  out += "CUDA: built with " + cuda_version(CUDART_VERSION) + ", runtime " +
         (runtime ? cuda_version(runtime) : std::string("unavailable")) + "\n";
  out += "cuDNN: built with " + cudnn_version(CUDNN_VERSION) + ", loaded " + cudnn_version(cudnnGetVersion()) + "\n";
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  out += "GPU: " + (count > 0 ? cuda_device_description(0) : std::string("none found")) + "\n";
#else
  out += "CUDA: not built (CPU backend only)\n";
#endif
#ifdef DLR_HAVE_OPENCV
  out += std::string("OpenCV: ") + CV_VERSION + "\n";
#else
  out += "OpenCV: not built (images: binary .ppm only; no videos or cameras)\n";
#endif
  return out;
}

}  // namespace dlr::tools
