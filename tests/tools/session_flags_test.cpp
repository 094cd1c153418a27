// The session-option flags dlrun and dlbench share (tools/common/session_flags.h): every
// row names a real option, both tools register every row (their --help), and a flag's
// text becomes the option's value, with the refusals and each tool's defaults.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "runtime/options_text.h"
#include "tests/e2e/tool_runner.h"
#include "tools/common/session_flags.h"

namespace dlr::tools {
namespace {

// The options of a command line (no program name) parsed by the table's flags of `tool`.
Expected<SessionOptions> options_of(FlagTool tool, const std::string& command_line) {
  SessionFlagTexts t(tool);
  CLI::App app;
  add_other_session_flags(app, &t);  // every row
  app.parse(command_line, false);
  SessionOptions o;
  DLR_RETURN_IF_ERROR(apply_session_flags(t, &o));
  return o;
}

// The lines of `flag` in a CLI11 --help text ("  --flag TYPE  help", the help on the
// next line where the flag's part is long, wrapped over the lines indented by 30); "" when absent.
std::string option_help(const std::string& help, const std::string& flag) {
  size_t at = help.find("\n  " + flag + " ");
  if (at == std::string::npos) return "";
  size_t end = help.find('\n', at + 1);
  const std::string indent = "\n" + std::string(30, ' ');
  while (end != std::string::npos && help.compare(end, indent.size(), indent) == 0) end = help.find('\n', end + 1);
  return help.substr(at + 1, end - at - 1);
}

TEST(SessionFlags, EveryRowSetsARealOptionOnce) {
  const std::vector<std::string>& names = option_names();
  std::vector<std::string> flags, options;
  for (const SessionFlag& r : session_flags()) {
    EXPECT_NE(std::find(names.begin(), names.end(), r.option), names.end()) << r.flag << " -> " << r.option;
    EXPECT_EQ(std::string(r.flag).rfind("--", 0), 0u) << r.flag;
    EXPECT_NE(r.help, nullptr) << r.flag;
    flags.push_back(r.flag);
    options.push_back(r.option);
  }
  std::sort(flags.begin(), flags.end());
  std::sort(options.begin(), options.end());
  EXPECT_EQ(std::adjacent_find(flags.begin(), flags.end()), flags.end()) << "a flag has two rows";
  EXPECT_EQ(std::adjacent_find(options.begin(), options.end()), options.end()) << "an option has two rows";
}

TEST(SessionFlags, BothToolsRegisterEveryRow) {
  for (const FlagTool tool : {FlagTool::kDlrun, FlagTool::kDlbench}) {
    const std::string name = tool == FlagTool::kDlrun ? "dlrun" : "dlbench";
    const test::ToolResult r = test::run_tool(name + " --help");
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    for (const SessionFlag& row : session_flags()) {
      const std::string flag = flag_name(row, tool);
      const std::string help = option_help(r.out, flag);
      EXPECT_NE(help, "") << name << " --help lacks " << flag;
      // a sweepable row is a list in dlbench only
      if (row.sweep) {
        EXPECT_EQ(help.find("comma-separated") != std::string::npos, tool == FlagTool::kDlbench) << help;
      }
    }
  }
}

TEST(SessionFlags, FlagTextsBecomeOptionValues) {
  Expected<SessionOptions> o = options_of(FlagTool::kDlbench, "--device cuda --mode stream --units chunks "
                                                              "--max-slowdown 10% --weight-budget 25%");
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_FALSE(o->unit_search);
  EXPECT_EQ(o->chunk_bytes, 0);
  EXPECT_DOUBLE_EQ(o->max_slowdown, 0.1);
  EXPECT_EQ(o->weight_budget, WeightBudget::percent(25));
  o = options_of(FlagTool::kDlrun, "--device cuda --mode stream --weights-from storage --zero-copy on "
                                   "--read-block 64KiB --host-budget min --prefetch-reads off --no-graph --layout nhwc");
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ(o->layout, 1);
  EXPECT_EQ(o->zero_copy, 1);
  EXPECT_EQ(o->read_block_bytes, 65536);
  EXPECT_EQ(o->host_budget, 0);
  EXPECT_FALSE(o->prefetch_reads);
  EXPECT_FALSE(o->cuda_graph);
  // dlbench's chunks:SIZE sets the chunk size too
  SessionOptions s;
  ASSERT_TRUE(set_session_flag(FlagTool::kDlbench, "unit_search", "chunks:16MiB", &s).ok());
  EXPECT_FALSE(s.unit_search);
  EXPECT_EQ(s.chunk_bytes, int64_t(16) << 20);
}

// Every row's default text is a value its own conversion accepts, in both tools (a
// default that did not convert would fail every run that leaves the flag out).
TEST(SessionFlags, EveryDefaultConverts) {
  for (const FlagTool tool : {FlagTool::kDlrun, FlagTool::kDlbench}) {
    for (const SessionFlag& r : session_flags()) {
      if (r.convert == FlagConvert::kSwitch) continue;
      const char* text = tool == FlagTool::kDlbench && r.bench_default ? r.bench_default : r.default_text;
      SessionOptions o;
      const Status s = set_session_flag(tool, r.option, text, &o);
      EXPECT_TRUE(s.ok()) << r.flag << " " << text << ": " << s.to_string();
    }
  }
  SessionOptions o;
  ASSERT_TRUE(set_session_flag(FlagTool::kDlbench, "slot_bytes", "1MiB", &o).ok());
  EXPECT_EQ(o.slot_bytes, int64_t(1) << 20);
  ASSERT_TRUE(set_session_flag(FlagTool::kDlrun, "slot_bytes", "0", &o).ok());
  EXPECT_EQ(o.slot_bytes, 0);
}

TEST(SessionFlags, EachToolsKernelCacheSpellingAndDefault) {
  EXPECT_TRUE(options_of(FlagTool::kDlrun, "")->cache_kernel_times);
  EXPECT_FALSE(options_of(FlagTool::kDlrun, "--no-kernel-cache")->cache_kernel_times);
  EXPECT_FALSE(options_of(FlagTool::kDlbench, "")->cache_kernel_times);
  EXPECT_TRUE(options_of(FlagTool::kDlbench, "--cache")->cache_kernel_times);
  EXPECT_EQ(SessionFlagTexts(FlagTool::kDlbench).text("device"), "cuda");
  EXPECT_EQ(SessionFlagTexts(FlagTool::kDlrun).text("device"), "cpu");
}

TEST(SessionFlags, RefusalsAndBadTextsAreOneLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"--units chunks", "--units applies to --device cuda --mode stream only"},
      {"--device cuda --no-calibrate --no-graph", "--no-calibrate applies to --device cuda --mode stream only"},
      {"--no-graph", "--no-graph applies to --device cuda only"},
      {"--decode gpu", "--decode applies to --device cuda only"},
      {"--read-depth 4", "--read-depth applies to --weights-from storage only"},
      {"--device cuda --mode stream --max-slowdown 5x",
       "--max-slowdown \"5x\": expected a percentage such as 5% (>= 0)"},
      {"--weights-from storage --read-block 1x", "--read-block \"1x\": expected a size such as 64MiB, 8MB or a "
                                                 "byte count"},
  };
  for (const auto& [args, message] : cases) {
    const Expected<SessionOptions> o = options_of(FlagTool::kDlrun, args);
    ASSERT_FALSE(o.ok()) << args;
    EXPECT_EQ(o.status().message(), message) << args;
  }
  // each tool's weight budget message (as their tests expect)
  SessionOptions s;
  EXPECT_EQ(set_session_flag(FlagTool::kDlrun, "weight_budget", "lots", &s).message(),
            "--weight-budget: weight budget \"lots\": expected min, all, auto, a percentage (25%) or a size (64MiB, "
            "1.5GB, bytes)");
  EXPECT_EQ(set_session_flag(FlagTool::kDlbench, "weight_budget", "lots", &s).message(),
            "weight budget \"lots\": expected min, all, auto, a percentage (25%) or a size (64MiB, 1.5GB, bytes)");
  EXPECT_EQ(set_session_flag(FlagTool::kDlbench, "zero_copy", "maybe", &s).message(),
            "--zero-copy maybe: expected auto, on or off");
  EXPECT_EQ(set_session_flag(FlagTool::kDlbench, "device", "gpu", &s).message(), "--device gpu: expected cuda or cpu");
  EXPECT_EQ(set_session_flag(FlagTool::kDlbench, "layout", "nwhc", &s).message(),
            "--layout nwhc: expected auto, nchw or nhwc");
}

