// Where tests find data: the project tree, the shared folder (models, weights,
// images) that is never committed, a per-process scratch directory, and the
// synthetic weights generated once per test run by the CTest fixture.
//
// Shared data rules: without a shared folder, tests that need it skip with a
// message. With a shared folder, a file a test needs that is missing from it is a
// FAILURE (a partial folder must not turn checks into silent skips).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlr::test {

// $DLR_SHARED_DIR, else <source>/../shared, else /work/shared; "" when none exists.
const std::string& shared_dir();
// shared_dir() + "/" + rel, or "" when shared data is absent or the file is missing.
std::string shared_file(const std::string& rel);
// Like shared_file, but a file missing from a present shared folder also records a
// test failure (ADD_FAILURE naming it). For tests that loop over several files.
std::string required_shared_file(const std::string& rel);
// The project tree: $DLR_SOURCE_DIR, else the tree the tests were built from, else the
// first folder holding CMakeLists.txt, runtime/, docs/ and tests/ above the test
// binary or the working directory (a build carried to another machine).
const std::string& source_dir();
std::string source_file(const std::string& rel);  // source_dir() + "/" + rel
// The first of `starts` or their ancestors that looks like the project tree; "" if none.
std::string find_source_root(const std::vector<std::string>& starts);
// A per-process scratch directory (mkdtemp under $TMPDIR or /tmp), removed with
// everything in it when the process exits normally.
std::string temp_dir();
// The directory the CTest fixture `synthetic_weights` fills with dlgen output
// (<cfg basename>.<seed>.weights); $DLR_SYNTHETIC_DIR overrides it.
std::string synthetic_dir();

// A whole file's bytes ("" when it cannot be read), and writing them back over the
// same file (same inode: an open reader sees them); false when that fails.
std::string read_bytes(const std::string& path);
bool write_bytes_in_place(const std::string& path, const std::string& bytes);

}  // namespace dlr::test

// Skips the test when there is no shared folder at all.
#define DLR_REQUIRE_SHARED_DIR()          \
  if (!::dlr::test::shared_dir().empty()) { \
  } else                                    \
    GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR to the folder holding models/, weights/, images/)"

// `var` = the shared file `rel`. No shared folder: skip. Shared folder without the
// file: fail (fatal for the test).
#define DLR_REQUIRE_FILE(var, rel)                                                                   \
  DLR_REQUIRE_SHARED_DIR();                                                                          \
  const std::string var = ::dlr::test::shared_file(rel);                                             \
  if (!var.empty()) {                                                                               \
  } else                                                                                             \
    FAIL() << "shared data folder " << ::dlr::test::shared_dir() << " lacks " << (rel)
