// dlrun --thread-priority and --cpu-affinity: a run with both reads its weights from
// storage and exits 0 (a warning line only where raising is not permitted); bad values
// and CPUs the process may not use are usage errors of one line; a priority not
// permitted (prlimit to zero, CAP_SYS_NICE dropped with setpriv) is one warning line and
// the run's detections are printed as without it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"
#include "tests/runtime/thread_probe.h"
#include "tools/common/tool_support.h"

namespace dlr {
namespace {

class DlrunThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
    const std::string dir = test::temp_dir();
    tools::LoadedImage img;
    img.width = 64;
    img.height = 48;
    img.pixels.assign(size_t(64) * 48 * 3, 90);
    ASSERT_TRUE(tools::save_ppm(dir + "/threads.ppm", img).ok());
    m_run = "dlrun " + cfg + " " + test::synthetic_weights(cfg) + " " + dir + "/threads.ppm --width 160 --height 160 " +
            "--weights-from storage --reader threads --prepared " + dir + "/threads.dlrw";
  }
  std::string m_run;
};

TEST_F(DlrunThreads, BothOptionsRunFromStorage) {
  const CpuList allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const test::ToolResult r =
      test::run_tool(m_run + " --thread-priority high --cpu-affinity " + std::to_string(allowed.cpus.back()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Predicted in"), std::string::npos) << r.out;
  const int warnings = test::count_of(r.err, "thread_priority high: not permitted");
  EXPECT_EQ(warnings, test::priority_permitted(ThreadPriority::kHigh) ? 0 : 1) << r.err;
}

TEST_F(DlrunThreads, BadValuesAndCpusOutsideTheProcessAreUsageErrors) {
  test::ToolResult r = test::run_tool(m_run + " --thread-priority max");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--thread-priority"), std::string::npos) << r.err;
  r = test::run_tool(m_run + " --cpu-affinity 1-");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "dlrun: --cpu-affinity 1-: expected a CPU list such as 2,3 or 4-7 (CPU numbers 0..1023)\n");
  const CpuList allowed = allowed_cpus();
  const int outside = allowed.cpus.back() + 1;
  if (outside > CpuList::kMaxCpu) GTEST_SKIP() << "every CPU number is allowed";
  r = test::run_tool(m_run + " --cpu-affinity " + std::to_string(outside));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "dlrun: cpu_affinity " + std::to_string(outside) + ": CPU " + std::to_string(outside) +
                       " is not among the CPUs this process may use (" + allowed.to_string() + ")\n");
  r = test::run_tool("dlbench --cpu-affinity " + std::to_string(outside) + " x.cfg --synthetic");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
}

TEST_F(DlrunThreads, APriorityNotPermittedIsOneWarningAndTheRunGoesOn) {
  if (test::run_shell("prlimit --version >/dev/null").code != 0) GTEST_SKIP() << "needs prlimit (util-linux)";
  std::string drop = "prlimit --nice=0:0 --rtprio=0:0 ";
  if (geteuid() == 0) {  // root has CAP_SYS_NICE: drop it from what dlrun may have
    if (test::run_shell("setpriv --version >/dev/null").code != 0) GTEST_SKIP() << "root: needs setpriv (util-linux)";
    drop += "setpriv --bounding-set=-sys_nice ";
  }
  const test::ToolResult alone = test::run_tool(m_run);
  ASSERT_EQ(alone.code, 0) << alone.err;
  const test::ToolResult r = test::run_shell(drop + DLR_TOOLS_DIR "/" + m_run + " --thread-priority realtime");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err,
            "[dlrun] [warning] thread_priority realtime: not permitted (SCHED_FIFO 10 needs CAP_SYS_NICE or "
            "RLIMIT_RTPRIO >= 10, which is 0 here); threads keep normal priority\n");
  // The same detections (the latency differs).
  const auto body = [](const std::string& out) { return out.substr(out.find('\n')); };
  EXPECT_EQ(body(r.out), body(alone.out));
}

}  // namespace
}  // namespace dlr
