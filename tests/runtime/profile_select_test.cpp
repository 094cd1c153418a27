// `--copy-profile auto` (runtime/streaming/profile_select.h): the nearest built-in by
// device properties, the per-GPU cache path, and the cache / probe / built-in rule
// with a fake probe: the first resolve probes and writes the cache, the second reads
// it, a corrupt cache is probed again, a failed probe falls back to the nearest
// built-in and says so; "auto" through validate_options and CopyProfile.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/options.h"
#include "runtime/streaming/profile_select.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

const std::string kUuid = "0123456789abcdef0123456789abcdef";

GpuIdentity gpu(bool integrated, int major, int minor) {
  GpuIdentity g;
  g.uuid = kUuid;
  g.name = "Test GPU";
  g.integrated = integrated;
  g.major = major;
  g.minor = minor;
  return g;
}

// A fake probe: counts its calls; returns a distinctive profile or an error.
struct FakeProbe {
  int calls = 0;
  bool fail = false;
  ProbeFunction fn() {
    return [this](double* seconds) -> Expected<CopyProfile> {
      ++calls;
      *seconds = 0.25;
      if (fail) return Status(StatusCode::kCudaError, "cudaHostAlloc failed");
      CopyProfile p = *CopyProfile::builtin("discrete");
      p.name = "probe-test-gpu";
      p.device = "Test GPU, sm_86";
      return p;
    };
  }
};

std::string fresh_dir(const std::string& name) {
  const std::string d = test::temp_dir() + "/" + name;
  std::filesystem::create_directories(d);
  return d;
}

TEST(ProfileSelect, NearestBuiltinByDeviceProperties) {
  EXPECT_EQ(nearest_builtin_profile(gpu(true, 7, 2)), "jetson-xavier");
  EXPECT_EQ(nearest_builtin_profile(gpu(true, 8, 7)), "jetson-xavier");
  EXPECT_EQ(nearest_builtin_profile(gpu(true, 9, 0)), "jetson-xavier");  // integrated first
  EXPECT_EQ(nearest_builtin_profile(gpu(false, 9, 0)), "h100");
  // Never the H100's figures on another GPU.
  for (auto [major, minor] : {std::pair{8, 0}, {8, 6}, {8, 9}, {7, 5}, {10, 0}, {12, 0}})
    EXPECT_EQ(nearest_builtin_profile(gpu(false, major, minor)), "discrete") << major << "." << minor;
}

TEST(ProfileSelect, UuidAndCachePath) {
  char bytes[16];
  for (int i = 0; i < 16; ++i) bytes[i] = char(i * 17);
  EXPECT_EQ(uuid_hex(bytes), "00112233445566778899aabbccddeeff");
  EXPECT_EQ(cached_profile_path("/c", kUuid), "/c/copy-profile-" + kUuid + ".json");
  EXPECT_EQ(cached_profile_path("/c", "0123456789ABCDEF0123456789ABCDEF"), "/c/copy-profile-" + kUuid + ".json");
  EXPECT_EQ(cached_profile_path("/c", ""), "");
  EXPECT_EQ(cached_profile_path("/c", "../../etc/passwd0123456789abcdef0"), "");  // not hex: nothing cached
  EXPECT_EQ(cached_profile_path("", kUuid), "");
}

TEST(ProfileSelect, FirstUseProbesAndCachesThenTheCacheIsReused) {
  const std::string dir = fresh_dir("cache-roundtrip");
  FakeProbe probe;
  const ResolvedProfile first = resolve_auto_profile(gpu(false, 8, 6), dir, probe.fn());
  EXPECT_EQ(probe.calls, 1);
  EXPECT_TRUE(first.probed);
  EXPECT_FALSE(first.cached);
  EXPECT_EQ(first.profile.name, "probe-test-gpu");
  const std::string path = cached_profile_path(dir, kUuid);
  EXPECT_NE(first.source.find("probed on first use in 0.25 s"), std::string::npos) << first.source;
  EXPECT_NE(first.source.find("cached in " + path), std::string::npos) << first.source;
  ASSERT_TRUE(std::ifstream(path).good());

  const ResolvedProfile second = resolve_auto_profile(gpu(false, 8, 6), dir, probe.fn());
  EXPECT_EQ(probe.calls, 1) << "the second open must read the cache, not probe";
  EXPECT_TRUE(second.cached);
  EXPECT_EQ(second.profile.to_json_text(), first.profile.to_json_text());
  EXPECT_NE(second.source.find("cached in " + path), std::string::npos) << second.source;

  // Another GPU (another UUID) is probed on its own.
  GpuIdentity other = gpu(false, 8, 6);
  other.uuid = "ffffffffffffffffffffffffffffffff";
  resolve_auto_profile(other, dir, probe.fn());
  EXPECT_EQ(probe.calls, 2);
}

