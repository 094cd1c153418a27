// Kernel times kept per GPU and model (runtime/kernel_times_cache.h): a round trip,
// a different model, device or precision misses, a damaged or mismatched file is
// ignored rather than trusted.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "loaders/network_desc.h"
#include "runtime/compile.h"
#include "runtime/kernel_times_cache.h"
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

}  // namespace
}  // namespace dlr
