// dlbench --simulate-only (no GPU): the residency planner's predicted latency and the
// lower bound over a budget curve from kernel times in a dlbench JSON file, scaled to a
// given preload latency, with a named copy profile (how docs/streaming.md section 6,
// "The paper's figures, in simulation", puts the paper's Jetson figures next to the
// planner's); session flags reaching the simulated plan, --staging-early swept; the copy
// profile a measured row was planned with (--profile-from-row); its errors.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "loaders/cfg_parser.h"
#include "runtime/streaming/copy_profile_json.h"
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

// --profile-from-row plans with the row's own stream.copy_profile (as dlbench writes it on
// stream rows): the same predictions as the built-in it copies under another name, not
// those of another profile; a row without one, or both flags, is refused with one line.
TEST(DlbenchSimulateOnly, ProfileFromTheRow) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const int n = steps_of(cfg);
  nlohmann::json ms = nlohmann::json::array();
  for (int i = 0; i < n; ++i) ms.push_back(0.002);  // copy-bound: the profile decides
  Expected<CopyProfile> h100 = CopyProfile::builtin("h100");
  ASSERT_TRUE(h100.ok());
  CopyProfile calibrated = *h100;
  calibrated.name = "h100-in-an-inference";
  auto file = [&](const nlohmann::json& stream, const std::string& name) {
    const nlohmann::json j = {
        {"results", {{{"config", "cuda/stream@min/fp16/b1"}, {"precision", "fp16"}, {"stream", stream}}}}};
    const std::string path = test::temp_dir() + "/" + name + ".json";
    std::ofstream(path) << j.dump();
    return path;
  };
  const std::string with_path =
      file({{"kernel_ms_at_open", ms}, {"copy_profile", copy_profile_to_json(calibrated)}}, "row_profile");
  const std::string without_path = file({{"kernel_ms_at_open", ms}}, "no_profile");
  const std::string base = "dlbench " + cfg + " --size 416 --simulate-only --precision fp16 --weight-budget min,90% ";
  auto predicted = [&](const std::string& flags, const std::string& name) {
    const std::string out = test::temp_dir() + "/profile_" + name + ".json";
    const test::ToolResult r = run_tool(base + flags + " --json " + out);
    EXPECT_EQ(r.code, 0) << r.err;
    std::ifstream in(out);
    const nlohmann::json j = nlohmann::json::parse(in);
    EXPECT_EQ(j["rows"].size(), 2u);
    return j;
  };
  const nlohmann::json row = predicted("--profile-from-row --layer-ms-from " + with_path, "row");
  const nlohmann::json named = predicted("--copy-profile h100 --layer-ms-from " + with_path, "named");
  const nlohmann::json other = predicted("--copy-profile discrete --layer-ms-from " + with_path, "other");
  EXPECT_EQ(row["copy_profile"], "h100-in-an-inference");
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(row["rows"][i]["predicted_ms"].get<double>(), named["rows"][i]["predicted_ms"].get<double>());
    EXPECT_NE(row["rows"][i]["predicted_ms"].get<double>(), other["rows"][i]["predicted_ms"].get<double>());
  }
  test::ToolResult r = run_tool(base + "--profile-from-row --layer-ms-from " + without_path);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--profile-from-row: " + without_path + ": cuda/stream@min/fp16/b1 has no stream.copy_profile"),
            std::string::npos)
      << r.err;
  r = run_tool(base + "--profile-from-row --copy-profile h100 --layer-ms-from " + with_path);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("give it or --copy-profile, not both"), std::string::npos) << r.err;
  r = run_tool("dlbench " + cfg + " --synthetic --profile-from-row --layer-ms-from " + with_path);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("go with --simulate-only"), std::string::npos) << r.err;
}

// A row's expansion times (stream.expand_ms_at_open) reach the simulated int8 plans: read,
// said, and predicted apart from the same times without them; a list of another length or
// a negative time is refused with one line.
TEST(DlbenchSimulateOnly, ExpansionTimesOfTheRow) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const int n = steps_of(cfg);
  auto file = [&](const nlohmann::json& expand, const std::string& name) {
    nlohmann::json stream = {{"kernel_ms_at_open", std::vector<double>(size_t(n), 0.05)}};
    if (!expand.is_null()) stream["expand_ms_at_open"] = expand;
    const nlohmann::json j = {
        {"results", {{{"config", "cuda/stream@min/fp16/int8/b1"}, {"precision", "fp16"}, {"stream", stream}}}}};
    const std::string path = test::temp_dir() + "/expand_" + name + ".json";
    std::ofstream(path) << j.dump();
    return path;
  };
  const std::string base =
      "dlbench " + cfg + " --size 416 --simulate-only --precision fp16 --weight-format int8 --copy-profile h100 "
      "--weight-budget min --layer-ms-from ";
  auto predicted = [&](const std::string& path, const std::string& name, std::string* out_text) {
    const std::string out = test::temp_dir() + "/expand_out_" + name + ".json";
    const test::ToolResult r = run_tool(base + path + " --json " + out);
    EXPECT_EQ(r.code, 0) << r.err;
    *out_text = r.out;
    std::ifstream in(out);
    return nlohmann::json::parse(in)["rows"][0]["predicted_ms"].get<double>();
  };
  std::string with_text, without_text;
  const double with = predicted(file(std::vector<double>(size_t(n), 0.02), "with"), "with", &with_text);
  const double without = predicted(file(nullptr, "without"), "without", &without_text);
  EXPECT_NE(with_text.find("with the int8 expansions' part"), std::string::npos) << with_text;
  EXPECT_EQ(without_text.find("with the int8 expansions' part"), std::string::npos) << without_text;
  EXPECT_NE(with, without);
  test::ToolResult r = run_tool(base + file(std::vector<double>(3, 0.0), "short"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("3 expansion times for " + std::to_string(n) + " kernel times"), std::string::npos) << r.err;
  std::vector<double> negative(size_t(n), 0.0);
  negative[1] = -1;
  r = run_tool(base + file(negative, "negative"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("an expansion time is negative or not finite"), std::string::npos) << r.err;
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
