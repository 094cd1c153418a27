// A stand-in libdlrun-cuda.so of "another build": its entry point refuses every build id,
// as a plugin of another version or compiler does (tests/tools/backend_loading_test.cpp).
namespace dlr {
struct DeviceBackend;
}

extern "C" __attribute__((visibility("default"))) const dlr::DeviceBackend* dlr_cuda_backend_v1(const char*) {
  return nullptr;
}
