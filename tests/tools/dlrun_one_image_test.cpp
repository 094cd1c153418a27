// dlrun's one-image rule (tools/dlrun/run.cpp, docs/dlrun-io.md "One image"): a GPU run
// of one image opens without a CUDA graph; several images, or the CPU, leave the option
// as given. The rule is applied before the open, so its debug line is there whether or
// not this machine has a GPU (without one the run then fails to open, which these tests
// do not look at).
#include <gtest/gtest.h>

#include <string>

#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"

namespace dlr::test {
namespace {

const char kLine[] = "one image: no CUDA graph";

class DlrunOneImage : public ::testing::Test {
 protected:
  void SetUp() override {
    DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
    DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
    m_model = cfg + " " + weights;
    m_image = temp_dir() + "/one_image.ppm";
    ASSERT_EQ(run_tool("dlimage synth " + m_image).code, 0);
  }
  std::string log_of(const std::string& args) {
    return run_tool("dlrun " + m_model + " " + args + " --log-level debug").err;
  }
  std::string m_model, m_image;
};

TEST_F(DlrunOneImage, GpuRunOfOneImageHasNoGraph) {
  const std::string err = log_of(m_image + " --device cuda");
  EXPECT_NE(err.find(kLine), std::string::npos) << err.substr(0, 2000);
}

TEST_F(DlrunOneImage, TwoImagesKeepTheGraph) {
  const std::string err = log_of(m_image + " " + m_image + " --device cuda");
  EXPECT_EQ(err.find(kLine), std::string::npos) << err.substr(0, 2000);
}

TEST_F(DlrunOneImage, CpuRunIsLeftAlone) {
  const std::string err = log_of(m_image + " --device cpu --threads 1");
  EXPECT_EQ(err.find(kLine), std::string::npos) << err.substr(0, 2000);
  EXPECT_NE(err.find("exit code 0"), std::string::npos) << err.substr(0, 2000);
}

}  // namespace
}  // namespace dlr::test
