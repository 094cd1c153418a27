// CopyProfile: interpolation, queue classes, JSON round trip and every validation
// error, built-in profiles, resolve(), and the derivation rules used by dlprobe.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <unistd.h>

#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/copy_profile_json.h"

namespace dlr {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

CopyProfile small_profile() {
  CopyProfile p;
  p.name = "test";
  p.device = "nowhere";
  p.pinned = {{64 * kKiB, 10.0}, {1 * kMiB, 40.0}, {16 * kMiB, 50.0}};
  p.pageable = {{64 * kKiB, 5.0}, {16 * kMiB, 8.0}};
  p.call_us = 2.5;
  p.queue = {{64 * kKiB, 14}, {1 * kMiB, 2}, {2 * kMiB, 1}, {32 * kMiB, 0}};
  p.chunk_bytes = 1 * kMiB;
  p.min_unit_bytes = 512 * kKiB;
  return p;
}

// A unique path in the test's temporary directory, removed at scope exit.
struct TempFile {
  explicit TempFile(const std::string& name)
      : path((std::filesystem::temp_directory_path() / ("dlr_copy_profile_" + std::to_string(::getpid()) + "_" + name))
                 .string()) {}
  ~TempFile() { std::remove(path.c_str()); }
  void write(const std::string& text) const { std::ofstream(path) << text; }
  std::string path;
};

TEST(CopyProfile, CopyMsAtPoints) {
  const CopyProfile p = small_profile();
  EXPECT_NEAR(p.copy_ms(64 * kKiB), 64.0 * 1024 / 10e6, 1e-12);
  EXPECT_NEAR(p.copy_ms(1 * kMiB), 1048576.0 / 40e6, 1e-12);
  EXPECT_NEAR(p.copy_ms(16 * kMiB), 16.0 * 1048576 / 50e6, 1e-12);
}

TEST(CopyProfile, CopyMsBetweenPointsIsLogLinear) {
  const CopyProfile p = small_profile();
  // 256 KiB is halfway between 64 KiB and 1 MiB in log(bytes): 25 GB/s.
  EXPECT_NEAR(p.copy_ms(256 * kKiB), 262144.0 / 25e6, 1e-12);
  // 4 MiB is halfway between 1 MiB and 16 MiB: 45 GB/s.
  EXPECT_NEAR(p.copy_ms(4 * kMiB), 4194304.0 / 45e6, 1e-12);
  // Monotone in bytes.
  double prev = 0;
  for (int64_t b = 1024; b <= 64 * kMiB; b = b * 3 / 2) {
    EXPECT_GT(p.copy_ms(b), prev) << b;
    prev = p.copy_ms(b);
  }
}

TEST(CopyProfile, CopyMsOutsideIsFlat) {
  const CopyProfile p = small_profile();
  EXPECT_NEAR(p.copy_ms(4 * kKiB), 4096.0 / 10e6, 1e-12);
  EXPECT_NEAR(p.copy_ms(256 * kMiB), 256.0 * 1048576 / 50e6, 1e-12);
  EXPECT_EQ(p.copy_ms(0), 0);
  EXPECT_EQ(p.copy_ms(-5), 0);
  EXPECT_EQ(CopyProfile().copy_ms(1 << 20), 0);
  EXPECT_DOUBLE_EQ(p.peak_gbps(), 50.0);
}

TEST(CopyProfile, QueueDepthClasses) {
  const CopyProfile p = small_profile();
  EXPECT_EQ(p.queue_depth(1), 14);
  EXPECT_EQ(p.queue_depth(64 * kKiB), 14);
  EXPECT_EQ(p.queue_depth(64 * kKiB + 1), 2);
  EXPECT_EQ(p.queue_depth(1 * kMiB), 2);
  EXPECT_EQ(p.queue_depth(1 * kMiB + 1), 1);
  EXPECT_EQ(p.queue_depth(2 * kMiB), 1);
  EXPECT_EQ(p.queue_depth(2 * kMiB + 1), 0);
  EXPECT_EQ(p.queue_depth(32 * kMiB), 0);
  EXPECT_EQ(p.queue_depth(1024 * kMiB), 0);  // the last class covers larger copies
  EXPECT_EQ(CopyProfile().queue_depth(4096), 0);
}

TEST(CopyProfile, JsonRoundTrip) {
  const CopyProfile p = small_profile();
  const nlohmann::json j = copy_profile_to_json(p);
  EXPECT_EQ(j["format"], "dlrun-copy-profile-1");
  auto q = copy_profile_from_json(nlohmann::json::parse(j.dump()), "mem");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(copy_profile_to_json(*q), j);
  EXPECT_EQ(q->name, p.name);
  EXPECT_EQ(q->device, p.device);
  ASSERT_EQ(q->pinned.size(), p.pinned.size());
  for (size_t i = 0; i < p.pinned.size(); ++i) {
    EXPECT_EQ(q->pinned[i].bytes, p.pinned[i].bytes);
    EXPECT_EQ(q->pinned[i].gbps, p.pinned[i].gbps);
  }
  EXPECT_EQ(q->pageable.size(), p.pageable.size());
  EXPECT_EQ(q->call_us, p.call_us);
  ASSERT_EQ(q->queue.size(), p.queue.size());
  EXPECT_EQ(q->queue[3].max_bytes, p.queue[3].max_bytes);
  EXPECT_EQ(q->queue[3].depth, 0);
  EXPECT_EQ(q->chunk_bytes, p.chunk_bytes);
  EXPECT_EQ(q->min_unit_bytes, p.min_unit_bytes);
}

TEST(CopyProfile, SaveLoadRoundTrip) {
  for (const std::string& name : CopyProfile::builtin_names()) {
    auto p = CopyProfile::builtin(name);
    ASSERT_TRUE(p.ok());
    TempFile f(name + ".json");
    ASSERT_TRUE(p->save(f.path).ok());
    auto q = CopyProfile::load(f.path);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    EXPECT_EQ(copy_profile_to_json(*q), copy_profile_to_json(*p)) << name;
  }
}

// Applies `edit` to a valid profile's JSON and returns from_json's error message.
std::string error_of(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = copy_profile_to_json(small_profile());
  edit(j);
  auto p = copy_profile_from_json(j, "prof.json");
  if (p.ok()) return "ok";
  EXPECT_EQ(p.status().code(), StatusCode::kParseError);
  return p.status().message();
}

TEST(CopyProfile, ValidationErrorsNameFileAndField) {
  using J = nlohmann::json;
  const std::string pre = "prof.json: copy profile field ";
  EXPECT_EQ(error_of([](J&) {}), "ok");
  EXPECT_EQ(error_of([](J& j) { j.erase("pinned"); }), pre + "'pinned' is missing");
  EXPECT_EQ(error_of([](J& j) { j.erase("name"); }), pre + "'name' is missing");
  EXPECT_EQ(error_of([](J& j) { j.erase("call_us"); }), pre + "'call_us' is missing");
  EXPECT_EQ(error_of([](J& j) { j.erase("queue"); }), pre + "'queue' is missing");
  EXPECT_EQ(error_of([](J& j) { j.erase("chunk_bytes"); }), pre + "'chunk_bytes' is missing");
  EXPECT_EQ(error_of([](J& j) { j.erase("min_unit_bytes"); }), pre + "'min_unit_bytes' is missing");
  EXPECT_EQ(error_of([](J& j) { j.erase("format"); }), pre + "'format' is missing");
  EXPECT_EQ(error_of([](J& j) { j["format"] = "other-2"; }),
            pre + "'format' is 'other-2', expected 'dlrun-copy-profile-1'");
  EXPECT_EQ(error_of([](J& j) { j["pinned"][1].erase("gbps"); }), pre + "'pinned[1].gbps' is missing");
  EXPECT_EQ(error_of([](J& j) { j["pinned"][0].erase("bytes"); }), pre + "'pinned[0].bytes' is missing");
  EXPECT_EQ(error_of([](J& j) { j["pinned"][2]["gbps"] = -3.5; }), pre + "'pinned[2].gbps' is negative (-3.5)");
  EXPECT_EQ(error_of([](J& j) { j["pinned"][2]["gbps"] = 0; }), pre + "'pinned[2].gbps' must be > 0 (got 0)");
  EXPECT_EQ(error_of([](J& j) { j["pageable"][0]["bytes"] = -1; }), pre + "'pageable[0].bytes' is negative (-1)");
  EXPECT_EQ(error_of([](J& j) { j["call_us"] = -1; }), pre + "'call_us' is negative (-1)");
  EXPECT_EQ(error_of([](J& j) { j["chunk_bytes"] = -4096; }), pre + "'chunk_bytes' is negative (-4096)");
  EXPECT_EQ(error_of([](J& j) { j["chunk_bytes"] = 0; }), pre + "'chunk_bytes' must be > 0 (got 0)");
  EXPECT_EQ(error_of([](J& j) { j["min_unit_bytes"] = -1; }), pre + "'min_unit_bytes' is negative (-1)");
  EXPECT_EQ(error_of([](J& j) { j["queue"][1]["depth"] = -2; }), pre + "'queue[1].depth' is negative (-2)");
  EXPECT_EQ(error_of([](J& j) { j["queue"][0]["max_bytes"] = -2; }), pre + "'queue[0].max_bytes' is negative (-2)");
  EXPECT_EQ(error_of([](J& j) { j["pinned"] = J::array(); }), pre + "'pinned' is empty");
  EXPECT_EQ(error_of([](J& j) { j["queue"] = J::array(); }), pre + "'queue' is empty");
  EXPECT_EQ(error_of([](J& j) { j["pageable"] = J::array(); }), "ok");  // pageable may be empty
  EXPECT_EQ(error_of([](J& j) { j.erase("pageable"); }), "ok");         // or absent
  EXPECT_EQ(error_of([](J& j) { j.erase("device"); }), "ok");
  EXPECT_EQ(error_of([](J& j) { std::swap(j["pinned"][0], j["pinned"][1]); }),
            pre + "'pinned' is not sorted by bytes (strictly increasing): pinned[1].bytes 65536 <= pinned[0].bytes "
                  "1048576");
  EXPECT_EQ(error_of([](J& j) { j["pinned"][1]["bytes"] = 65536; }),
            pre + "'pinned' is not sorted by bytes (strictly increasing): pinned[1].bytes 65536 <= pinned[0].bytes "
                  "65536");
  EXPECT_EQ(error_of([](J& j) { j["queue"][2]["max_bytes"] = 1024; }),
            pre + "'queue' is not sorted by max_bytes (strictly increasing): queue[2].max_bytes 1024 <= "
                  "queue[1].max_bytes 1048576");
  EXPECT_EQ(error_of([](J& j) { j["call_us"] = "fast"; }), pre + "'call_us' must be a number");
  EXPECT_EQ(error_of([](J& j) { j["chunk_bytes"] = 1.5; }), pre + "'chunk_bytes' must be an integer");
  EXPECT_EQ(error_of([](J& j) { j["name"] = 3; }), pre + "'name' must be a string");
  EXPECT_EQ(error_of([](J& j) { j["pinned"] = 3; }), pre + "'pinned' must be an array");
  EXPECT_EQ(error_of([](J& j) { j["queue"][0] = 3; }), pre + "'queue[0]' must be an object");
  EXPECT_EQ(error_of([](J& j) { j = J::array(); }), "prof.json: a copy profile must be a JSON object");
}

TEST(CopyProfile, LoadErrors) {
  auto missing = CopyProfile::load("/nonexistent/dir/p.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_NE(missing.status().message().find("cannot open copy profile '/nonexistent/dir/p.json'"), std::string::npos)
      << missing.status().message();

  TempFile bad("bad.json");
  bad.write("{\"name\": ");
  auto b = CopyProfile::load(bad.path);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kParseError);
  EXPECT_EQ(b.status().message().rfind(bad.path + ": not valid JSON", 0), 0u) << b.status().message();

  TempFile neg("neg.json");
  nlohmann::json j = copy_profile_to_json(small_profile());
  j["pinned"][0]["gbps"] = -1;
  neg.write(j.dump());
  auto n = CopyProfile::load(neg.path);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(), neg.path + ": copy profile field 'pinned[0].gbps' is negative (-1)");
}

