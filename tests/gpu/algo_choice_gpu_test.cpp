// Strict fp32's measured algorithm choice (runtime/cuda/algo_choice.cpp) on a real GPU:
// with the choices kept, the first open times every conv configuration's direct-summation
// algorithms and records the kept one's time in the cache file; the second open and a
// streamed open time nothing and compute the same bits; the result stays as close to the
// CPU reference as cuDNN's own choices are.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/session_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

struct NetRun {
  std::vector<std::vector<float>> out;
  EngineOpenTiming timing;
};

NetRun run_net(const std::string& cfg, const std::string& weights, const SessionOptions& o,
            const std::vector<float>& input) {
  NetRun r;
  auto s = Session::open(cfg, weights, o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return r;
  r.out = network_heads(**s, input);
  r.timing = (*s)->engine().open_timing();
  return r;
}

// The "algos" object of the one algorithm cache file under `dir`.
nlohmann::json read_algo_cache(const std::string& dir) {
  std::string path;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/conv-algos")) {
    EXPECT_TRUE(path.empty()) << "more than one algorithm cache file";
    path = entry.path().string();
  }
  const std::string text = read_bytes(path);
  EXPECT_FALSE(text.empty()) << "no algorithm cache file in " << dir;
  return text.empty() ? nlohmann::json() : nlohmann::json::parse(text)["algos"];
}

TEST(AlgoChoiceGpu, StrictFp32TimesOnceKeepsTheBitsAndTheAccuracy) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const std::string cfg = required_shared_file("models/yolov4-tiny.cfg");
  if (cfg.empty()) GTEST_SKIP() << "yolov4-tiny.cfg not found";
  const std::string weights = synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  const std::vector<float> input = random_input(1, 3, 416, 416, 9);
  SessionOptions cpu;
  cpu.device = DeviceKind::kCPU;
  const NetRun ref = run_net(cfg, weights, cpu, input);
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP32;
  const NetRun heuristic = run_net(cfg, weights, o, input);  // choices not kept: cuDNN's, nothing timed
  const std::string dir = temp_dir() + "/algo-choice-cache";
  std::filesystem::remove_all(dir);
  setenv("DLR_CACHE_DIR", dir.c_str(), 1);
  o.cache_kernel_times = true;
  const NetRun first = run_net(cfg, weights, o, input);
  const NetRun second = run_net(cfg, weights, o, input);
  SessionOptions so = o;
  so.mode = WeightMode::kStream;
  so.weight_budget = WeightBudget::min();
  const NetRun streamed = run_net(cfg, weights, so, input);
  const nlohmann::json algos = read_algo_cache(dir);
  unsetenv("DLR_CACHE_DIR");
  ASSERT_FALSE(ref.out.empty() || heuristic.out.empty() || first.out.empty() || second.out.empty() ||
               streamed.out.empty());
  EXPECT_EQ(heuristic.timing.algos_timed, 0);
  EXPECT_GT(first.timing.algos_timed, 0);
  EXPECT_EQ(second.timing.algos_timed, 0);
  EXPECT_EQ(streamed.timing.algos_timed, 0);
  EXPECT_TRUE(same_bits(second.out, first.out)) << "the second open computes other bits than the first";
  EXPECT_TRUE(same_bits(streamed.out, first.out)) << "the streamed open computes other bits than the preload";
  int timed = 0;
  for (auto it = algos.begin(); it != algos.end(); ++it) {
    EXPECT_TRUE(it.value().contains("ms")) << it.key() << ": no measured time in the cache file";
    timed += it.value().contains("ms") ? 1 : 0;
  }
  EXPECT_EQ(timed, first.timing.algos_timed);
  const double heuristic_err = worst_relative(heuristic.out, ref.out, 1e-6);
  const double err = worst_relative(first.out, ref.out, 1e-6);
  std::printf("yolov4-tiny @416 strict fp32: %d configurations timed in %.1f ms, %d changed; error vs the CPU "
              "%.3g (cuDNN's choices %.3g)\n",
              first.timing.algos_timed, first.timing.algo_choice_ms, first.timing.algos_changed, err, heuristic_err);
  EXPECT_LE(err, 2.5 * heuristic_err + 1e-6);
}

}  // namespace
}  // namespace dlr::test
