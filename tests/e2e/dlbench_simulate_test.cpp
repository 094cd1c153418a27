// dlbench --simulate-only (no GPU): the residency planner's predicted latency and the
// lower bound over a budget curve from kernel times in a dlbench JSON file, scaled to a
// given preload latency, with a named copy profile (how docs/streaming.md section 6,
// "The paper's figures, in simulation", puts the paper's Jetson figures next to the
// planner's); session flags reaching the simulated plan, --staging-early swept; its errors.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "loaders/cfg_parser.h"
#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"

namespace dlr {
namespace {

using test::run_tool;

// A dlbench-like JSON with one fp32 result holding `n` kernel times (1 ms each but the
// first, 3 ms: the scale must keep the shape).
std::string layer_ms_file(int n) {
  nlohmann::json ms = nlohmann::json::array();
  for (int i = 0; i < n; ++i) ms.push_back(i == 0 ? 3.0 : 1.0);
  const nlohmann::json j = {
      {"results",
       {{{"config", "cuda/preload/fp32/b1"}, {"precision", "fp32"}},
        {{"config", "cuda/stream@50%:ring/fp32/b1"}, {"precision", "fp32"}, {"stream", {{"kernel_ms_at_open", ms}}}}}}};
  const std::string path = test::temp_dir() + "/layer_ms_" + std::to_string(n) + ".json";
  std::ofstream(path) << j.dump();
  return path;
}

int steps_of(const std::string& cfg) {
  auto net = parse_network_cfg(cfg, CfgOptions{416, 416});
  EXPECT_TRUE(net.ok());
  return net.ok() ? int(net->layers.size()) : 0;
}

TEST(DlbenchSimulateOnly, CurveFromMinimumToAllWithBoundBelowEveryPrediction) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string ms = layer_ms_file(steps_of(cfg));
  const std::string out = test::temp_dir() + "/curve.json";
  const test::ToolResult r =
      run_tool("dlbench " + cfg + " --size 416 --simulate-only --precision fp32 --copy-profile jetson-xavier "
               "--layer-ms-from " + ms + " --scale-preload-ms 160.8 --budget-curve 12 --json " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["mode"], "simulate-only");
  EXPECT_EQ(j["copy_profile"], "jetson-xavier");
  const auto& rows = j["rows"];
  ASSERT_EQ(rows.size(), 12u) << r.out;
  EXPECT_EQ(rows.front()["budget"], "min");
  EXPECT_EQ(rows.back()["budget"], "all");
  int64_t last = 0;
  for (const auto& row : rows) {
    const double preload = row["preload_ms"], predicted = row["predicted_ms"], bound = row["lower_bound_ms"];
    EXPECT_NEAR(preload, 160.8, 1e-9);
    EXPECT_GE(predicted, bound - 1e-9) << row.dump();
    EXPECT_GE(bound, preload - 1e-9) << row.dump();
    const int64_t budget = row["budget_bytes"];
    EXPECT_GT(budget, last) << "budgets must grow: " << row.dump();
    last = budget;
    EXPECT_LE(row["device_weight_bytes"].get<int64_t>(), budget) << row.dump();
  }
  EXPECT_NEAR(rows.back()["predicted_ms"].get<double>(), 160.8, 0.5);  // all resident: the kernels (+ launches)
  EXPECT_NE(r.out.find("scaled from"), std::string::npos) << r.out;
}

TEST(DlbenchSimulateOnly, BelowTheMinimumOnlyTheBound) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string ms = layer_ms_file(steps_of(cfg));
  const std::string out = test::temp_dir() + "/below.json";
  const test::ToolResult r = run_tool("dlbench " + cfg + " --size 416 --simulate-only --precision fp16 "
                                      "--copy-profile h100 --layer-ms-from " + ms +
                                      " --layer-ms-config nothing-matches --weight-budget 1%,min --json " + out);
  EXPECT_EQ(r.code, 1);  // no fp16 result in the file
  EXPECT_NE(r.err.find("no fp16 result whose config contains 'nothing-matches'"), std::string::npos) << r.err;
  const test::ToolResult ok = run_tool("dlbench " + cfg + " --size 416 --simulate-only --precision fp32 "
                                       "--copy-profile h100 --layer-ms-from " + ms + " --weight-budget 1%,min --json " +
                                       out);
  ASSERT_EQ(ok.code, 0) << ok.err;
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["residency"], "bound only");
  EXPECT_TRUE(j["rows"][0]["predicted_ms"].is_null());
  EXPECT_FALSE(j["rows"][1]["predicted_ms"].is_null());
}

