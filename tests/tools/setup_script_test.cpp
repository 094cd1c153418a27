// scripts/setup.sh refuses an option it does not know with one line and exit code 2,
// before it checks or installs any package.
#include <gtest/gtest.h>

#include <string>

#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"

namespace dlr::test {
namespace {

TEST(SetupScript, UnknownOptionIsOneLine) {
  const ToolResult r = run_shell("bash '" + source_file("scripts/setup.sh") + "' --tool");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "setup.sh: unknown option '--tool' (expected --arm64 or --tools)\n");
}

}  // namespace
}  // namespace dlr::test