TEST(SessionFlags, DlbenchResetsWhatDoesNotApply) {
  SessionFlagTexts t(FlagTool::kDlbench);
  t.set("device", "cpu");
  t.set("weight_budget", "50%");
  t.set("cuda_graph", "false");  // --no-graph
  t.set("host_budget", "64MiB");
  EXPECT_TRUE(t.changed("cuda_graph"));
  reset_inapplicable(&t);
  EXPECT_FALSE(t.changed("weight_budget"));
  EXPECT_FALSE(t.changed("cuda_graph"));
  EXPECT_FALSE(t.changed("host_budget"));
  EXPECT_TRUE(t.changed("device"));
  SessionOptions o;
  EXPECT_TRUE(apply_session_flags(t, &o).ok());
}

// Two values of a sweepable row, as dlbench takes a list ("a,b").
std::string two_values(const SessionFlag& row) {
  if (row.choices) {
    const std::string c = row.choices;
    const size_t second = c.find(',', c.find(',') + 1);
    return second == std::string::npos ? c : c.substr(0, second);
  }
  if (row.min < row.max) return std::to_string(row.min) + "," + std::to_string(row.min + 1);
  switch (row.convert) {
    case FlagConvert::kSize: return "0,1MiB";
    case FlagConvert::kBudget: return "min,50%";
    case FlagConvert::kUnits: return "search,chunks";
    default: return "";
  }
}