TEST(CopyProfile, BuiltinsAreSane) {
  const auto names = CopyProfile::builtin_names();
  ASSERT_EQ(names.size(), 3u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    auto p = CopyProfile::builtin(name);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ(p->name, name);
    // Valid by the same rules as a file.
    auto again = copy_profile_from_json(copy_profile_to_json(*p), name);
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    EXPECT_FALSE(p->pinned.empty());
    EXPECT_FALSE(p->pageable.empty());
    EXPECT_FALSE(p->queue.empty());
    EXPECT_GT(p->call_us, 0);
    EXPECT_GE(p->chunk_bytes, p->min_unit_bytes);
    EXPECT_GT(p->queue_depth(p->chunk_bytes), 0) << "chunks must be queueable";
    // Pinned beats pageable at every pageable point.
    for (const BandwidthPoint& b : p->pageable) EXPECT_LT(b.gbps, p->peak_gbps()) << b.bytes;
  }
  auto h100 = CopyProfile::builtin("h100");
  ASSERT_TRUE(h100.ok());
  EXPECT_NEAR(h100->peak_gbps(), 55.0, 0.5);
  EXPECT_NEAR(h100->copy_ms(18'900'000), 0.34, 0.01);  // the largest YOLOv4 layer (fp32)
  EXPECT_NEAR(h100->copy_ms(257'700'000), 4.7, 0.1);   // all YOLOv4 fp32 weights in one copy
  EXPECT_EQ(h100->queue_depth(4 * kKiB), 1020);
  EXPECT_EQ(h100->queue_depth(32 * kMiB), 1020);
  EXPECT_EQ(h100->queue_depth(1024 * kMiB), 1020);
  EXPECT_EQ(h100->chunk_bytes, 4 * kMiB);

  auto xavier = CopyProfile::builtin("jetson-xavier");
  ASSERT_TRUE(xavier.ok());
  EXPECT_EQ(xavier->queue_depth(32 * kKiB), 14);
  EXPECT_EQ(xavier->queue_depth(64 * kKiB), 14);
  EXPECT_EQ(xavier->queue_depth(297 * kKiB), 2);  // YOLOv4 layer 11
  EXPECT_EQ(xavier->queue_depth(1 * kMiB), 2);
  EXPECT_EQ(xavier->queue_depth(1'180'000), 1);  // layer 24
  EXPECT_EQ(xavier->queue_depth(2 * kMiB), 1);
  EXPECT_EQ(xavier->queue_depth(2 * kMiB + 1), 0);
  EXPECT_EQ(xavier->queue_depth(18'900'000), 0);
  EXPECT_EQ(xavier->chunk_bytes, 1 * kMiB);

  auto discrete = CopyProfile::builtin("discrete");
  ASSERT_TRUE(discrete.ok());
  EXPECT_NEAR(discrete->peak_gbps(), 25.0, 1.0);
  EXPECT_GT(discrete->copy_ms(18'900'000), 1.9 * h100->copy_ms(18'900'000));
}

