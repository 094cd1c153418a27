// The prepared weight file (runtime/storage/prepared_file.h) and CRC32C
// (runtime/storage/crc32c.h): known CRC32C values, a round trip that gives
// WeightSource::prepare's bytes back for fp32 NCHW and fp16 NHWC plans, 4096-aligned
// blobs, one-line refusals of a corrupt, truncated, other-version, other-model or
// other-precision file, and the cache (reuse without rewriting, rebuild with a reason,
// an unusable cache directory). yolo-fastest-1.1 with its real weights (shared data).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "runtime/compile/compile.h"
#include "runtime/storage/crc32c.h"
#include "runtime/storage/prepared_file.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {
namespace fs = std::filesystem;

// ---------------------------------------------------------------- CRC32C

TEST(Crc32c, KnownValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c_portable("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  // RFC 3720 (iSCSI), appendix B.4.
  std::vector<unsigned char> zeros(32, 0), ones(32, 0xFF), up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[size_t(i)] = uint8_t(i);
    down[size_t(i)] = uint8_t(31 - i);
  }
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down.data(), 32), 0x113FDB5Cu);
  EXPECT_EQ(crc32c_portable(down.data(), 32), 0x113FDB5Cu);
  std::printf("crc32c implementation: %s\n", crc32c_implementation());
}

TEST(Crc32c, HardwareEqualsTableAndChains) {
  std::mt19937 rng(7);
  std::vector<unsigned char> data(100000);
  for (auto& b : data) b = uint8_t(rng());
  for (size_t start : {0, 1, 3, 7}) {  // the hardware path runs 3 chains over blocks of 3 x 4096 bytes
    for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 9993, 12287, 12288, 12289, 24576 + 13, 99990}) {
      const uint32_t whole = crc32c(data.data() + start, n);
      EXPECT_EQ(whole, crc32c_portable(data.data() + start, n)) << start << " " << n;
      for (size_t cut : {size_t(0), n / 3, n}) {
        const uint32_t a = crc32c(data.data() + start, cut);
        EXPECT_EQ(crc32c(data.data() + start + cut, n - cut, a), whole) << start << " " << n << " " << cut;
      }
    }
  }
}

TEST(Crc32c, EveryImplementationAgreesOnEveryLengthStartAndSplit) {
  const std::vector<Crc32cImpl> impls = crc32c_implementations();
  ASSERT_GE(impls.size(), 1u);
  EXPECT_STREQ(impls.front().name, "table");
  bool chosen_listed = false;
  for (const Crc32cImpl& c : impls) chosen_listed |= std::string(c.name) == crc32c_implementation();
  EXPECT_TRUE(chosen_listed) << crc32c_implementation();
  std::mt19937 rng(11);
  std::vector<unsigned char> data(40000 + 16);
  for (auto& b : data) b = uint8_t(rng());
  for (const Crc32cImpl& c : impls) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.fn("123456789", 9, 0), 0xE3069283u);
    EXPECT_EQ(c.fn("", 0, 0), 0u);
    EXPECT_EQ(c.fn("", 0, 0x12345678u), 0x12345678u);  // nothing chained: the seed
    for (size_t start = 0; start < 8; ++start)
      for (size_t n = 0; n <= 1024; ++n) {
        const uint32_t want = crc32c_portable(data.data() + start, n);
        ASSERT_EQ(c.fn(data.data() + start, n, 0), want) << "start " << start << " length " << n;
        const size_t cut = n == 0 ? 0 : size_t(rng()) % (n + 1);
        ASSERT_EQ(c.fn(data.data() + start + cut, n - cut, c.fn(data.data() + start, cut, 0)), want)
            << "start " << start << " length " << n << " split at " << cut;
      }
    // Lengths around the three-chain block (3 x 4096) and several blocks, split anywhere.
    for (size_t n : {size_t(12287), size_t(12288), size_t(12289), size_t(36864 + 5), size_t(40000)}) {
      const uint32_t want = crc32c_portable(data.data() + 3, n);
      ASSERT_EQ(c.fn(data.data() + 3, n, 0), want) << n;
      for (size_t cut : {size_t(1), size_t(4095), std::min(n, size_t(12288)), n / 2, n - 1})
        ASSERT_EQ(c.fn(data.data() + 3 + cut, n - cut, c.fn(data.data() + 3, cut, 0)), want) << n << " " << cut;
    }
  }
}

