// The tests find the project tree from wherever their binary runs (a build carried to
// the GPU machine lands under another path than the one it was built in).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/test_paths.h"

namespace dlr::test {
namespace {

TEST(TestPaths, SourceDirHoldsTheDocs) {
  EXPECT_TRUE(std::filesystem::is_regular_file(source_file("docs/cfg-support.md"))) << source_dir();
}

TEST(TestPaths, FindsTheTreeAboveAMovedBinary) {
  const std::filesystem::path root = std::filesystem::path(temp_dir()) / "moved_tree";
  for (const char* d : {"runtime", "docs", "tests", "device-carry/bin"}) std::filesystem::create_directories(root / d);
  std::ofstream(root / "CMakeLists.txt") << "# marker\n";
  EXPECT_EQ(find_source_root({"", (root / "device-carry/bin").string()}), root.string());
  EXPECT_EQ(find_source_root({(root / "device-carry").string()}), root.string());
}

TEST(TestPaths, NoTreeGivesEmpty) {
  const std::filesystem::path lone = std::filesystem::path(temp_dir()) / "lone/a/b";
  std::filesystem::create_directories(lone);
  std::ofstream(lone / "CMakeLists.txt") << "# not a project tree: no runtime/, docs/, tests/\n";
  // The scratch directory sits under /tmp, which holds no project tree above it.
  EXPECT_EQ(find_source_root({lone.string()}), "");
}

}  // namespace
}  // namespace dlr::test