TEST(CopyProfile, UnknownBuiltin) {
  auto p = CopyProfile::builtin("a100");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), "unknown built-in copy profile 'a100' (built-in profiles: discrete, h100, jetson-xavier)");
}

TEST(CopyProfile, ResolveFileNameAndUnknown) {
  // A file that exists (even without .json) is loaded.
  CopyProfile mine = small_profile();
  mine.name = "from-file";
  TempFile f("mine");
  ASSERT_TRUE(mine.save(f.path).ok());
  auto a = CopyProfile::resolve(f.path);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->name, "from-file");

  // A name is a built-in.
  auto b = CopyProfile::resolve("jetson-xavier");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->name, "jetson-xavier");

  // A missing *.json is a file error, not a built-in lookup.
  auto c = CopyProfile::resolve("/nonexistent/h100.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kIoError);

  // Anything else: the message lists the built-ins.
  auto d = CopyProfile::resolve("h200");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(d.status().message(),
            "copy profile 'h200' is neither auto, a file nor a built-in profile (discrete, h100, jetson-xavier; a file is a "
            "path with '/' or ending in .json)");
}

TEST(CopyProfile, ValuesWithControlBytesAreQuotedPrintably) {
  // A JSON escape puts a control byte into a value the message quotes (found by the
  // plan_json fuzzer).
  auto p = CopyProfile::from_json_text("{\"format\": \"dlrun-copy-profile-1\\u0001\"}", "p.json");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "p.json: copy profile field 'format' is 'dlrun-copy-profile-1\\x01', expected 'dlrun-copy-profile-1'");
}