// --weight-format int8: the plan streams the int8 bytes (about a quarter of fp32's here),
// so its minimal pool and bound are those of the smaller blobs; one format per run.
TEST(DlbenchSimulateOnly, Int8WeightsAreSimulatedWithTheirBytes) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string ms = layer_ms_file(steps_of(cfg));
  nlohmann::json rows[2];
  int k = 0;
  for (const char* format : {"fp", "int8"}) {
    const std::string out = test::temp_dir() + "/format_" + format + ".json";
    const test::ToolResult r = run_tool("dlbench " + cfg + " --size 416 --simulate-only --precision fp32 "
                                        "--copy-profile h100 --layer-ms-from " + ms + " --weight-format " + format +
                                        " --weight-budget min,all --json " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find(std::string(format) + " weights"), std::string::npos) << r.out;
    std::ifstream in(out);
    const nlohmann::json j = nlohmann::json::parse(in);
    ASSERT_EQ(j["rows"].size(), 2u);
    EXPECT_EQ(j["rows"][0]["budget"], "min");
    rows[k++] = j["rows"][0];
  }
  EXPECT_EQ(rows[0]["weight_format"], "fp");
  EXPECT_EQ(rows[1]["weight_format"], "int8");
  const int64_t fp = rows[0]["total_weight_bytes"], int8 = rows[1]["total_weight_bytes"];
  EXPECT_LT(int8, fp * 3 / 10) << rows[1].dump();
  EXPECT_LT(rows[1]["device_weight_bytes"].get<int64_t>(), rows[0]["device_weight_bytes"].get<int64_t>());
  EXPECT_LE(rows[1]["lower_bound_ms"].get<double>(), rows[0]["lower_bound_ms"].get<double>() + 1e-3);
  const test::ToolResult two = run_tool("dlbench " + cfg + " --simulate-only --precision fp32 --copy-profile h100 "
                                        "--layer-ms-from " + ms + " --weight-format fp,int8");
  EXPECT_EQ(two.code, 1);
  EXPECT_NE(two.err.find("--simulate-only takes one --weight-format"), std::string::npos) << two.err;
}

// Every session flag given reaches the simulated plan (one value each); --staging-early,
// like --weight-budget, takes a list: a row per item, the "off" row marked.
TEST(DlbenchSimulateOnly, SessionFlagsApplyAndStagingEarlyIsSwept) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string ms = layer_ms_file(steps_of(cfg));
  const std::string base = "dlbench " + cfg + " --size 416 --simulate-only --precision fp32 --copy-profile h100 "
                           "--layer-ms-from " + ms + " --weight-budget 90%";
  nlohmann::json units[2];
  int k = 0;
  for (const char* u : {"chunks:512KiB", "chunks:2MiB"}) {
    const std::string out = test::temp_dir() + "/units_" + std::to_string(k) + ".json";
    const test::ToolResult r = run_tool(base + " --units " + u + " --json " + out);
    ASSERT_EQ(r.code, 0) << r.err;
    std::ifstream in(out);
    units[k++] = nlohmann::json::parse(in)["rows"][0];
  }
  EXPECT_NE(units[0]["notes"].dump(), units[1]["notes"].dump()) << "--units did not reach the plan";
  const test::ToolResult list = run_tool(base + " --units search,chunks");
  EXPECT_EQ(list.code, 1);
  EXPECT_NE(list.err.find("--units search,chunks: expected search, chunks or chunks:SIZE"), std::string::npos)
      << list.err;
  const std::string out = test::temp_dir() + "/early.json";
  const test::ToolResult swept = run_tool(base + " --staging-early on,off --json " + out);
  ASSERT_EQ(swept.code, 0) << swept.err;
  EXPECT_NE(swept.out.find("+late"), std::string::npos) << swept.out;
  std::ifstream in(out);
  const nlohmann::json rows = nlohmann::json::parse(in)["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["staging_early"], true);
  EXPECT_EQ(rows[1]["staging_early"], false);
  const test::ToolResult bad = run_tool(base + " --staging-early maybe");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--staging-early maybe: expected on or off"), std::string::npos) << bad.err;
}

TEST(DlbenchSimulateOnly, Errors) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string ms = layer_ms_file(steps_of(cfg));
  test::ToolResult r = run_tool("dlbench " + cfg + " --simulate-only --precision fp32 --layer-ms-from " + ms);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("needs a named --copy-profile"), std::string::npos) << r.err;
  r = run_tool("dlbench " + cfg + " --simulate-only --copy-profile h100");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--simulate-only needs --layer-ms-from FILE"), std::string::npos) << r.err;
  r = run_tool("dlbench " + cfg + " --simulate-only --copy-profile h100 --layer-ms-from /nonexistent.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent.json: cannot open"), std::string::npos) << r.err;
  const std::string wrong = layer_ms_file(5);  // 5 kernel times for a network of more steps
  r = run_tool("dlbench " + cfg + " --simulate-only --copy-profile h100 --layer-ms-from " + wrong);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("5 kernel times for"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("steps of " + cfg), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dlr
