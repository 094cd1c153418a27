// dlrun --prepare OUT end to end: the prepared weight file of a CPU fp32 run and of a
// CUDA fp16 run (planned without a GPU) is written, opens against the plan that run
// uses and verifies; stdout is one line; misuse is a usage error, an unwritable OUT
// a one-line error. yolo-fastest-1.1 with its real weights (shared data).
#include <gtest/gtest.h>

#include <filesystem>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/storage/prepared_file.h"
#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"

namespace dlr {
namespace {
namespace fs = std::filesystem;
using test::count_lines;
using test::run_tool;

class DlrunPrepare : public ::testing::Test {
 protected:
  void SetUp() override {
    DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
    DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
    cfg_ = cfg;
    weights_ = weights;
    dir_ = test::temp_dir() + "/dlrun_prepare";
    fs::create_directories(dir_);
  }

  // Runs dlrun --prepare with `extra` options and checks the file against the plan of `o`.
  void prepare_and_check(const std::string& extra, const SessionOptions& o, const std::string& what) {
    std::string name = what;
    for (char& c : name) c = c == ' ' ? '_' : c;
    const std::string out = dir_ + "/" + name + ".dlrw";
    const test::ToolResult r = run_tool("dlrun " + cfg_ + " " + weights_ + " --prepare " + out + " " + extra);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(count_lines(r.out), 1) << r.out;
    EXPECT_EQ(r.out.rfind("prepared " + out + ": ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(" blobs, " + what), std::string::npos) << r.out;
    EXPECT_TRUE(r.err.empty()) << r.err;
    Expected<NetworkDesc> net = parse_network_cfg(cfg_);
    ASSERT_TRUE(net.ok());
    Expected<ExecutionPlan> plan = plan_for_prepare(*net, o);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    Expected<PreparedIdentity> id = prepared_identity(cfg_, weights_, *plan);
    ASSERT_TRUE(id.ok());
    ASSERT_TRUE(hash_weights_content(&*id).ok());
    Expected<PreparedFile> f = PreparedFile::open(out, *plan, &*id);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_TRUE(f->verify_all().ok());
    EXPECT_NE(r.out.find(std::to_string(f->blobs().size()) + " blobs"), std::string::npos) << r.out;
  }

  std::string cfg_, weights_, dir_;
};

TEST_F(DlrunPrepare, CpuFp32) { prepare_and_check("", SessionOptions(), "f32 NCHW"); }

TEST_F(DlrunPrepare, CudaFp16WithoutAGpu) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  prepare_and_check("--device cuda --precision fp16", o, "f16 NHWC");
}

TEST_F(DlrunPrepare, Errors) {
  const std::string base = "dlrun " + cfg_ + " " + weights_ + " --prepare ";
  test::ToolResult r = run_tool(base + dir_ + "/x.dlrw " + cfg_);  // an input too
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("give no inputs"), std::string::npos) << r.err;
  r = run_tool(base + dir_ + "/x.dlrw --print-plan");
  EXPECT_EQ(r.code, 2) << r.err;
  r = run_tool(base + dir_ + "/x.dlrw --precision fp16");  // the CPU runs fp32 only
  EXPECT_EQ(r.code, 2) << r.err;
  r = run_tool(base + dir_ + "/no/such/dir/x.dlrw");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(dir_ + "/no/such/dir"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(fs::exists(dir_ + "/x.dlrw"));
}

}  // namespace
}  // namespace dlr