// dlbench makes one configuration per item of every sweepable flag: a list reaches no
// option's check whole ("--tail-prefetch off,on: expected on or off" was one that did).
TEST(SessionFlags, DlbenchSweepsEverySweepableRow) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  for (const SessionFlag& row : session_flags()) {
    if (!row.sweep) continue;
    const std::string values = two_values(row);
    ASSERT_NE(values.find(','), std::string::npos) << row.flag << ": no two values for the test";
    std::string run = row.option == std::string("device") ? "--mode stream" :
                      row.option == std::string("mode") ? "--device cuda" : "--device cuda --mode stream";
    if (row.applies == FlagApplies::kStorage) run += " --weights-from storage";
    const test::ToolResult r = test::run_tool("dlbench " + cfg + " --synthetic --size 64 --iters 1 --warmup 0 " +
                                              run + " " + flag_name(row, FlagTool::kDlbench) + " " + values);
    EXPECT_EQ(r.err.find(": expected "), std::string::npos) << row.flag << " " << values << ": " << r.err;
    EXPECT_EQ(r.err.find(std::string(flag_name(row, FlagTool::kDlbench)) + " " + values), std::string::npos)
        << r.err;
  }
}

// dlbench --models hands --slot-size, --slice-by and --stage-whole to the runtime's
// models; any other session flag it would not use is refused with one line naming it
// (before, --slot-size was accepted and ignored), and so is a list where one value goes.
TEST(SessionFlags, DlbenchModelsRefusesFlagsItDoesNotUse) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string models = "dlbench --device cpu --models " + cfg + "@64 --iters 1 --warmup 0 ";
  const std::pair<const char*, const char*> refused[] = {{"--weight-budget 8MiB", "--weight-budget is not used by --models"},
                                                         {"--batch 2", "--batch is not used by --models"},
                                                         {"--slot-size 1MiB,2MiB", "--slot-size with --models takes one value"},
                                                         {"--stage-whole maybe", "--stage-whole"},
                                                         {"--stage-whole off", "--stage-whole applies to --device cuda"}};
  for (const auto& [flags, why] : refused) {
    const test::ToolResult r = test::run_tool(models + flags);
    EXPECT_NE(r.code, 0) << flags;
    EXPECT_NE(r.err.find(why), std::string::npos) << flags << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << ": " << r.err;
  }
}

}  // namespace
}  // namespace dlr::tools
