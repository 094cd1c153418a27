// Strict fp32's measured algorithm choice (runtime/cuda/algo_choice.cpp) on a real GPU:
// with the choices kept, the first open times every conv configuration's direct-summation
// algorithms and records the kept one's time in the cache file; the second open and a
// streamed open time nothing and compute the same bits; the result stays as close to the
// CPU reference as cuDNN's own choices are.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/compile/compiled_model.h"
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

// yolov4-tiny @416 strict fp32 on `layout` (0 NCHW, 1 NHWC): the CPU reference,
// a run whose choices are not kept (cuDNN's, nothing timed), and with the choices kept in
// a fresh cache directory a first open, a second and a streamed one, and the file after.
struct ChoiceRuns {
  NetRun ref, uncached, first, second, streamed;
  nlohmann::json algos;
  bool ok() const {
    return !ref.out.empty() && !uncached.out.empty() && !first.out.empty() && !second.out.empty() &&
           !streamed.out.empty();
  }
};

ChoiceRuns run_choices(int layout, uint32_t seed, const std::string& dir_name) {
  ChoiceRuns r;
  const std::string cfg = required_shared_file("models/yolov4-tiny.cfg");
  if (cfg.empty()) return r;
  const std::string weights = synthetic_weights(cfg);
  EXPECT_FALSE(weights.empty());
  const std::vector<float> input = random_input(1, 3, 416, 416, seed);
  SessionOptions cpu;
  cpu.device = DeviceKind::kCPU;
  r.ref = run_net(cfg, weights, cpu, input);
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP32;
  o.layout = layout;
  r.uncached = run_net(cfg, weights, o, input);
  const std::string dir = temp_dir() + "/" + dir_name;
  std::filesystem::remove_all(dir);
  setenv("DLR_CACHE_DIR", dir.c_str(), 1);
  o.cache_kernel_times = true;
  r.first = run_net(cfg, weights, o, input);
  r.second = run_net(cfg, weights, o, input);
  SessionOptions so = o;
  so.mode = WeightMode::kStream;
  so.weight_budget = WeightBudget::min();
  r.streamed = run_net(cfg, weights, so, input);
  r.algos = read_algo_cache(dir);
  unsetenv("DLR_CACHE_DIR");
  return r;
}

// What both layouts hold: the first open times, the others neither time nor differ.
void expect_timed_once(const ChoiceRuns& r) {
  EXPECT_EQ(r.uncached.timing.algos_timed, 0);
  EXPECT_GT(r.first.timing.algos_timed, 0);
  EXPECT_EQ(r.second.timing.algos_timed, 0);
  EXPECT_EQ(r.streamed.timing.algos_timed, 0);
  EXPECT_TRUE(same_bits(r.second.out, r.first.out)) << "the second open computes other bits than the first";
  EXPECT_TRUE(same_bits(r.streamed.out, r.first.out)) << "the streamed open computes other bits than the preload";
}

TEST(AlgoChoiceGpu, StrictFp32TimesOnceKeepsTheBitsAndTheAccuracy) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const ChoiceRuns r = run_choices(0, 9, "algo-choice-cache");
  ASSERT_TRUE(r.ok());
  expect_timed_once(r);
  int timed = 0;
  for (auto it = r.algos.begin(); it != r.algos.end(); ++it) {
    EXPECT_TRUE(it.value().contains("ms")) << it.key() << ": no measured time in the cache file";
    timed += it.value().contains("ms") ? 1 : 0;
  }
  EXPECT_EQ(timed, r.first.timing.algos_timed);
  const double heuristic_err = worst_relative(r.uncached.out, r.ref.out, 1e-6);
  const double err = worst_relative(r.first.out, r.ref.out, 1e-6);
  std::printf("yolov4-tiny @416 strict fp32: %d configurations timed in %.1f ms, %d changed; error vs the CPU "
              "%.3g (cuDNN's choices %.3g)\n",
              r.first.timing.algos_timed, r.first.timing.algo_choice_ms, r.first.timing.algos_changed, err,
              heuristic_err);
  EXPECT_LE(err, 2.5 * heuristic_err + 1e-6);
}

