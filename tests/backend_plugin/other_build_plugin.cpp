// A stand-in plugin of "another build": its entry points refuse every build id, as a
// plugin of another version or compiler does (tests/tools/backend_loading_test.cpp for
// libdlrun-cuda.so, tests/tools/opencv_loading_test.cpp for libdlrun-opencv.so).
namespace dlr {
struct DeviceBackend;
namespace tools {
struct MediaOps;
}
}  // namespace dlr

extern "C" __attribute__((visibility("default"))) const dlr::DeviceBackend* dlr_cuda_backend_v1(const char*) {
  return nullptr;
}

extern "C" __attribute__((visibility("default"))) const dlr::tools::MediaOps* dlr_opencv_media_v1(const char*) {
  return nullptr;
}
