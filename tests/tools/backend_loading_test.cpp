// Backends load when used (docs/architecture.md): in a CUDA build, libdlrun.so and the
// user-facing tools need no CUDA library, a CPU detection maps none, and the CUDA backend
// is a plugin that exports one symbol, loads for --version and is refused with one line
// when it is missing or of another build; cuBLAS is not among its libraries. In a build
// without CUDA the first two hold trivially and the plugin tests skip.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"

namespace dlr::test {
namespace {

const std::regex kCudaLibrary("lib(cudart|cublas|cublasLt|cudnn|cuda)\\.so");

std::string needed_libraries(const std::string& file) {
  const ToolResult r = run_shell("readelf -d '" + file + "' | grep NEEDED");
  EXPECT_EQ(r.code, 0) << file << ": " << r.err;
  return r.out;
}

TEST(BackendLoading, UserFacingTargetsNeedNoCudaLibrary) {
  for (const std::string& file : {std::string(DLR_TOOLS_DIR) + "/dlrun", std::string(DLR_TOOLS_DIR) + "/dlgen",
                                 std::string(DLR_RUNTIME_DIR) + "/libdlrun.so"}) {
    const std::string needed = needed_libraries(file);
    EXPECT_NE(needed.find("libc.so"), std::string::npos) << file << ": " << needed;  // readelf read it
    EXPECT_FALSE(std::regex_search(needed, kCudaLibrary)) << file << " needs a CUDA library:\n" << needed;
  }
}

// The dynamic linker's log of a CPU detection names every object the process loaded.
TEST(BackendLoading, CpuDetectionLoadsNoCudaLibrary) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  const std::string image = temp_dir() + "/scene.ppm";
  ASSERT_EQ(run_tool("dlimage synth " + image).code, 0);
  const ToolResult r = run_shell("LD_DEBUG=libs " DLR_TOOLS_DIR "/dlrun " + cfg + " " + weights + " " + image +
                                " --device cpu --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Predicted in"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("calling init: "), std::string::npos) << "no LD_DEBUG log:\n" << r.err.substr(0, 2000);
  std::smatch m;
  EXPECT_FALSE(std::regex_search(r.err, m, kCudaLibrary)) << "a CPU detection loaded " << m.str();
}

#ifdef DLR_CUDA_PLUGIN
TEST(BackendLoading, PluginExportsOnlyItsEntryPoint) {
  const ToolResult r = run_shell("nm -D --defined-only '" DLR_CUDA_PLUGIN "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(" T dlr_cuda_backend_v1"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
}

// cuBLAS is loaded when a plan needs it (kernels/cuda/cublas_loader.h), not with the plugin.
TEST(BackendLoading, PluginDoesNotNeedCublas) {
  const std::string needed = needed_libraries(DLR_CUDA_PLUGIN);
  EXPECT_NE(needed.find("libcudnn.so"), std::string::npos) << needed;  // readelf read the plugin's list
  EXPECT_EQ(needed.find("libcublas"), std::string::npos) << "the CUDA backend links cuBLAS:\n" << needed;
}

TEST(BackendLoading, VersionLoadsThePlugin) {
  const ToolResult r = run_tool("dlrun --version");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("cuDNN: built with"), std::string::npos) << r.out;
}

TEST(BackendLoading, MissingPluginIsOneLineNamingIt) {
  const ToolResult v = run_shell("DLRUN_CUDA_BACKEND=/nonexistent/libdlrun-cuda.so " DLR_TOOLS_DIR "/dlrun --version");
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("CUDA: the CUDA backend libdlrun-cuda.so"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("could not be loaded: "), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("DLRUN_CUDA_BACKEND"), std::string::npos) << v.out;
}

TEST(BackendLoading, MissingPluginFailsACudaRunInOneLine) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  const std::string image = temp_dir() + "/scene.ppm";
  ASSERT_EQ(run_tool("dlimage synth " + image).code, 0);
  const ToolResult r = run_shell("DLRUN_CUDA_BACKEND=/nonexistent/libdlrun-cuda.so " DLR_TOOLS_DIR "/dlrun " + cfg +
                                 " " + weights + " " + image + " --device cuda");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("could not be loaded"), std::string::npos) << r.err;
}

TEST(BackendLoading, PluginOfAnotherBuildIsRefused) {
  const ToolResult r = run_shell("DLRUN_CUDA_BACKEND='" DLR_OTHER_BUILD_PLUGIN "' " DLR_TOOLS_DIR "/dlrun --version");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("belongs to another build of dlrun"), std::string::npos) << r.out;
}
#endif

}  // namespace
}  // namespace dlr::test