// NHWC strict fp32: the 3xTF32 conv is a candidate too. Where it wins (tensor cores), the
// file records it (algorithm 8, kAlgo3xTf32, chunked; 9, kAlgo3xTf32Gemm); the second and streamed opens run it again
// without timing and compute the same bits; the heads stay within the fp32 tolerance of
// the CPU (tests/gpu/engine_test.cpp's kFp32Tol).
TEST(AlgoChoiceGpu, StrictFp32NhwcRunsThreeTf32WhereItWins) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const ChoiceRuns r = run_choices(1, 10, "algo-choice-nhwc-cache");
  ASSERT_TRUE(r.ok());
  expect_timed_once(r);
  int x3 = 0, gemm = 0;
  for (auto it = r.algos.begin(); it != r.algos.end(); ++it) {
    const int algo = it.value()["algo"].get<int>();
    x3 += algo == 8 || algo == 9 ? 1 : 0;
    gemm += algo == 9 ? 1 : 0;
  }
  int major = 0, device = 0;
  ASSERT_EQ(cudaSuccess, cudaGetDevice(&device));
  ASSERT_EQ(cudaSuccess, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major >= 8) {
    EXPECT_GT(x3, 0) << "no conv chosen as 3xTF32 on a GPU with TF32 tensor cores";
  }
  double worst = 0, worst_fma = 0;
  for (size_t h = 0; h < r.ref.out.size(); ++h) {
    worst = std::max(worst, rel_error(r.first.out[h], r.ref.out[h]));
    worst_fma = std::max(worst_fma, rel_error(r.uncached.out[h], r.ref.out[h]));
  }
  std::printf("yolov4-tiny @416 strict fp32 NHWC: %d configurations timed in %.1f ms, %d changed, %d as 3xTF32 "
              "(%d as GEMMs); head error vs the CPU %.3g (FMA only %.3g)\n",
              r.first.timing.algos_timed, r.first.timing.algo_choice_ms, r.first.timing.algos_changed, x3, gemm,
              worst, worst_fma);
  EXPECT_LE(worst, 1e-4);
}

// Strict fp32's auto layout on this GPU (runtime/compile/compile.h, resolved_layout): a
// preload with the kernel cache is NHWC (3xTF32 convs timed) where the GPU has TF32 tensor
// cores, NCHW where it has not; without the cache and streamed it is NCHW.
TEST(AlgoChoiceGpu, StrictFp32AutoLayoutFollowsTheGpu) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const std::string cfg = required_shared_file("models/yolov4-tiny.cfg");
  const std::string weights = synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  int major = 0, device = 0;
  ASSERT_EQ(cudaSuccess, cudaGetDevice(&device));
  ASSERT_EQ(cudaSuccess, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  const std::string dir = temp_dir() + "/algo-choice-auto-cache";
  std::filesystem::remove_all(dir);
  setenv("DLR_CACHE_DIR", dir.c_str(), 1);
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP32;
  const auto layout_of = [&](const SessionOptions& so) {
    auto s = Session::open(cfg, weights, so);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return Layout::kNCHW;
    EXPECT_EQ((*s)->model().target.tf32_tensor_cores, major >= 8);
    return (*s)->model().plan.options.layout;
  };
  EXPECT_EQ(layout_of(o), Layout::kNCHW);  // no kernel cache: nothing is timed
  o.cache_kernel_times = true;
  EXPECT_EQ(layout_of(o), major >= 8 ? Layout::kNHWC : Layout::kNCHW);
  o.mode = WeightMode::kStream;
  EXPECT_EQ(layout_of(o), Layout::kNCHW);
  unsetenv("DLR_CACHE_DIR");
}

}  // namespace
}  // namespace dlr::test