// Throughput of each implementation (printed, not checked: the machine is shared).
// A 256 KiB buffer (cache-resident) and a 64 MiB one (from memory, as the streaming
// reader sees freshly read blobs).
TEST(Crc32c, ThroughputOfEachImplementationIsPrinted) {
  using Clock = std::chrono::steady_clock;
  for (size_t bytes : {size_t(256) << 10, size_t(64) << 20}) {
    std::vector<unsigned char> buf(bytes);
    std::mt19937 rng(5);
    for (auto& b : buf) b = uint8_t(rng());
    for (const Crc32cImpl& c : crc32c_implementations()) {
      const size_t total = std::max<size_t>(bytes, size_t(256) << 20) / (std::string(c.name) == "table" ? 4 : 1);
      uint32_t sink = 0;
      double best = 1e30;
      for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = Clock::now();
        for (size_t done = 0; done < total; done += bytes) sink ^= c.fn(buf.data(), bytes, sink);
        best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
      }
      std::printf("crc32c %-10s %8zu KiB buffer: %6.2f GB/s (%08x)\n", c.name, bytes >> 10, double(total) / best / 1e9,
                  sink);
    }
  }
}

TEST(PreparedMagic, OnlyFilesStartingWithTheMagicAreRecognised) {
  const std::string dir = test::temp_dir();
  auto write = [&](const std::string& name, const std::string& bytes) {
    const std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  };
  EXPECT_TRUE(has_prepared_magic(write("magic_only.dlrw", "DLRWPREP")));
  EXPECT_TRUE(has_prepared_magic(write("magic_more.dlrw", std::string("DLRWPREP") + std::string(100, '\0'))));
  EXPECT_FALSE(has_prepared_magic(write("short.dlrw", "DLRWPRE")));
  EXPECT_FALSE(has_prepared_magic(write("empty.dlrw", "")));
  EXPECT_FALSE(has_prepared_magic(write("other.weights", std::string(20, '\0'))));
  EXPECT_FALSE(has_prepared_magic(dir + "/missing.dlrw"));
  EXPECT_FALSE(has_prepared_magic(dir));  // a directory cannot be read
}

// ---------------------------------------------------------------- fixtures

struct Model {
  NetworkDesc net;
  std::unique_ptr<WeightsFile> weights;
  std::string cfg_path, weights_path;
};

// SessionOptions for CPU fp32 (NCHW) or CUDA fp16 (NHWC by default, `layout` to force).
SessionOptions options_for(bool fp16_cuda, int layout = -1) {
  SessionOptions o;
  if (fp16_cuda) {
    o.device = DeviceKind::kCUDA;
    o.precision = Precision::kFP16;
  }
  o.layout = layout;
  return o;
}

std::vector<char> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write_all(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

void flip_byte(const std::string& path, int64_t offset) {
  std::vector<char> b = read_all(path);
  ASSERT_LT(offset, int64_t(b.size()));
  b[size_t(offset)] = char(b[size_t(offset)] ^ 0x5A);
  write_all(path, b);
}

uint32_t get_u32(const std::vector<char>& b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | uint8_t(b[at + size_t(i)]);
  return v;
}
void put_u32(std::vector<char>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + size_t(i)] = char(uint8_t(v >> (8 * i)));
}

// Sets the header CRC again after an edit (so the edit, not the CRC, is what a check sees).
void reseal_header(std::vector<char>& b) {
  const size_t header = std::min<size_t>(get_u32(b, 16), b.size());  // the header size field, not edited by tests
  put_u32(b, 12, 0);
  put_u32(b, 12, crc32c(b.data(), header));
}

class PreparedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
    DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
    dir_ = test::temp_dir() + "/prepared_" + std::to_string(counter_++);
    fs::create_directories(dir_);
    // A private copy of the weights: tests change its mtime and contents.
    model_.weights_path = dir_ + "/model.weights";
    fs::copy_file(weights, model_.weights_path);
    model_.cfg_path = cfg;
    Expected<NetworkDesc> net = parse_network_cfg(cfg);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    model_.net = std::move(*net);
    Expected<WeightsFile> wf = WeightsFile::open(model_.weights_path, model_.net);
    ASSERT_TRUE(wf.ok()) << wf.status().to_string();
    model_.weights = std::make_unique<WeightsFile>(std::move(*wf));
  }

  ExecutionPlan plan(bool fp16_cuda, int layout = -1) {
    Expected<ExecutionPlan> p = plan_for_prepare(model_.net, options_for(fp16_cuda, layout));
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? std::move(*p) : ExecutionPlan();
  }

  PreparedIdentity identity(const ExecutionPlan& p) {
    Expected<PreparedIdentity> id = prepared_identity(model_.cfg_path, model_.weights_path, p);
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    return id.ok() ? *id : PreparedIdentity();
  }

  // Writes the prepared file of `p` to dir_/name.
  std::string write(const ExecutionPlan& p, const std::string& name = "model.dlrw") {
    const std::string path = dir_ + "/" + name;
    auto source = weights_file_source(model_.net, *model_.weights);
    const Status st = write_prepared_file(path, p, *source, identity(p));
    EXPECT_TRUE(st.ok()) << st.to_string();
    return path;
  }

  // The refusal of `path` against `p`: one line naming the file, containing `what`.
  void expect_refused(const std::string& path, const ExecutionPlan& p, const PreparedIdentity* expect,
                      const std::string& what) {
    Expected<PreparedFile> f = PreparedFile::open(path, p, expect);
    ASSERT_FALSE(f.ok()) << "accepted; expected a refusal containing: " << what;
    const std::string& m = f.status().message();
    EXPECT_NE(m.find(what), std::string::npos) << m;
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }

  static int counter_;
  std::string dir_;
  Model model_;
};
int PreparedFileTest::counter_ = 0;

// ---------------------------------------------------------------- round trip

void expect_round_trip(PreparedFileTest* t, const ExecutionPlan& p, const std::string& path, const Model& m) {
  (void)t;
  Expected<PreparedFile> f = PreparedFile::open(path, p, nullptr);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->blobs().size(), p.weights.size());
  EXPECT_EQ(f->file_bytes(), int64_t(fs::file_size(path)));
  EXPECT_EQ(f->file_bytes() % 4096, 0);
  EXPECT_EQ(f->header_bytes() % 4096, 0);
  for (const PreparedBlob& b : f->blobs()) {
    EXPECT_EQ(b.offset % 4096, 0) << b.layer;
    EXPECT_GE(b.offset, f->header_bytes());
    EXPECT_LE(b.offset + align_up(b.bytes, 4096), f->file_bytes());
  }
  const Status v = f->verify_all();
  EXPECT_TRUE(v.ok()) << v.to_string();

  auto folded = weights_file_source(m.net, *m.weights);
  Expected<std::unique_ptr<WeightSource>> prepared = prepared_file_source(*f);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  for (const WeightBlob& b : p.weights) {
    std::vector<char> want(size_t(b.bytes), 1), got(size_t(b.bytes), 2);
    ASSERT_TRUE(folded->prepare(b, p.options.layout, want.data()).ok());
    const Status st = (*prepared)->prepare(b, p.options.layout, got.data());
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size()), 0) << "layer " << b.layer;
  }
}

TEST_F(PreparedFileTest, RoundTripFp32Nchw) {
  const ExecutionPlan p = plan(false);
  ASSERT_EQ(p.options.layout, Layout::kNCHW);
  ASSERT_EQ(p.weights.front().dtype, DType::kF32);
  expect_round_trip(this, p, write(p), model_);
}

TEST_F(PreparedFileTest, RoundTripFp16NhwcPlannedWithoutAGpu) {
  const ExecutionPlan p = plan(true);
  ASSERT_EQ(p.options.layout, Layout::kNHWC);
  ASSERT_EQ(p.weights.front().dtype, DType::kF16);
  expect_round_trip(this, p, write(p), model_);
}

