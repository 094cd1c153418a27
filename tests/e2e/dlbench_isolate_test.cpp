// dlbench --isolate (tools/dlbench/isolate.h) on the CPU: every configuration measured
// in a process of its own gives the same rows, in the same order, as one process; the
// parent's JSON has them all; a child's failure is reported, not hidden; the options
// that do not combine are refused with one line.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/test_paths.h"
#include "tests/e2e/json_file.h"
#include "tests/e2e/tool_runner.h"

namespace dlr {
namespace {

using test::read_json;
using test::run_tool;

TEST(DlbenchIsolate, EveryConfigurationInItsOwnProcessGivesTheSameRows) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  const std::string w = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  if (cfg.empty() || w.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string dir = test::temp_dir();
  const std::string common = "dlbench " + cfg + " --weights " + w +
                             " --device cpu --size 160 --batch 1,2 --iters 2 --warmup 0 --threads 1 --json ";
  const auto one = run_tool(common + dir + "/one.json");
  ASSERT_EQ(one.code, 0) << one.err;
  const auto iso = run_tool(common + dir + "/iso.json --isolate");
  ASSERT_EQ(iso.code, 0) << iso.err;
  const nlohmann::json a = read_json(dir + "/one.json"), b = read_json(dir + "/iso.json");
  ASSERT_FALSE(a.is_discarded());
  ASSERT_FALSE(b.is_discarded());
  ASSERT_EQ(a["results"].size(), 2u);
  ASSERT_EQ(b["results"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a["results"][i]["config"], b["results"][i]["config"]);
    EXPECT_EQ(a["results"][i]["batch"], b["results"][i]["batch"]);
    EXPECT_GT(b["results"][i]["network"]["median_ms"].get<double>(), 0.0);
    EXPECT_EQ(a["results"][i]["memory"]["activations"], b["results"][i]["memory"]["activations"]);
    // The row is printed by the parent (the child's stdout is discarded): once each.
    const std::string name = b["results"][i]["config"].get<std::string>();
    const size_t at = iso.out.find(name + " ");
    EXPECT_NE(at, std::string::npos) << iso.out;
    EXPECT_EQ(iso.out.find(name + " ", at + 1), std::string::npos) << iso.out;
  }
  // The children's own JSON files are gone.
  EXPECT_EQ(iso.out.find("config-index"), std::string::npos);
}

// --weight-format fp,int8: one row per format, named by it; on the CPU (fp32) the int8
// row's weights take fewer bytes than the fp row's, though not many fewer: 73 of
// yolo-fastest's 84 convs have filters under kInt8MinFilterWeights and stay fp (79 %
// measured; 31 % when every conv was int8).
TEST(DlbenchIsolate, WeightFormatsAreRowsOfTheirOwn) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  const std::string w = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  if (cfg.empty() || w.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string json = test::temp_dir() + "/formats.json";
  const auto r = run_tool("dlbench " + cfg + " --weights " + w +
                          " --device cpu --size 160 --weight-format fp,int8 --iters 2 --warmup 0 --threads 1 --json " +
                          json);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = read_json(json);
  ASSERT_FALSE(j.is_discarded());
  ASSERT_EQ(j["results"].size(), 2u);
  const std::string fp = j["results"][0]["config"], q = j["results"][1]["config"];
  EXPECT_EQ(fp.find("int8"), std::string::npos) << fp;
  EXPECT_NE(q.find("/int8"), std::string::npos) << q;
  EXPECT_LT(j["results"][1]["memory"]["weights"].get<double>(), 0.85 * j["results"][0]["memory"]["weights"].get<double>())
      << r.out;
}

TEST(DlbenchIsolate, AChildsFailureIsReportedWithItsConfiguration) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  if (cfg.empty()) GTEST_SKIP() << "../shared is not available";
  // A weights file that passes the parent's checks (it only reads the cfg before the
  // children) but not a child's open: the wrong size for the cfg.
  const std::string bad = test::temp_dir() + "/short.weights";
  {
    std::ofstream f(bad, std::ios::binary);
    f << std::string(64, '\0');
  }
  const auto r = run_tool("dlbench " + cfg + " --weights " + bad +
                          " --device cpu --size 160 --iters 1 --warmup 0 --threads 1 --isolate");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("failed in its own process (exit code 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cpu/fp32/b1"), std::string::npos) << r.err;
}

TEST(DlbenchIsolate, AConfigurationIndexOutOfRangeIsRefused) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  const std::string w = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  if (cfg.empty() || w.empty()) GTEST_SKIP() << "../shared is not available";
  const auto r = run_tool("dlbench " + cfg + " --weights " + w + " --device cpu --size 160 --batch 1,2 --config-index 2");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err, "dlbench: --config-index 2: there are 2 configurations (0..1)\n");
}

TEST(DlbenchIsolate, OptionsThatDoNotCombineAreRefused) {
  const std::string cfg = "/nonexistent/x.cfg";
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--isolate --no-isolate --budget-curve 12", "--isolate and --no-isolate contradict"},
           {"--isolate --mode preload,stream --simulate",
            "--simulate needs the profiled preload run in the same process as the stream rows: use it with "
            "--no-isolate"},
           {"--no-isolate", "--no-isolate applies to --budget-curve (isolation is off without it)"}}) {
    const auto r = run_tool("dlbench " + cfg + " --synthetic " + args);
    EXPECT_EQ(r.code, 1) << args << r.err;
    EXPECT_EQ(r.err, "dlbench: " + message + "\n") << args;
  }
}

}  // namespace
}  // namespace dlr
