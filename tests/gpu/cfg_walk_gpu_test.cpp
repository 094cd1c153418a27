// The CUDA column of docs/cfg-support.md's cfg table, verified on the device: every
// cfg of ../shared/models/darknet-cfg marked "yes" must open and detect on the CUDA
// engine (fp32, preload) with synthetic weights at the smallest input size it accepts,
// and every cfg marked "no" must fail (tests/common/cfg_walk.h).
#include <gtest/gtest.h>

#include <cstdio>

#include "runtime/core/log.h"
#include "tests/common/cfg_walk.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr {
namespace {

TEST(CfgWalkGpu, CudaColumnOfTheSupportTable) {
  DLR_REQUIRE_GPU();
  const std::string dir = test::shared_dir() + "/models/darknet-cfg";
  const auto cfgs = test::list_cfgs(dir);
  if (test::shared_dir().empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  ASSERT_FALSE(cfgs.empty()) << dir << ": no cfg files, though the shared folder is present";
  const auto table = test::read_cfg_table(test::source_file("docs/cfg-support.md"));
  ASSERT_FALSE(table.empty()) << "docs/cfg-support.md has no cfg table between the markers";
  set_log_level("warn");
  for (const std::string& name : cfgs) {
    const auto it = table.find(name);
    if (it == table.end()) {
      ADD_FAILURE() << name << ": missing from docs/cfg-support.md's table";
      continue;
    }
    const test::CfgWalkRow r = test::walk_cfg(dir + "/" + name, DeviceKind::kCUDA);
    std::printf("%s: CUDA %s %s\n", name.c_str(), r.runs ? "runs" : "fails", r.note.c_str());
    EXPECT_EQ(it->second.cuda, r.runs) << name << ": " << r.note;
  }
}

}  // namespace
}  // namespace dlr