TEST(CopyProfile, DeriveFromH100LikeMeasurements) {
  std::vector<BandwidthPoint> pinned = {{4 * kKiB, 1.5},   {16 * kKiB, 5.5},  {64 * kKiB, 17.05}, {256 * kKiB, 35.87},
                                        {1 * kMiB, 47.42}, {2 * kMiB, 51.13}, {4 * kMiB, 53.03},  {8 * kMiB, 54.0},
                                        {16 * kMiB, 54.51}, {64 * kMiB, 54.91}};
  std::vector<QueueSample> queue = {{32 * kMiB, 1020}, {4 * kKiB, 1020}, {64 * kKiB, 1019}, {1 * kMiB, 1020},
                                    {4 * kMiB, 1020}};  // unsorted on purpose; 1019 merges (noise)
  auto p = derive_copy_profile("probe", "H100", pinned, {{64 * kKiB, 6.7}}, 2.1, queue);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_EQ(p->queue.size(), 1u);
  EXPECT_EQ(p->queue[0].max_bytes, 32 * kMiB);
  EXPECT_EQ(p->queue[0].depth, 1019);
  EXPECT_EQ(p->chunk_bytes, 4 * kMiB);     // 53.03 >= 0.95 * 54.91 > 51.13 (2 MiB)
  EXPECT_EQ(p->min_unit_bytes, 1 * kMiB);  // 47.42 >= 0.80 * 54.91
  EXPECT_EQ(p->device, "H100");
  EXPECT_EQ(p->call_us, 2.1);
}

