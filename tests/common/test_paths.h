// Where tests find data: the project tree and the shared folder (models,
// weights, images) that is never committed. Tests that need shared data call
// DLR_REQUIRE_FILE, which skips the test with a message when it is absent.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace dlr::test {

// $DLR_SHARED_DIR, else <source>/../shared, else /work/shared; "" when none exists.
const std::string& shared_dir();
// shared_dir() + "/" + rel, or "" when shared data is absent or the file is missing.
std::string shared_file(const std::string& rel);
std::string source_file(const std::string& rel);  // <source>/rel
std::string temp_dir();                           // a per-process scratch directory

}  // namespace dlr::test

#define DLR_REQUIRE_FILE(var, rel)                                                          \
  const std::string var = ::dlr::test::shared_file(rel);                                     \
  if (var.empty()) GTEST_SKIP() << "shared data not found: " << (rel)                         \
                                << " (set DLR_SHARED_DIR to the folder holding models/, weights/, images/)"
