// dlbench --models on the CPU: each model's own session, then the models on one
// runtime (round robin and its round, concurrent threads and a soak checking every output against the
// single runs; paced by --period-ms), the JSON's memory parts; each model's preload also in a process of its
// own (or not, --no-isolate-baselines; the child, --baseline-only, measures only that);
// a budget the models cannot fit fails with one line naming it; usage errors.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"

namespace dlr {
namespace {

using test::run_tool;

std::string two_models() {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  const std::string w = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  const std::string tiny = test::required_shared_file("models/yolov4-tiny.cfg");
  if (cfg.empty() || w.empty() || tiny.empty()) return "";
  return cfg + ":" + w + "@160," + tiny + "@128";
}

// A paced round robin (--period-ms): every inference begins a period after the one before
// (the run takes at least that long), the period in the JSON and on the round's line,
// which then compares with no bound (the bound's argument has no host gaps).
TEST(DlbenchModels, CpuRoundRobinOneInferenceAPeriod) {
  const std::string models = two_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string json = test::temp_dir() + "/paced.json";
  const int period_ms = 1000, inferences = 2 * (2 + 1);  // two models, two rounds after one
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_tool("dlbench --device cpu --models " + models +
                          " --runtime-budget all --iters 2 --warmup 1 --threads 1 --no-isolate-baselines --period-ms " +
                          std::to_string(period_ms) + " --prefetch-lead 3 --json " + json);
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_GE(wall_ms, (inferences - 1) * period_ms);
  EXPECT_NE(r.out.find("prefetch lead 3 ms, period 1000 ms,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ms of inferences a round, one begun every 1000 ms (the round's lower bound is for back to "
                       "back)"),
            std::string::npos)
      << r.out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  const nlohmann::json& run = j["runs"][0];
  EXPECT_EQ(double(run["period_ms"]), double(period_ms));
  EXPECT_EQ(double(run["prefetch_lead_ms"]), 3.0);
  EXPECT_GT(double(run["round_ms"]), 0.0);
  EXPECT_FALSE(run.contains("round_bound"));
}

TEST(DlbenchModels, CpuRuntimeRoundRobinSoakAndJson) {
  const std::string models = two_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string json = test::temp_dir() + "/models.json";
  const auto r = run_tool("dlbench --device cpu --models " + models +
                          " --runtime-budget all --iters 2 --warmup 1 --concurrent 2 --soak 2 --threads 1 --json " + json);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("separate, summed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("round robin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 outputs differ from the single runs, 0 failures"), std::string::npos) << r.out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_EQ(j["separate"].size(), 2u);
  ASSERT_EQ(j["runs"].size(), 1u);
  const nlohmann::json& run = j["runs"][0];
  ASSERT_EQ(run["models"].size(), 2u);
  const int64_t arena = run["memory"]["arena"], weights = run["memory"]["weights"];
  const int64_t workspace = run["memory"]["workspace"], total = run["memory"]["total"];
  EXPECT_EQ(total, arena + weights + workspace);
  int64_t separate_activations = 0, max_activations = 0;
  for (const auto& s : j["separate"]) {
    const int64_t a = s["memory"]["activations"];
    separate_activations += a;
    max_activations = std::max(max_activations, a);
  }
  EXPECT_LT(arena, separate_activations);  // shared: the largest, not the sum
  EXPECT_GE(arena, max_activations);
  EXPECT_LT(total, int64_t(j["separate_device_bytes"]));
  EXPECT_EQ(int(run["soak"]["mismatches"]), 0);
  double round = 0;
  for (const auto& m : run["models"]) {
    EXPECT_GT(double(m["round_robin_ms"]), 0.0);
    round += double(m["round_robin_ms"]);
  }
  // The round, and no lower bound for it on the CPU (it needs the shared ring of CUDA).
  EXPECT_NEAR(double(run["round_ms"]), round, 1e-9);
  EXPECT_FALSE(run.contains("round_bound"));
  EXPECT_NE(r.out.find("ms a round (round bound: only for a runtime with one shared ring (CUDA))"), std::string::npos)
      << r.out;
  // Each model's preload in a process of its own: a column, a line, a ratio per model.
  EXPECT_NE(r.out.find("own process ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("preload in a process of its own (ms): yolo-fastest-1.1@160 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x own"), std::string::npos) << r.out;
  EXPECT_EQ(j["baselines_in_own_process"], true);
  for (const auto& s : j["separate"]) EXPECT_GT(double(s["latency_own_process_ms"]), 0.0) << s.dump();
  for (const auto& m : run["models"]) {
    EXPECT_GT(double(m["x_preload_own_process"]), 0.0) << m.dump();
    EXPECT_DOUBLE_EQ(double(m["x_preload_own_process"]),
                     double(m["round_robin_ms"]) / double(m["preload_own_process_ms"]));
  }
}

TEST(DlbenchModels, BaselinesInOwnProcessesCanBeSkippedAndTheChildMeasuresOnlyThem) {
  const std::string models = two_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string dir = test::temp_dir();
  const std::string common = "dlbench --device cpu --models " + models + " --iters 1 --warmup 0 --threads 1 --json ";
  auto r = run_tool(common + dir + "/skip.json --runtime-budget all --no-isolate-baselines");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("preload in a process of its own: not measured (--no-isolate-baselines)"), std::string::npos)
      << r.out;
  std::ifstream skip(dir + "/skip.json");
  const nlohmann::json j = nlohmann::json::parse(skip);
  EXPECT_EQ(j["baselines_in_own_process"], false);
  for (const auto& s : j["separate"]) EXPECT_TRUE(s["latency_own_process_ms"].is_null()) << s.dump();
  for (const auto& m : j["runs"][0]["models"]) EXPECT_TRUE(m["x_preload_own_process"].is_null()) << m.dump();
  // The child's own command: the separate sessions only, no runtime.
  r = run_tool(common + dir + "/child.json --baseline-only");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_EQ(r.out.find("round robin"), std::string::npos) << r.out;
  std::ifstream child(dir + "/child.json");
  const nlohmann::json c = nlohmann::json::parse(child);
  ASSERT_EQ(c["separate"].size(), 2u);
  EXPECT_GT(double(c["separate"][0]["latency_ms"]), 0.0);
  EXPECT_FALSE(c.contains("runs"));
}

TEST(DlbenchModels, ImageFramesInTurnTimedFromTheirUploadInTheRuntimeAndTheOwnProcesses) {
  const std::string models = two_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string json = test::temp_dir() + "/image.json";
  const auto r = run_tool("dlbench --device cpu --models " + models +
                          " --runtime-budget all --iters 2 --warmup 1 --threads 1 --input image --frames 3 --time-input --json " +
                          json);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("latency: set_images (the image's staging, upload and resize) + run()"), std::string::npos)
      << r.out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["latency_from"], "set_images");
  EXPECT_EQ(j["input"], "image 640x480 u8 (set_images)");
  EXPECT_EQ(j["frames"], 3);
  EXPECT_NE(r.out.find("each model's inputs: 3 frames in turn"), std::string::npos) << r.out;
  for (const auto& s : j["separate"]) {
    EXPECT_GT(double(s["input_ms"]), 0.0) << s.dump();
    EXPECT_GE(double(s["latency_ms"]), double(s["input_ms"])) << s.dump();  // the upload is in the latency
    EXPECT_GT(double(s["latency_own_process_ms"]), 0.0) << s.dump();      // the children got --input image too
  }
  for (const auto& m : j["runs"][0]["models"]) {
    EXPECT_GT(double(m["input_ms"]), 0.0) << m.dump();
    EXPECT_GE(double(m["round_robin_ms"]), double(m["input_ms"])) << m.dump();
  }
}

TEST(DlbenchModels, ABudgetTheModelsCannotFitFailsWithOneLine) {
  const std::string models = two_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const auto r = run_tool("dlbench --device cpu --models " + models + " --runtime-budget 2MiB --iters 1 --warmup 0");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("runtime budget 2MiB"), std::string::npos) << r.err;
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
}

TEST(DlbenchModels, UsageErrors) {
  const std::string models = two_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  auto r = run_tool("dlbench --device cpu --models " + models + "@33");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("multiple of 32"), std::string::npos) << r.err;
  r = run_tool("dlbench --device cpu --models " + models + " --runtime-budget 120%");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("120%"), std::string::npos) << r.err;
  r = run_tool("dlbench --device cpu --models " + models + " --split fastest");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--split fastest: expected sum or max-slowdown"), std::string::npos) << r.err;
  r = run_tool("dlbench --device gpu --models " + models);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--device must be cpu or cuda"), std::string::npos) << r.err;
  r = run_tool("dlbench --device cpu --models " + models + " --workspace-limit default,25%");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--workspace-limit 25%: expected default, 0 or a size (2MiB, bytes)"), std::string::npos) << r.err;
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  r = run_tool("dlbench --device cpu --models " + models + " --prefetch-lead 2000");
  EXPECT_EQ(r.code, 2) << r.err;  // CLI11's range check
  EXPECT_NE(r.err.find("--prefetch-lead"), std::string::npos) << r.err;
  r = run_tool("dlbench --device cpu --models " + models + " --period-ms -1");
  EXPECT_EQ(r.code, 2) << r.err;  // CLI11's range check
  EXPECT_NE(r.err.find("--period-ms"), std::string::npos) << r.err;
  r = run_tool("dlbench --device cpu --models " + models + " --frames 0");
  EXPECT_EQ(r.code, 2) << r.err;  // CLI11's range check
  EXPECT_NE(r.err.find("--frames: Value 0 not in range 1 to 256"), std::string::npos) << r.err;
  r = run_tool("dlbench --device cpu --models " + models + " --input video");
  EXPECT_EQ(r.code, 2) << r.err;  // CLI11's member check
  EXPECT_NE(r.err.find("--input: video not in {tensor,image}"), std::string::npos) << r.err;
  r = run_tool("dlbench --device cpu --models " + models + " --alone never");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--alone never: expected none or own"), std::string::npos) << r.err;
  r = run_tool("dlbench --device cpu --models " + models + " --alone none,own --no-isolate-baselines");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--alone own needs the baselines measured in processes of their own (drop "
                       "--no-isolate-baselines)"),
            std::string::npos)
      << r.err;
  r = run_tool("dlbench some.cfg --models " + models);
  EXPECT_EQ(r.code, 2) << r.err;
}

}  // namespace
}  // namespace dlr