TEST(CopyProfile, DeriveAvoidsDepthZeroAndCapsChunk) {
  // Xavier-like queue: the 95 % size (4 MiB) cannot be queued; fall back to 1 MiB.
  std::vector<BandwidthPoint> pinned = {{64 * kKiB, 5.0}, {1 * kMiB, 13.8}, {4 * kMiB, 15.5}, {16 * kMiB, 16.0}};
  std::vector<QueueSample> queue = {{4 * kKiB, 25}, {64 * kKiB, 14}, {1 * kMiB, 2}, {4 * kMiB, 0}, {32 * kMiB, 0}};
  auto p = derive_copy_profile("x", "", pinned, {}, 8, queue);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_EQ(p->queue.size(), 4u);
  EXPECT_EQ(p->queue[0].depth, 25);
  EXPECT_EQ(p->queue[3].max_bytes, 32 * kMiB);
  EXPECT_EQ(p->queue[3].depth, 0);
  EXPECT_EQ(p->chunk_bytes, 1 * kMiB);
  EXPECT_EQ(p->min_unit_bytes, 1 * kMiB);  // 13.8 >= 0.80 * 16

  // Bandwidth that saturates late: chunk capped at 8 MiB.
  std::vector<BandwidthPoint> slow = {{1 * kMiB, 10}, {4 * kMiB, 20}, {16 * kMiB, 30}, {64 * kMiB, 31}};
  auto s = derive_copy_profile("s", "", slow, {}, 2, {{64 * kMiB, 1000}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->chunk_bytes, 8 * kMiB);
  EXPECT_EQ(s->min_unit_bytes, 8 * kMiB);  // 80 %: 16 MiB, capped at the chunk

  auto empty = derive_copy_profile("e", "", {}, {}, 2, {{4096, 3}});
  EXPECT_FALSE(empty.ok());
}


// ---- storage ----

StorageProfile small_storage() {
  StorageProfile s;
  s.device = "test disk";
  s.reader = "uring";
  s.direct = {{64 * kKiB, 1, 0.5}, {1 * kMiB, 1, 1.0}, {16 * kMiB, 1, 1.5},
              {64 * kKiB, 4, 1.0}, {16 * kMiB, 4, 3.0}};
  s.buffered_gbps = 1.2;
  s.cached_gbps = 6.0;
  return s;
}

TEST(StorageProfile, EmptyReadsNothing) {
  const StorageProfile s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.read_ms(1 << 20, 1 << 20, 4), 0);
  EXPECT_EQ(s.direct_gbps(1 << 20, 4), 0);
}