TEST_F(PreparedFileTest, IdentityMatchesAndStoresTheContentHash) {
  const ExecutionPlan p = plan(false);
  const std::string path = write(p);
  PreparedIdentity id = identity(p);
  EXPECT_EQ(id.weights_hash, 0u);  // cheap identity
  Expected<PreparedFile> f = PreparedFile::open(path, p, &id);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_TRUE(hash_weights_content(&id).ok());
  EXPECT_NE(id.weights_hash, 0u);
  EXPECT_EQ(f->identity().weights_hash, id.weights_hash);
  EXPECT_EQ(f->identity().cfg_hash, id.cfg_hash);
  // Content identity ignores the mtime: a copy of the same .weights still matches.
  PreparedIdentity copied = id;
  copied.weights_mtime_ns += 1000;
  EXPECT_TRUE(PreparedFile::open(path, p, &copied).ok());
  copied.weights_hash = 0;  // cheap identity: the mtime counts
  expect_refused(path, p, &copied, "another version of");
}

// ---------------------------------------------------------------- refusals

TEST_F(PreparedFileTest, FlippedBlobByteIsCaughtByVerifyAndBySource) {
  const ExecutionPlan p = plan(false);
  const std::string path = write(p);
  Expected<PreparedFile> f = PreparedFile::open(path, p, nullptr);
  ASSERT_TRUE(f.ok());
  const PreparedBlob b = f->blobs()[3];
  flip_byte(path, b.offset + b.bytes / 2);
  Expected<PreparedFile> again = PreparedFile::open(path, p, nullptr);  // the header is intact
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  const Status v = again->verify_all();
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.message().find("blob 3 (layer " + std::to_string(b.layer) + ") at offset " + std::to_string(b.offset)),
            std::string::npos)
      << v.message();
  EXPECT_NE(v.message().find("CRC32C"), std::string::npos) << v.message();
  EXPECT_EQ(v.message().find('\n'), std::string::npos);

  Expected<std::unique_ptr<WeightSource>> src = prepared_file_source(*again);
  ASSERT_TRUE(src.ok());
  std::vector<char> dst(size_t(p.weights[3].bytes));
  const Status st = (*src)->prepare(p.weights[3], p.options.layout, dst.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("blob 3"), std::string::npos) << st.message();
  dst.resize(size_t(p.weights[2].bytes));
  EXPECT_TRUE((*src)->prepare(p.weights[2], p.options.layout, dst.data()).ok());  // the others still read
}

TEST_F(PreparedFileTest, FlippedHeaderByteIsRefused) {
  const ExecutionPlan p = plan(false);
  const std::string path = write(p);
  for (int64_t at : {40, 72 + 40 * 2 + 16, 2000}) {  // weights hash, a blob CRC, the zero tail of the header
    const std::string copy = path + ".h" + std::to_string(at);
    fs::copy_file(path, copy);
    flip_byte(copy, at);
    expect_refused(copy, p, nullptr, "header CRC32C");
  }
}

TEST_F(PreparedFileTest, TruncatedFileIsRefused) {
  const ExecutionPlan p = plan(false);
  const std::string path = write(p);
  const auto size = fs::file_size(path);
  for (uintmax_t keep : {uintmax_t(0), uintmax_t(100), uintmax_t(4096), size - 4096, size - 1}) {
    const std::string copy = path + ".t" + std::to_string(keep);
    fs::copy_file(path, copy);
    fs::resize_file(copy, keep);
    expect_refused(copy, p, nullptr, "truncated");
  }
  const std::string longer = path + ".long";  // bytes after the end are refused too
  fs::copy_file(path, longer);
  fs::resize_file(longer, size + 4096);
  expect_refused(longer, p, nullptr, "the header says " + std::to_string(size));
}

TEST_F(PreparedFileTest, OtherFormatVersionIsRefused) {
  const ExecutionPlan p = plan(false);
  const std::string path = write(p);
  std::vector<char> b = read_all(path);
  put_u32(b, 8, kPreparedFormatVersion + 1);
  reseal_header(b);
  write_all(path, b);
  expect_refused(path, p, nullptr, "format version " + std::to_string(kPreparedFormatVersion + 1));
  const std::string junk = dir_ + "/junk.dlrw";
  write_all(junk, std::vector<char>(8192, 'x'));
  expect_refused(junk, p, nullptr, "not a dlrun prepared weight file");
}

