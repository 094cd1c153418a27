// `--copy-profile auto` on a real GPU: the first CUDA target made with it probes the
// copy engine briefly (the time is printed: the device run reports it) and writes the
// profile to the cache (DLR_CACHE_DIR, a temp dir here); the second reuses the cache
// without probing; a stream-mode session names the profile's source in its notes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/compile/compile.h"
#include "runtime/cuda/cuda_engine.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr {
namespace {

// Sets DLR_CACHE_DIR for the scope of a test and restores it after.
class CacheDirScope {
 public:
  explicit CacheDirScope(const std::string& dir) {
    const char* old = std::getenv("DLR_CACHE_DIR");
    m_had = old != nullptr;
    if (old) m_old = old;
    ::setenv("DLR_CACHE_DIR", dir.c_str(), 1);
  }
  ~CacheDirScope() {
    if (m_had)
      ::setenv("DLR_CACHE_DIR", m_old.c_str(), 1);
    else
      ::unsetenv("DLR_CACHE_DIR");
  }
  CacheDirScope(const CacheDirScope&) = delete;
  CacheDirScope& operator=(const CacheDirScope&) = delete;

 private:
  bool m_had = false;
  std::string m_old;
};

int count_profiles(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    n += e.path().filename().string().rfind("copy-profile-", 0) == 0 ? 1 : 0;
  return n;
}

TEST(CopyProfileAuto, FirstUseProbesAndCachesThenReuses) {
  DLR_REQUIRE_GPU();
  const std::string dir = test::temp_dir() + "/profile-cache";
  std::filesystem::create_directories(dir);
  const CacheDirScope scope(dir);

  const auto t0 = std::chrono::steady_clock::now();
  Expected<Target> first = cuda_target(0, "auto");
  const double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const std::string& src = first->copy_profile_source;
  ASSERT_NE(src.find("probed on first use"), std::string::npos) << src;
  EXPECT_NE(src.find("cached in " + dir + "/copy-profile-"), std::string::npos) << src;
  EXPECT_EQ(count_profiles(dir), 1);
  const CopyProfile& p = first->copy_profile;
  EXPECT_EQ(p.name.rfind("probe-", 0), 0u) << p.name;
  EXPECT_GT(p.peak_gbps(), 1.0);
  EXPECT_FALSE(p.queue.empty());
  EXPECT_GT(p.chunk_bytes, 0);
  std::printf("first-use copy probe: cuda_target(auto) took %.3f s (%s); peak %.1f GB/s, chunk %lld KiB, "
              "queue depth at 4 MiB %d\n",
              first_s, src.c_str(), p.peak_gbps(), static_cast<long long>(p.chunk_bytes >> 10), p.queue_depth(4 << 20));
  EXPECT_LT(first_s, 3.0) << "the brief probe should take well under a second";

  const auto t1 = std::chrono::steady_clock::now();
  Expected<Target> second = cuda_target(0, "auto");
  const double second_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ(second->copy_profile_source.find("probed"), std::string::npos) << second->copy_profile_source;
  EXPECT_NE(second->copy_profile_source.find("cached in"), std::string::npos) << second->copy_profile_source;
  EXPECT_EQ(second->copy_profile.to_json_text(), p.to_json_text());
  std::printf("second cuda_target(auto): %.3f s (cache)\n", second_s);

  // A stream-mode session uses the cached profile and says so in its compile notes.
  const std::string cfg = test::shared_file("models/yolov4-tiny.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared data not found";
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.mode = WeightMode::kStream;
  o.calibrate_copies = false;  // the profile auto chose, as compiled (calibration has its own test)
  ASSERT_EQ(o.copy_profile, "auto");
  auto s = Session::open(cfg, weights, o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ((*s)->model().target.copy_profile.name, p.name);
  bool noted = false;
  for (const std::string& n : (*s)->model().notes) noted = noted || n.find("cached in " + dir) != std::string::npos;
  EXPECT_TRUE(noted) << "no compile note names the cached profile";
  EXPECT_EQ(count_profiles(dir), 1);
  // Preload never resolves (or probes) a profile.
  o.mode = WeightMode::kPreload;
  auto pre = Session::open(cfg, weights, o);
  ASSERT_TRUE(pre.ok()) << pre.status().to_string();
  EXPECT_TRUE((*pre)->model().target.copy_profile.name.empty());
}

}  // namespace
}  // namespace dlr