TEST(StorageProfile, InterpolationByBlockAndDepth) {
  const StorageProfile s = small_storage();
  EXPECT_FALSE(s.empty());
  // At points.
  EXPECT_DOUBLE_EQ(s.direct_gbps(64 * kKiB, 1), 0.5);
  EXPECT_DOUBLE_EQ(s.direct_gbps(16 * kMiB, 4), 3.0);
  // Log-linear in block size: 256 KiB is halfway between 64 KiB and 1 MiB.
  EXPECT_NEAR(s.direct_gbps(256 * kKiB, 1), 0.75, 1e-12);
  // Flat outside the blocks measured.
  EXPECT_DOUBLE_EQ(s.direct_gbps(4 * kKiB, 1), 0.5);
  EXPECT_DOUBLE_EQ(s.direct_gbps(256 * kMiB, 1), 1.5);
  // Depth 2 is halfway between depths 1 and 4 in log(depth).
  EXPECT_NEAR(s.direct_gbps(64 * kKiB, 2), 0.75, 1e-12);
  EXPECT_NEAR(s.direct_gbps(16 * kMiB, 2), 2.25, 1e-12);
  // 1 MiB at depth 4: the depth-4 curve gives 2.0 (halfway in log(block)).
  EXPECT_NEAR(s.direct_gbps(1 * kMiB, 4), 2.0, 1e-12);
  // Beyond the deepest depth: flat; a depth below 1 counts as 1.
  EXPECT_DOUBLE_EQ(s.direct_gbps(16 * kMiB, 64), 3.0);
  EXPECT_DOUBLE_EQ(s.direct_gbps(16 * kMiB, 0), 1.5);
  // Monotone in depth and block size for a monotone table.
  double prev = 0;
  for (int d = 1; d <= 16; ++d) {
    EXPECT_GE(s.direct_gbps(4 * kMiB, d), prev);
    prev = s.direct_gbps(4 * kMiB, d);
  }
}

TEST(StorageProfile, ReadMs) {
  const StorageProfile s = small_storage();
  // 64 MiB in 16 MiB blocks, 4 in flight: 3 GB/s.
  EXPECT_NEAR(s.read_ms(64 * kMiB, 16 * kMiB, 4), 64.0 * 1048576 / 3e6, 1e-9);
  // One 16 MiB read cannot have 4 in flight: depth 1, 1.5 GB/s.
  EXPECT_NEAR(s.read_ms(16 * kMiB, 16 * kMiB, 4), 16.0 * 1048576 / 1.5e6, 1e-9);
  // A 1 MiB read with 16 MiB blocks is one 1 MiB read.
  EXPECT_NEAR(s.read_ms(1 * kMiB, 16 * kMiB, 8), 1048576.0 / 1.0e6, 1e-9);
  // block <= 0: one read of all the bytes.
  EXPECT_NEAR(s.read_ms(1 * kMiB, 0, 8), 1048576.0 / 1.0e6, 1e-9);
  EXPECT_EQ(s.read_ms(0, 1 * kMiB, 1), 0);
  EXPECT_EQ(s.read_ms(-5, 1 * kMiB, 1), 0);
  // Deeper queues never make a read slower here.
  EXPECT_LE(s.read_ms(64 * kMiB, 1 * kMiB, 4), s.read_ms(64 * kMiB, 1 * kMiB, 1));
}