TEST(ProfileSelect, CorruptCacheIsProbedAgainAndReplaced) {
  const std::string dir = fresh_dir("cache-corrupt");
  const std::string path = cached_profile_path(dir, kUuid);
  std::ofstream(path) << "{\"format\": \"dlrun-copy-profile-1\", \"name\": 3}";
  FakeProbe probe;
  const ResolvedProfile r = resolve_auto_profile(gpu(false, 8, 6), dir, probe.fn());
  EXPECT_EQ(probe.calls, 1);
  EXPECT_TRUE(r.probed);
  EXPECT_NE(r.source.find("unreadable"), std::string::npos) << r.source;
  EXPECT_TRUE(CopyProfile::load(path).ok()) << "the corrupt cache file is replaced";
}

TEST(ProfileSelect, FailedProbeFallsBackToTheNearestBuiltinAndSaysSo) {
  const std::string dir = fresh_dir("cache-fail");
  FakeProbe probe;
  probe.fail = true;
  const ResolvedProfile a = resolve_auto_profile(gpu(false, 8, 6), dir, probe.fn());
  EXPECT_FALSE(a.probed);
  EXPECT_FALSE(a.cached);
  EXPECT_EQ(a.profile.name, "discrete");
  EXPECT_NE(a.source.find("built-in 'discrete'"), std::string::npos) << a.source;
  EXPECT_NE(a.source.find("cudaHostAlloc failed"), std::string::npos) << a.source;
  EXPECT_FALSE(std::ifstream(cached_profile_path(dir, kUuid)).good()) << "a built-in is not cached";
  EXPECT_EQ(resolve_auto_profile(gpu(false, 9, 0), dir, probe.fn()).profile.name, "h100");
  EXPECT_EQ(resolve_auto_profile(gpu(true, 8, 7), dir, probe.fn()).profile.name, "jetson-xavier");
  // No probe function at all: the same rule.
  const ResolvedProfile none = resolve_auto_profile(gpu(false, 8, 9), dir, nullptr);
  EXPECT_EQ(none.profile.name, "discrete");
  EXPECT_NE(none.source.find("not measured"), std::string::npos) << none.source;
}

TEST(ProfileSelect, NoCacheDirectoryStillProbes) {
  FakeProbe probe;
  const ResolvedProfile r = resolve_auto_profile(gpu(false, 8, 6), "", probe.fn(), "no cache directory: HOME unset");
  EXPECT_TRUE(r.probed);
  EXPECT_NE(r.source.find("not cached (no cache directory: HOME unset)"), std::string::npos) << r.source;
  // An unwritable cache: the probed profile is still used, and the message says why.
  const ResolvedProfile w = resolve_auto_profile(gpu(false, 8, 6), "/proc/no-such-dir", probe.fn());
  EXPECT_TRUE(w.probed);
  EXPECT_NE(w.source.find("not cached"), std::string::npos) << w.source;
}

TEST(ProfileSelect, AutoIsTheDefaultAndPassesValidation) {
  SessionOptions o;
  EXPECT_EQ(o.copy_profile, "auto");
  o.device = DeviceKind::kCUDA;
  o.mode = WeightMode::kStream;
  EXPECT_TRUE(validate_options(o).ok());
  EXPECT_TRUE(CopyProfile::check_name("auto").ok());
  const Expected<CopyProfile> r = CopyProfile::resolve("auto");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cuda_target"), std::string::npos) << r.status().message();
  o.copy_profile = "automatic";
  EXPECT_FALSE(validate_options(o).ok());
}

TEST(ProfileSelect, SaveIsAtomicAndLeavesNoTemporaryFile) {
  const std::string dir = fresh_dir("cache-save");
  const std::string path = dir + "/p.json";
  ASSERT_TRUE(save_cached_profile(path, *CopyProfile::builtin("h100")).ok());
  ASSERT_TRUE(save_cached_profile(path, *CopyProfile::builtin("discrete")).ok());
  EXPECT_EQ(CopyProfile::load(path)->name, "discrete");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace dlr