TEST_F(PreparedFileTest, BadTableIsRefusedEvenWithAValidHeaderCrc) {
  const ExecutionPlan p = plan(false);
  const std::string path = write(p);
  const std::vector<char> orig = read_all(path);
  auto edited = [&](size_t at, uint32_t v) {
    std::vector<char> b = orig;
    put_u32(b, at, v);
    reseal_header(b);
    const std::string copy = path + ".e" + std::to_string(at);
    write_all(copy, b);
    return copy;
  };
  expect_refused(edited(68, 0), p, nullptr, "blob count 0");
  expect_refused(edited(68, 1u << 30), p, nullptr, "blob count");
  expect_refused(edited(72 + 40, get_u32(orig, 72 + 40) + 256), p, nullptr, "blob 1");   // misaligned offset
  expect_refused(edited(72 + 40 + 8, 1u << 30), p, nullptr, "do not fit in the file");  // huge size
  expect_refused(edited(72 + 24, 1u << 31), p, nullptr, "filter range");               // first filter > INT32_MAX
  expect_refused(edited(72 + 32, 1u << 31), p, nullptr, "channel range");              // first channel > INT32_MAX
  expect_refused(edited(72 + 8, get_u32(orig, 72 + 8) + 4096), p, nullptr, "blob 1");   // overlaps the next
}

// Found while writing the fuzz harness (tests/fuzz/regressions/prepared/unaligned_size_
// huge_blob): a file whose size is not a multiple of 4096 put the aligned end of its
// last-but-one blob past the file's end, and the next blob's size check wrapped, so a
// huge size reached a signed addition (overflow, caught by UBSan).
TEST_F(PreparedFileTest, SizeNotAMultipleOf4096IsRefusedBeforeTheTable) {
  const ExecutionPlan p = plan(false);
  // The regression input's file: 8292 bytes, blob 0 = [4096, 8292) (aligned end 12288,
  // past the file), blob 1 at 12288 with 2^63 - 12283 bytes.
  const uint64_t size = 4096 + 4096 + 100;
  std::vector<char> b(size_t(size), 0);
  std::memcpy(b.data(), "DLRWPREP", 8);
  auto put_u64 = [&](size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) b[at + size_t(i)] = char(uint8_t(v >> (8 * i)));
  };
  put_u32(b, 8, kPreparedFormatVersion);
  put_u64(16, 4096);
  put_u64(24, size);
  put_u32(b, 68, 2);
  put_u64(72, 4096);
  put_u64(80, 4196);
  put_u64(96, 12288);
  put_u64(104, (uint64_t(1) << 63) - 12288 + 5);
  put_u32(b, 116, 1);
  reseal_header(b);
  const std::string path = dir_ + "/unaligned.dlrw";
  write_all(path, b);
  expect_refused(path, p, nullptr, "8292 bytes, not a multiple of 4096");
}

TEST_F(PreparedFileTest, AnotherModelIsRefused) {
  const ExecutionPlan p = plan(false);
  const std::string path = write(p);
  Expected<NetworkDesc> tiny = parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  ASSERT_TRUE(tiny.ok());
  Expected<ExecutionPlan> tp = plan_for_prepare(*tiny, options_for(false));
  ASSERT_TRUE(tp.ok());
  expect_refused(path, *tp, nullptr, "another model");
  // The same network from another cfg file (a comment added) and other weights.
  PreparedIdentity id = identity(p);
  const std::string cfg2 = dir_ + "/other.cfg";
  {
    std::ofstream(cfg2) << "# another cfg\n" << std::string(read_all(model_.cfg_path).data(), fs::file_size(model_.cfg_path));
  }
  Expected<PreparedIdentity> other_cfg = prepared_identity(cfg2, model_.weights_path, p);
  ASSERT_TRUE(other_cfg.ok());
  expect_refused(path, p, &*other_cfg, "another cfg");
  PreparedIdentity other_weights = id;
  ASSERT_TRUE(hash_weights_content(&other_weights).ok());
  other_weights.weights_hash ^= 1;
  expect_refused(path, p, &other_weights, "another .weights file");
  other_weights = id;
  other_weights.weights_size += 4;
  expect_refused(path, p, &other_weights, "another .weights file");
}