TEST(StorageProfile, JsonRoundTrip) {
  CopyProfile p = small_profile();
  p.storage = small_storage();
  const nlohmann::json j = copy_profile_to_json(p);
  ASSERT_TRUE(j.contains("storage"));
  auto q = copy_profile_from_json(nlohmann::json::parse(j.dump()), "mem");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(copy_profile_to_json(*q), j);
  EXPECT_EQ(q->storage.device, "test disk");
  EXPECT_EQ(q->storage.reader, "uring");
  ASSERT_EQ(q->storage.direct.size(), 5u);
  EXPECT_EQ(q->storage.direct[3].queue_depth, 4);
  EXPECT_EQ(q->storage.direct[3].block_bytes, 64 * kKiB);
  EXPECT_EQ(q->storage.buffered_gbps, 1.2);
  EXPECT_EQ(q->storage.cached_gbps, 6.0);
  // Text form too.
  auto t = CopyProfile::from_json_text(p.to_json_text(2), "text");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->storage.direct.size(), 5u);
}

// A profile written before storage was measured has no "storage": it loads, its
// storage is empty and storage_or_default() gives the documented default.
TEST(StorageProfile, OldProfilesLoadWithTheDefault) {
  const CopyProfile p = small_profile();
  const nlohmann::json j = copy_profile_to_json(p);
  EXPECT_FALSE(j.contains("storage"));  // an empty storage is not written
  auto q = copy_profile_from_json(j, "old.json");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_TRUE(q->storage.empty());
  EXPECT_FALSE(q->storage_or_default().empty());
  auto discrete = CopyProfile::builtin("discrete");
  ASSERT_TRUE(discrete.ok());
  EXPECT_EQ(q->storage_or_default().read_ms(64 * kMiB, 4 * kMiB, 4), discrete->storage.read_ms(64 * kMiB, 4 * kMiB, 4));
  nlohmann::json null_storage = j;
  null_storage["storage"] = nullptr;
  auto n = copy_profile_from_json(null_storage, "null.json");
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_TRUE(n->storage.empty());
  // A profile with storage uses its own.
  CopyProfile own = small_profile();
  own.storage = small_storage();
  EXPECT_EQ(&own.storage_or_default(), &own.storage);
}

std::string storage_error_of(const std::function<void(nlohmann::json&)>& edit) {
  CopyProfile p = small_profile();
  p.storage = small_storage();
  nlohmann::json j = copy_profile_to_json(p);
  edit(j);
  auto q = copy_profile_from_json(j, "prof.json");
  if (q.ok()) return "ok";
  EXPECT_EQ(q.status().code(), StatusCode::kParseError);
  return q.status().message();
}

