// Walks every cfg of ../shared/models/darknet-cfg and checks it against the table in
// docs/cfg-support.md (detector, loads, runs on CPU with synthetic weights at the smallest
// input size it accepts), so the table cannot go stale. The CUDA column is the
// compile-time claim "every layer kind of the cfg has a CUDA kernel", i.e. equal to the
// CPU column; tests/gpu/cfg_walk_gpu_test.cpp runs the CUDA engine on the device.
// Prints a table row per cfg (paste into the doc when behaviour changes on purpose).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "runtime/core/log.h"
#include "tests/common/cfg_walk.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

TEST(CfgWalk, EveryDarknetCfgMatchesTheSupportTable) {
  const std::string dir = test::shared_dir() + "/models/darknet-cfg";
  const auto cfgs = test::list_cfgs(dir);
  if (test::shared_dir().empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  ASSERT_FALSE(cfgs.empty()) << dir << ": no cfg files, though the shared folder is present";
  const auto table = test::read_cfg_table(test::source_file("docs/cfg-support.md"));
  EXPECT_FALSE(table.empty()) << "docs/cfg-support.md has no cfg table between the markers";
  set_log_level("warn");
  for (const std::string& name : cfgs) {
    const test::CfgWalkRow r = test::walk_cfg(dir + "/" + name, DeviceKind::kCPU);
    std::printf("| `%s` | %s | %s | %s | %s | %s |\n", name.c_str(), r.detector ? "yes" : "no",
                r.loads ? "yes" : "no", r.runs ? "yes" : "no", r.runs ? "yes" : "no",
                r.runs ? ("ran at " + std::to_string(r.size) + "x" + std::to_string(r.size)).c_str()
                       : r.note.c_str());
    const auto it = table.find(name);
    if (it == table.end()) {
      ADD_FAILURE() << name << ": missing from docs/cfg-support.md's table";
      continue;
    }
    EXPECT_EQ(it->second.detector, r.detector) << name << " (detector column)";
    EXPECT_EQ(it->second.loads, r.loads) << name << " (loads column): " << r.note;
    EXPECT_EQ(it->second.cpu, r.runs) << name << " (CPU column): " << r.note;
    EXPECT_EQ(it->second.cuda, r.runs) << name << " (CUDA column, compile-time: every kind has a CUDA kernel)";
  }
  for (const auto& [name, row] : table)
    EXPECT_TRUE(std::find(cfgs.begin(), cfgs.end(), name) != cfgs.end()) << name << ": in the table, not in " << dir;
}

}  // namespace
}  // namespace dlr