TEST_F(PreparedFileTest, AnotherPrecisionOrLayoutIsRefused) {
  const ExecutionPlan fp32 = plan(false);
  const std::string path = write(fp32);
  expect_refused(path, plan(true, 0), nullptr, "dtype f32, the run uses f16");   // fp16 NCHW
  expect_refused(path, plan(true, 1), nullptr,  // fp16 NHWC
                 "layout NCHW, the run uses NHWC (set the run's layout to the file's");
  // And the source refuses a blob asked for in another dtype or layout.
  Expected<PreparedFile> f = PreparedFile::open(path, fp32, nullptr);
  ASSERT_TRUE(f.ok());
  auto src = prepared_file_source(*f);
  ASSERT_TRUE(src.ok());
  std::vector<char> dst(size_t(fp32.weights[0].bytes));
  EXPECT_FALSE((*src)->prepare(fp32.weights[0], Layout::kNHWC, dst.data()).ok());
}

// ---------------------------------------------------------------- cache

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : m_name(name) {
    const char* old = std::getenv(name);
    m_had = old != nullptr;
    if (old) m_old = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (m_had)
      ::setenv(m_name, m_old.c_str(), 1);
    else
      ::unsetenv(m_name);
  }

 private:
  const char* m_name;
  bool m_had = false;
  std::string m_old;
};

struct FileStamp {
  ino_t inode = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp& o) const { return inode == o.inode && mtime_ns == o.mtime_ns; }
};
FileStamp stamp(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return {st.st_ino, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

TEST_F(PreparedFileTest, CacheBuildsOnceThenReuses) {
  ScopedEnv env("DLR_CACHE_DIR", dir_ + "/cache");
  const ExecutionPlan p = plan(true);
  const PreparedIdentity id = identity(p);
  auto source = weights_file_source(model_.net, *model_.weights);
  bool built = false;
  Expected<std::string> path = ensure_prepared(id, p, *source, &built);
  ASSERT_TRUE(path.ok()) << path.status().to_string();
  EXPECT_TRUE(built);
  EXPECT_EQ(path->rfind(dir_ + "/cache/prepared/yolo-fastest-1_1-", 0), 0u) << *path;
  const FileStamp first = stamp(*path);
  ::usleep(20000);
  for (PreparedCheck check : {PreparedCheck::kHeader, PreparedCheck::kFull}) {
    Expected<std::string> again = ensure_prepared(id, p, *source, &built, check);
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    EXPECT_EQ(*again, *path);
    EXPECT_FALSE(built);
    EXPECT_TRUE(stamp(*path) == first) << "a valid cache entry was rewritten";
  }
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_ + "/cache/prepared")) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1);
  // Another precision is another entry.
  const ExecutionPlan p32 = plan(false);
  Expected<std::string> other = ensure_prepared(identity(p32), p32, *source, &built);
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  EXPECT_TRUE(built);
  EXPECT_NE(*other, *path);
}

