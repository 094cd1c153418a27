// --help (tools/common/help_format.h): dlrun's and dlbench's fit 100 columns, dlrun's
// ends with examples, and dlrun's flags are exactly those docs/dlrun-io.md's tables list.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"
#include "tools/common/help_format.h"

namespace dlr::tools {
namespace {

// The flags a text names with `re` (its first group), "--help" and "--version" aside.
std::set<std::string> flags_of(const std::string& text, const std::regex& re) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1]);
  out.erase("--help");
  out.erase("--version");
  return out;
}

// The flags of the first cells of docs/dlrun-io.md's option tables ("| `--flag ...`, `--other` | ...").
std::set<std::string> documented_flags() {
  std::ifstream f(test::source_file("docs/dlrun-io.md"));
  std::set<std::string> out;
  static const std::regex flag("`(--[a-z0-9-]+)");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string cell = line.substr(0, line.find(" | "));
    for (const std::string& fl : flags_of(cell, flag)) out.insert(fl);
  }
  return out;
}

TEST(Help, WrapTextBreaksAtSpacesWithinTheWidth) {
  EXPECT_EQ(wrap_text("aa bb cc dd", 8, 2, 0), "aa bb cc\n  dd");  // 8 columns fit
  EXPECT_EQ(wrap_text("aa bb", 8, 4, 5), "aa\n    bb");
  EXPECT_EQ(wrap_text("averyveryverylongword x", 8, 0, 0), "averyveryverylongword\nx");
  EXPECT_EQ(wrap_text("one\ntwo", 80, 3, 0), "one\n   two");
}

TEST(Help, FitsOneHundredColumns) {
  for (const char* tool : {"dlrun", "dlbench"}) {
    const test::ToolResult r = test::run_tool(std::string(tool) + " --help");
    ASSERT_EQ(r.code, 0) << tool << ": " << r.err;
    std::istringstream lines(r.out);
    int n = 0;
    for (std::string line; std::getline(lines, line); ++n)
      EXPECT_LE(line.size(), kHelpColumns) << tool << " --help line " << n + 1 << ": " << line;
    EXPECT_GT(n, 20) << tool;
  }
}

TEST(Help, DlrunEndsWithExamples) {
  const test::ToolResult r = test::run_tool("dlrun --help");
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t at = r.out.find("\nExamples:\n  dlrun ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("docs/dlrun-io.md", at), std::string::npos);
}

TEST(Help, DlrunFlagsAreTheDocumentedOnes) {
  const test::ToolResult r = test::run_tool("dlrun --help");
  ASSERT_EQ(r.code, 0) << r.err;
  // an option line: "  --flag ..." or "  -r,--flag ..."
  const std::set<std::string> in_help = flags_of(r.out, std::regex("\\n  (?:-[a-z],)?(--[a-z0-9-]+)"));
  const std::set<std::string> in_docs = documented_flags();
  ASSERT_GT(in_help.size(), 40u);
  for (const std::string& f : in_help) EXPECT_EQ(in_docs.count(f), 1u) << f << " is not in docs/dlrun-io.md";
  for (const std::string& f : in_docs) EXPECT_EQ(in_help.count(f), 1u) << f << " is documented, not in --help";
}

}  // namespace
}  // namespace dlr::tools
