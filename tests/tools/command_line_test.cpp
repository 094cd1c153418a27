// The tools' command-line errors (tools/common/command_line.h): one line "<tool>: ..." on
// stderr and exit 2 for every parse error of every tool, a hint for Darknet's spellings,
// dlrun's hint for a Darknet .data file where the cfg goes, and dlbench's default device
// without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"
#include "tools/common/command_line.h"

namespace dlr::tools {
namespace {

const std::string kModel = "a.cfg b.weights img.jpg ";

TEST(CommandLine, DarknetSpellingsNameTheFlag) {
  CLI::App app;
  float thresh = 0;
  bool ext = false, rec = false;
  app.add_option("--thresh", thresh);
  app.add_flag("--ext-output", ext);
  app.add_flag("--recursive,-r", rec);
  EXPECT_EQ(darknet_option_hint(app, "-thresh", "dlrun"),
            "unknown option -thresh (Darknet spelling; dlrun takes --thresh)");
  EXPECT_EQ(darknet_option_hint(app, "-ext_output", "dlrun"),
            "unknown option -ext_output (Darknet spelling; dlrun takes --ext-output)");
  EXPECT_EQ(darknet_option_hint(app, "-dont_show", "dlrun"),
            "unknown option -dont_show (Darknet spelling; dlrun opens a window only with --show: leave it out)");
  EXPECT_EQ(darknet_option_hint(app, "-r", "dlrun"), "");        // the app's own short flag
  EXPECT_EQ(darknet_option_hint(app, "-0.5", "dlrun"), "");      // a negative number
  EXPECT_EQ(darknet_option_hint(app, "-i", "dlrun"), "");        // no --device here: no hint
  EXPECT_EQ(darknet_option_hint(app, "--thresh", "dlrun"), "");  // already dlrun's
  EXPECT_EQ(darknet_option_hint(app, "-bogus", "dlrun"), "");
  EXPECT_EQ(parse_error_line(app, {"--", "-thresh"}, "line one\nline two\n", "dlrun"), "line one line two");
}

TEST(CommandLine, DlrunParseErrorsAreOneLine) {
  test::ToolResult r = test::run_tool("dlrun " + kModel + "--thresh abc");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "dlrun: --thresh: Value abc not in range 0.000000 to 0.999900\n");
  r = test::run_tool("dlrun " + kModel + "--bogus");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "dlrun: The following argument was not expected: --bogus\n");
}

TEST(CommandLine, DlrunHintsDarknetHabits) {
  const std::pair<const char*, const char*> cases[] = {
      {"-ext_output", "dlrun: unknown option -ext_output (Darknet spelling; dlrun takes --ext-output)\n"},
      {"-thresh 0.3", "dlrun: unknown option -thresh (Darknet spelling; dlrun takes --thresh)\n"},
      {"-dont_show",
       "dlrun: unknown option -dont_show (Darknet spelling; dlrun opens a window only with --show: leave it out)\n"},
      {"-i 0", "dlrun: unknown option -i (Darknet spelling; dlrun takes --device cuda; CUDA_VISIBLE_DEVICES=N "
               "picks GPU N)\n"},
  };
  for (const auto& [args, err] : cases) {
    const test::ToolResult r = test::run_tool("dlrun " + kModel + args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.err, err) << args;
  }
}

TEST(CommandLine, DlrunNamesTheNamesOfADataFileWhereTheCfgGoes) {
  const std::string dir = test::temp_dir() + "/cmdline_data";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/obj.data") << "classes = 3\nnames = " << dir << "/obj.names\n";
  std::ofstream(dir + "/obj.names") << "a\nb\nc\n";
  const test::ToolResult r = test::run_tool("dlrun " + dir + "/obj.data a.cfg b.weights img.jpg");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "dlrun: " + dir + "/obj.data: a Darknet .data file where the CFG goes: dlrun takes CFG WEIGHTS, "
                   "and the class names from --names (--names " + dir + "/obj.names)\n");
}

// dlbench's default device is cuda; without a usable GPU it says so and names --device cpu.
TEST(CommandLine, DlbenchWithoutAGpuNamesDeviceCpu) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const test::ToolResult r = test::run_tool("dlbench " + cfg + " --synthetic --size 160 --iters 1 --warmup 0");
  if (r.code == 0) GTEST_SKIP() << "a usable GPU is present";
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.rfind("dlbench: no usable GPU for the default --device cuda (", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("): give --device cpu to benchmark the CPU\n"), std::string::npos) << r.err;
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(CommandLine, EveryToolReportsParseErrorsOnOneLine) {
  for (const char* tool : {"dlrun", "dlbench", "dlgen", "dlimage", "dlsoak", "dlprobe"}) {
    if (!std::filesystem::exists(std::string(DLR_TOOLS_DIR) + "/" + tool)) continue;  // dlprobe: CUDA builds
    const test::ToolResult r = test::run_tool(std::string(tool) + " --no-such-flag");
    EXPECT_EQ(r.code, 2) << tool;
    EXPECT_EQ(r.err.rfind(std::string(tool) + ": ", 0), 0u) << r.err;  // CLI11's first error, the tool's prefix
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  }
}

}  // namespace
}  // namespace dlr::tools