TEST_F(PreparedFileTest, CacheRebuildsStaleOrCorruptEntriesAndSaysWhy) {
  ScopedEnv env("DLR_CACHE_DIR", dir_ + "/cache");
  const ExecutionPlan p = plan(false);
  const PreparedIdentity id = identity(p);
  auto source = weights_file_source(model_.net, *model_.weights);
  bool built = false;
  std::string why;
  Expected<std::string> path = ensure_prepared(id, p, *source, &built);
  ASSERT_TRUE(path.ok()) << path.status().to_string();
  Expected<PreparedFile> f = PreparedFile::open(*path, p, &id);
  ASSERT_TRUE(f.ok());
  const PreparedBlob blob = f->blobs()[1];

  // A flipped byte in a blob: the header check passes (the blob CRC is checked on
  // read); the full check rebuilds.
  flip_byte(*path, blob.offset + 5);
  ASSERT_TRUE(ensure_prepared(id, p, *source, &built, PreparedCheck::kHeader, &why).ok());
  EXPECT_FALSE(built);
  ASSERT_TRUE(ensure_prepared(id, p, *source, &built, PreparedCheck::kFull, &why).ok());
  EXPECT_TRUE(built);
  EXPECT_NE(why.find("CRC32C"), std::string::npos) << why;
  EXPECT_TRUE(PreparedFile::open(*path, p, &id)->verify_all().ok());

  // A flipped header byte, another version, a truncated file: rebuilt on the header check.
  struct Case {
    const char* what;
    std::function<void(const std::string&)> damage;
  };
  const std::vector<Case> cases = {
      {"header CRC32C", [](const std::string& q) { flip_byte(q, 33); }},
      {"format version", [](const std::string& q) {
         std::vector<char> b = read_all(q);
         put_u32(b, 8, 99);
         reseal_header(b);
         write_all(q, b);
       }},
      {"truncated", [](const std::string& q) { fs::resize_file(q, fs::file_size(q) - 4096); }},
  };
  for (const Case& c : cases) {
    c.damage(*path);
    Expected<std::string> again = ensure_prepared(id, p, *source, &built, PreparedCheck::kHeader, &why);
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    EXPECT_TRUE(built) << c.what;
    EXPECT_NE(why.find(c.what), std::string::npos) << why;
    EXPECT_NE(why.find(*path), std::string::npos) << why;
    EXPECT_TRUE(PreparedFile::open(*path, p, &id).ok()) << c.what;
  }

  // A rewritten .weights file (new mtime): a new cache entry, built from it.
  ::usleep(20000);
  { std::ofstream touch(model_.weights_path, std::ios::binary | std::ios::in | std::ios::out); touch.put(0); }
  const PreparedIdentity changed = identity(p);
  ASSERT_NE(changed.weights_mtime_ns, id.weights_mtime_ns);
  Expected<std::string> newer = ensure_prepared(changed, p, *source, &built);
  ASSERT_TRUE(newer.ok());
  EXPECT_TRUE(built);
  EXPECT_NE(*newer, *path);
}

TEST_F(PreparedFileTest, UnusableCacheDirectoryNamesTheFix) {
  // Root ignores permissions, so the cache directory is put under a regular file.
  const std::string file = dir_ + "/a_file";
  write_all(file, {'x'});
  ScopedEnv env("DLR_CACHE_DIR", file + "/x");
  const ExecutionPlan p = plan(false);
  auto source = weights_file_source(model_.net, *model_.weights);
  bool built = true;
  Expected<std::string> path = ensure_prepared(identity(p), p, *source, &built);
  ASSERT_FALSE(path.ok());
  EXPECT_FALSE(built);
  const std::string& m = path.status().message();
  EXPECT_NE(m.find(file + "/x"), std::string::npos) << m;
  EXPECT_NE(m.find("DLR_CACHE_DIR"), std::string::npos) << m;
  EXPECT_NE(m.find("dlrun --prepare"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST_F(PreparedFileTest, UnwritableDestinationLeavesNothingAndNamesTheDirectory) {
  const ExecutionPlan p = plan(false);
  auto source = weights_file_source(model_.net, *model_.weights);
  const std::string file = dir_ + "/a_file";
  write_all(file, {'x'});
  const Status st = write_prepared_file(file + "/out.dlrw", p, *source, identity(p));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot create a file in " + file), std::string::npos) << st.message();
  // A failing source leaves no file and no temporary behind.
  const std::string out = dir_ + "/out/model.dlrw";
  fs::create_directories(dir_ + "/out");
  Expected<NetworkDesc> tiny = parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  ASSERT_TRUE(tiny.ok());
  auto wrong = weights_file_source(*tiny, *model_.weights);  // layers do not match the plan's blobs
  EXPECT_FALSE(write_prepared_file(out, p, *wrong, identity(p)).ok());
  EXPECT_TRUE(fs::is_empty(dir_ + "/out"));
}

}  // namespace
}  // namespace dlr
