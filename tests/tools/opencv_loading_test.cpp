// OpenCV loads when used (tools/common/media.h): dlrun and dlimage need no OpenCV
// library; --help and a .ppm detection map none; a JPEG loads libdlrun-opencv.so, which
// exports one symbol; a missing plugin or one of another build is one line. In a build
// without OpenCV the first two hold trivially and the plugin tests skip.
#include <gtest/gtest.h>

#include <string>

#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"

namespace dlr::test {
namespace {

constexpr const char* kOpenCvLibrary = "libopencv_";

TEST(OpenCvLoading, DlrunAndDlimageNeedNoOpenCvLibrary) {
  for (const char* tool : {"dlrun", "dlimage"}) {
    const std::string file = std::string(DLR_TOOLS_DIR) + "/" + tool;
    const ToolResult r = run_shell("readelf -d '" + file + "' | grep NEEDED");
    ASSERT_EQ(r.code, 0) << file << ": " << r.err;
    EXPECT_NE(r.out.find("libc.so"), std::string::npos) << file << ": " << r.out;  // readelf read it
    EXPECT_EQ(r.out.find(kOpenCvLibrary), std::string::npos) << file << " needs OpenCV:\n" << r.out;
  }
}

// The dynamic linker's log names every object the process loaded.
TEST(OpenCvLoading, HelpAndAPpmDetectionLoadNoOpenCv) {
  const ToolResult help = run_shell("LD_DEBUG=libs " DLR_TOOLS_DIR "/dlrun --help");
  ASSERT_EQ(help.code, 0) << help.err;
  EXPECT_NE(help.err.find("calling init: "), std::string::npos) << "no LD_DEBUG log:\n" << help.err.substr(0, 2000);
  EXPECT_EQ(help.err.find(kOpenCvLibrary), std::string::npos) << "--help loaded OpenCV";

  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  const std::string image = temp_dir() + "/scene.ppm";
  ASSERT_EQ(run_tool("dlimage synth " + image).code, 0);
  const ToolResult r = run_shell("LD_DEBUG=libs " DLR_TOOLS_DIR "/dlrun " + cfg + " " + weights + " " + image +
                                 " --device cpu --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Predicted in"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find(kOpenCvLibrary), std::string::npos) << "a .ppm detection loaded OpenCV";
}

#ifdef DLR_OPENCV_PLUGIN
TEST(OpenCvLoading, PluginExportsOnlyItsEntryPoint) {
  const ToolResult r = run_shell("nm -D --defined-only '" DLR_OPENCV_PLUGIN "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(" T dlr_opencv_media_v1"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.out), 1) << r.out;
}

TEST(OpenCvLoading, AJpegLoadsThePluginAndIsDetected) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  DLR_REQUIRE_FILE(dog, "images/dog.jpg");
  const ToolResult r = run_shell("LD_DEBUG=libs " DLR_TOOLS_DIR "/dlrun " + cfg + " " + weights + " " + dog +
                                 " --device cpu --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("dog: "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("libdlrun-opencv.so"), std::string::npos) << "the plugin was not loaded";
  EXPECT_NE(r.err.find("libopencv_imgcodecs"), std::string::npos) << "OpenCV was not loaded";
}

TEST(OpenCvLoading, VersionNamesOpenCvThroughThePlugin) {
  const ToolResult r = run_tool("dlrun --version");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("OpenCV: 4."), std::string::npos) << r.out;
}

TEST(OpenCvLoading, MissingPluginIsOneLineNamingIt) {
  const std::string env = "DLRUN_OPENCV_PLUGIN=/nonexistent/libdlrun-opencv.so ";
  const ToolResult v = run_shell(env + DLR_TOOLS_DIR "/dlrun --version");
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("OpenCV: the OpenCV plugin libdlrun-opencv.so.0.1 could not be loaded: "), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("DLRUN_OPENCV_PLUGIN"), std::string::npos) << v.out;

  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  DLR_REQUIRE_FILE(dog, "images/dog.jpg");
  const ToolResult r = run_shell(env + DLR_TOOLS_DIR "/dlrun " + cfg + " " + weights + " " + dog + " --threads 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("could not be loaded"), std::string::npos) << r.err;
}

TEST(OpenCvLoading, PluginOfAnotherBuildIsRefused) {
  const ToolResult r = run_shell("DLRUN_OPENCV_PLUGIN='" DLR_OTHER_BUILD_PLUGIN "' " DLR_TOOLS_DIR "/dlrun --version");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("belongs to another build of dlrun"), std::string::npos) << r.out;
}
#endif

}  // namespace
}  // namespace dlr::test