TEST(StorageProfile, ValidationErrors) {
  using J = nlohmann::json;
  const std::string pre = "prof.json: copy profile field ";
  EXPECT_EQ(storage_error_of([](J&) {}), "ok");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"] = 3; }), pre + "'storage' must be an object");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"].erase("direct"); }), pre + "'storage.direct' is missing");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["direct"] = J::array(); }), pre + "'storage.direct' is empty");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["direct"][0] = 1; }), pre + "'storage.direct[0]' must be an object");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["direct"][1]["gbps"] = 0; }),
            pre + "'storage.direct[1].gbps' must be > 0 (got 0)");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["direct"][1]["gbps"] = -1; }),
            pre + "'storage.direct[1].gbps' is negative (-1)");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["direct"][2]["block_bytes"] = 0; }),
            pre + "'storage.direct[2].block_bytes' must be > 0 (got 0)");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["direct"][0]["queue_depth"] = 0; }),
            pre + "'storage.direct[0].queue_depth' must be > 0 (got 0)");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["direct"][4]["queue_depth"] = 5000; }),
            pre + "'storage.direct[4].queue_depth' is too large (5000, at most 1024)");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["direct"][0]["queue_depth"] = 1e300; }),
            pre + "'storage.direct[0].queue_depth' must be an integer");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["direct"][0]["queue_depth"] = 18446744073709551615ull; }),
            pre + "'storage.direct[0].queue_depth' is too large (9223372036854775807, at most 1024)");
  EXPECT_EQ(storage_error_of([](J& j) { std::swap(j["storage"]["direct"][0], j["storage"]["direct"][1]); }),
            pre + "'storage.direct' is not sorted by (queue_depth, block_bytes), each pair once: storage.direct[1] "
                  "(1, 65536) after (1, 1048576)");
  EXPECT_EQ(storage_error_of([](J& j) { std::swap(j["storage"]["direct"][2], j["storage"]["direct"][3]); }),
            pre + "'storage.direct' is not sorted by (queue_depth, block_bytes), each pair once: storage.direct[3] "
                  "(1, 16777216) after (4, 65536)");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["direct"][1]["block_bytes"] = 65536; }),
            pre + "'storage.direct' is not sorted by (queue_depth, block_bytes), each pair once: storage.direct[1] "
                  "(1, 65536) after (1, 65536)");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["reader"] = "aio"; }),
            pre + "'storage.reader' is 'aio', expected 'uring', 'threads' or ''");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["reader"] = ""; }), "ok");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"].erase("reader"); }), "ok");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"].erase("device"); }), "ok");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["device"] = 1; }), pre + "'storage.device' must be a string");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"].erase("buffered_gbps"); }),
            pre + "'storage.buffered_gbps' is missing");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["buffered_gbps"] = -0.5; }),
            pre + "'storage.buffered_gbps' is negative (-0.5)");
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["cached_gbps"] = 0; }), "ok");  // 0: unknown
  EXPECT_EQ(storage_error_of([](J& j) { j["storage"]["cached_gbps"] = "x"; }),
            pre + "'storage.cached_gbps' must be a number");
}

TEST(StorageProfile, Builtins) {
  for (const std::string& name : CopyProfile::builtin_names()) {
    auto p = CopyProfile::builtin(name);
    ASSERT_TRUE(p.ok());
    const StorageProfile& s = p->storage;
    ASSERT_FALSE(s.empty()) << name;
    // Valid as a loaded file would be (sorted, positive).
    auto q = copy_profile_from_json(copy_profile_to_json(*p), name);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    // Deeper queues and larger blocks are never slower in the built-ins.
    for (int64_t block : {64 * kKiB, 1 * kMiB, 16 * kMiB})
      for (int d = 1; d < 16; ++d) EXPECT_LE(s.direct_gbps(block, d), s.direct_gbps(block, d + 1) + 1e-12) << name;
    for (int d : {1, 4, 16}) EXPECT_LE(s.direct_gbps(64 * kKiB, d), s.direct_gbps(16 * kMiB, d)) << name;
  }
  // The figures documented in copy_profile.h.
  EXPECT_NEAR(CopyProfile::builtin("h100")->storage.direct_gbps(64 * kKiB, 1), 0.58, 1e-12);
  EXPECT_NEAR(CopyProfile::builtin("h100")->storage.direct_gbps(16 * kMiB, 8), 1.0, 1e-12);
  EXPECT_NEAR(CopyProfile::builtin("h100")->storage.cached_gbps, 1.4, 1e-12);
  EXPECT_LE(CopyProfile::builtin("jetson-xavier")->storage.direct_gbps(16 * kMiB, 16), 0.3 + 1e-12);
  EXPECT_GT(CopyProfile::builtin("discrete")->storage.direct_gbps(4 * kMiB, 4), 1.0);
}

}  // namespace
}  // namespace dlr
