// Kernel times kept per GPU and model (runtime/cache/kernel_times_cache.h): a round trip,
// a different model, device or precision misses, a damaged or mismatched file is
// ignored rather than trusted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/cache/kernel_times_cache.h"
#include "runtime/streaming/copy_calibration.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

CompiledModel model_of(const std::string& cfg, int size, const std::string& device_name) {
  CfgOptions co;
  co.width = co.height = size;
  Expected<NetworkDesc> net = parse_network_cfg(cfg, co);
  EXPECT_TRUE(net.ok()) << net.status().to_string();
  Target t = cpu_target();
  t.name = device_name;
  Expected<CompiledModel> m = compile(*net, t, SessionOptions());
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return *m;
}

TEST(KernelTimesCache, RoundTripAndMisses) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  ASSERT_EQ(setenv("DLR_CACHE_DIR", (test::temp_dir() + "/cache").c_str(), 1), 0);
  const CompiledModel a = model_of(cfg, 320, "gpu A");
  std::vector<double> ms(a.plan.steps.size());
  for (size_t i = 0; i < ms.size(); ++i) ms[i] = 0.001 * double(i);
  EXPECT_TRUE(load_kernel_times(a).empty());
  ASSERT_TRUE(save_kernel_times(a, ms).ok());
  EXPECT_EQ(load_kernel_times(a), ms);
  EXPECT_TRUE(load_kernel_times(model_of(cfg, 320, "gpu B")).empty()) << "another device";
  EXPECT_TRUE(load_kernel_times(model_of(cfg, 416, "gpu A")).empty()) << "another input size";
  // A damaged file is ignored, and the next measurement replaces it.
  const std::string path = *kernel_times_path(a);
  { std::ofstream(path) << "{\"format\": 1, \"key\": "; }
  EXPECT_TRUE(load_kernel_times(a).empty());
  ASSERT_TRUE(save_kernel_times(a, ms).ok());
  EXPECT_EQ(load_kernel_times(a), ms);
  // Times that do not fit the plan are not trusted.
  ASSERT_TRUE(save_kernel_times(a, std::vector<double>(3, 1.0)).ok());
  EXPECT_TRUE(load_kernel_times(a).empty());
  std::vector<double> bad = ms;
  bad[1] = -1;
  ASSERT_TRUE(save_kernel_times(a, bad).ok());
  EXPECT_TRUE(load_kernel_times(a).empty());
  unsetenv("DLR_CACHE_DIR");
}

TEST(KernelTimesCache, KeepsTheExpansionsPartBeside) {
  // The part of each step's time that expands int8 weights (Engine::measure_layer_ms)
  // comes back with the times; a file without it gives none, and one that does not fit
  // the plan is not trusted at all.
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  ASSERT_EQ(setenv("DLR_CACHE_DIR", (test::temp_dir() + "/cache-expand").c_str(), 1), 0);
  const CompiledModel a = model_of(cfg, 320, "gpu A");
  const std::vector<double> ms(a.plan.steps.size(), 0.02);
  std::vector<double> ex(ms.size(), 0.0);
  ex[1] = 0.005;
  ASSERT_TRUE(save_kernel_times(a, ms, ex).ok());
  std::vector<double> got = {1.0};
  EXPECT_EQ(load_kernel_times(a, &got), ms);
  EXPECT_EQ(got, ex);
  ASSERT_TRUE(save_kernel_times(a, ms).ok());
  EXPECT_EQ(load_kernel_times(a, &got), ms);
  EXPECT_TRUE(got.empty()) << "no expansions kept";
  ASSERT_TRUE(save_kernel_times(a, ms, std::vector<double>(2, 0.0)).ok());
  EXPECT_TRUE(load_kernel_times(a, &got).empty()) << "expansion times for another plan";
  EXPECT_TRUE(got.empty());
  unsetenv("DLR_CACHE_DIR");
}

// The copy profile calibrated in an inference is kept beside the kernel times: it
// round-trips, belongs to the probed profile it came from, needs the times first, and
// goes when the times are measured again.
TEST(KernelTimesCache, CalibratedCopyProfileRoundTrip) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  ASSERT_EQ(setenv("DLR_CACHE_DIR", (test::temp_dir() + "/cache-calibrated").c_str(), 1), 0);
  const CompiledModel a = model_of(cfg, 320, "gpu A");
  const CopyProfile probed = *CopyProfile::builtin("h100");
  std::vector<CopyTiming> copies;
  for (int i = 0; i < 12; ++i) {
    const int64_t bytes = int64_t(1 + i % 4) << 20;
    copies.push_back({i, 0, bytes, 0.1 * i, 0.1 * i + 0.005 + double(bytes) / 45e6});
  }
  const Expected<CopyCalibration> cal = calibrate_profile(probed, copies);
  ASSERT_TRUE(cal.ok()) << cal.status().to_string();
  CopyProfile got;
  EXPECT_FALSE(load_calibrated_profile(a, probed, &got)) << "nothing kept yet";
  const Status early = save_calibrated_profile(a, probed, cal->profile);
  EXPECT_FALSE(early.ok()) << "needs the kernel times first";
  EXPECT_NE(early.message().find("no kernel times"), std::string::npos) << early.message();
  std::vector<double> ms(a.plan.steps.size(), 0.01);
  ASSERT_TRUE(save_kernel_times(a, ms).ok());
  ASSERT_TRUE(save_calibrated_profile(a, probed, cal->profile).ok());
  ASSERT_TRUE(load_calibrated_profile(a, probed, &got));
  EXPECT_EQ(got.to_json_text(), cal->profile.to_json_text());
  EXPECT_EQ(load_kernel_times(a), ms) << "the times stay";
  // Another probed profile (probed again, another --copy-profile), model or device: no.
  CopyProfile other = probed;
  other.pinned.back().gbps += 1;
  EXPECT_FALSE(load_calibrated_profile(a, other, &got));
  EXPECT_FALSE(load_calibrated_profile(a, *CopyProfile::builtin("discrete"), &got));
  EXPECT_FALSE(load_calibrated_profile(model_of(cfg, 320, "gpu B"), probed, &got));
  // A damaged profile is not trusted.
  {
    const std::string path = *kernel_times_path(a);
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = text.find("\"gbps\":");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 7, "\"gbps\":-");
    std::ofstream(path) << text;
    EXPECT_FALSE(load_calibrated_profile(a, probed, &got));
  }
  // Times measured again: the calibration goes with the old ones.
  ASSERT_TRUE(save_kernel_times(a, ms).ok());
  ASSERT_TRUE(save_calibrated_profile(a, probed, cal->profile).ok());
  ASSERT_TRUE(load_calibrated_profile(a, probed, &got));
  ASSERT_TRUE(save_kernel_times(a, ms).ok());
  EXPECT_FALSE(load_calibrated_profile(a, probed, &got));
  unsetenv("DLR_CACHE_DIR");
}

}  // namespace
}  // namespace dlr
