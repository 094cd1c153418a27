// Weights from storage on the CPU backend (two stages: the convolutions read their
// weights from the staging area the reads land in): outputs bit-identical to the
// host-memory run, for several host budgets (every blob read, the largest kept in
// memory and the rest read, every blob kept), both readers, with and without reading the
// next inference's first weights ahead; the prepared file made
// on first use and reused; a truncated prepared file fails one inference with one line
// naming it and the session recovers once the file is whole.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/session.h"
#include "runtime/storage/page_cache_view.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

struct Fastest {
  std::string cfg, weights;
};

bool fastest(Fastest* f) {
  f->cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  f->weights = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  return !f->cfg.empty() && !f->weights.empty();
}

// Every network output of one inference on `input`.
std::vector<std::vector<float>> heads(Session& s, const std::vector<float>& input) {
  Engine& e = s.engine();
  EXPECT_TRUE(e.set_input(input.data(), 1).ok());
  const Status st = e.run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::vector<std::vector<float>> out;
  for (int y : s.network().output_layers()) {
    const int64_t n = s.plan().steps[size_t(y)].out.count();
    out.emplace_back(e.output(y, 0), e.output(y, 0) + n);
  }
  return out;
}

SessionOptions cpu_storage(const std::string& prepared) {
  SessionOptions o;
  o.width = o.height = 160;  // small: the suite runs on 2 cores
  o.weights_from = WeightsFrom::kStorage;
  o.prepared_path = prepared;
  return o;
}

TEST(StorageCpu, BitIdenticalToHostWeightsForEveryHostBudgetAndReader) {
  Fastest f;
  if (!fastest(&f)) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  SessionOptions host;
  host.width = host.height = 160;
  auto ref = Session::open(f.cfg, f.weights, host);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  const std::vector<float> input = test::random_input(1, 3, 160, 160, 5);
  const auto want = heads(**ref, input);
  const std::string prepared = test::temp_dir() + "/fastest-cpu.dlrw";
  // Host budgets in quarters of the minimum staging: 0 (the minimum: every blob read),
  // 3/4 and 50x (yolo-fastest's 1.4 MB are one read unit, so a budget of at least its
  // weights keeps every blob: nothing read). Some kept and some read: the next test.
  int64_t min_staging = 0;
  for (int64_t quarters : {0, 3, 200})
    for (ReaderKind reader : {ReaderKind::kAuto, ReaderKind::kThreads}) {
      SessionOptions o = cpu_storage(prepared);
      o.host_budget = quarters * min_staging / 4 / 4096 * 4096;
      o.reader = reader;
      o.read_depth = quarters == 3 ? 2 : 8;
      o.prefetch_reads = !(quarters == 3 && reader == ReaderKind::kThreads);  // read ahead is the default
      o.cache_hits = reader == ReaderKind::kAuto;  // the threads reader reads direct whatever the cache holds
      auto s = Session::open(f.cfg, f.weights, o);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      const CompiledModel& m = (*s)->model();
      ASSERT_TRUE(m.from_storage && m.reads.two_stage);
      if (quarters == 0) min_staging = m.reads.staging_bytes;
      int64_t kept = 0;
      for (size_t b = 0; b < m.plan.weights.size(); ++b)
        if (m.reads.blob_staging_offset[b] < 0) kept += m.plan.weights[b].bytes;
      const MemoryReport mem = (*s)->engine().memory();
      EXPECT_EQ(mem.weights, kept);
      EXPECT_EQ(mem.host_weights, m.reads.staging_bytes);
      if (quarters == 0) {
        EXPECT_EQ(m.reads.staging_bytes, m.reads.min_staging_bytes);
        EXPECT_EQ(kept, 0);
      } else {
        EXPECT_LE(kept + m.reads.staging_bytes, o.host_budget);
        EXPECT_GT(kept, 0);
      }
      if (quarters > 0) {
        EXPECT_EQ(kept, m.plan.weight_bytes());
      }
      EXPECT_EQ(m.reads.read_bytes() + kept, m.plan.weight_bytes());
      EXPECT_EQ((*s)->prepared_path(), prepared);
      auto resident = page_cache_bytes(prepared);
      ASSERT_TRUE(resident.ok()) << resident.status().to_string();
      const bool whole_file_cached = uintmax_t(*resident) == std::filesystem::file_size(prepared);
      for (int run = 0; run < 2; ++run) {
        const auto got = heads(**s, input);
        ASSERT_EQ(got.size(), want.size());
        for (size_t h = 0; h < got.size(); ++h)
          ASSERT_EQ(got[h], want[h]) << "head " << h << " host budget " << quarters << "/4 x run " << run;
      }
      EXPECT_EQ((*s)->engine().read_timings().size(), m.reads.units.size());
      // Bytes from the page cache: none without cache hits; every read with them where
      // the cache holds the file (just written).
      if (!o.cache_hits) {
        EXPECT_EQ((*s)->engine().read_cached_bytes(), 0);
      } else if (whole_file_cached) {
        EXPECT_EQ((*s)->engine().read_cached_bytes(), m.reads.read_bytes());
      }
    }
}

// A host budget of 1.2 x the minimum staging on yolov4-tiny (synthetic weights, 4 MiB
// read units): the staging stays at that minimum, the 20 % beyond it keep the largest
// blobs that fit, the rest is read each inference, and the outputs stay those of the
// host-memory run, with and without read ahead.
TEST(StorageCpu, KeptAndReadBlobsTogetherMatchHostWeights) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  SessionOptions host;
  host.width = host.height = 128;
  auto ref = Session::open(cfg, weights, host);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  const std::vector<float> input = test::random_input(1, 3, 128, 128, 9);
  const auto want = heads(**ref, input);
  const std::string prepared = test::temp_dir() + "/tiny-kept-cpu.dlrw";
  SessionOptions o = cpu_storage(prepared);
  o.width = o.height = 128;
  auto minimal = Session::open(cfg, weights, o);
  ASSERT_TRUE(minimal.ok()) << minimal.status().to_string();
  o.host_budget = (*minimal)->model().reads.min_staging_bytes * 6 / 5 / 4096 * 4096;
  for (bool ahead : {true, false}) {
    o.prefetch_reads = ahead;
    auto s = Session::open(cfg, weights, o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    const CompiledModel& m = (*s)->model();
    int64_t kept = 0;
    for (size_t b = 0; b < m.plan.weights.size(); ++b)
      if (m.reads.blob_staging_offset[b] < 0) kept += m.plan.weights[b].bytes;
    EXPECT_GT(kept, 0);
    EXPECT_GT(m.reads.read_bytes(), 0);
    EXPECT_GE(m.reads.staging_bytes, (*minimal)->model().reads.min_staging_bytes);
    EXPECT_LE(kept + m.reads.staging_bytes, o.host_budget);
    EXPECT_EQ((*s)->engine().memory().weights, kept);
    for (int run = 0; run < 3; ++run) {
      const auto got = heads(**s, input);
      ASSERT_EQ(got.size(), want.size());
      for (size_t h = 0; h < got.size(); ++h) ASSERT_EQ(got[h], want[h]) << "head " << h << " run " << run;
    }
    EXPECT_EQ((*s)->engine().read_timings().size(), m.reads.units.size());
  }
}

// A weight source that only says where blobs lie (the engine must refuse before reading).
class NoBytes final : public WeightSource {
 public:
  Status prepare(const WeightBlob&, Layout, void*) override { return internal_error("no bytes here"); }
  const std::string& name() const override { return m_name; }
  const BlobFile* blob_file() const override { return &m_file; }

 private:
  std::string m_name = "fake.dlrw";
  BlobFile m_file;
};

// A compiled model whose read plan does not cover the plan's blobs (e.g. edited JSON) is
// refused at create with both counts, before anything is read.
TEST(StorageCpu, ReadPlanOfTheWrongSizeIsRefused) {
  auto net = parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  SessionOptions o = cpu_storage("");
  auto m = compile(*net, cpu_target(), o);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const size_t blobs = m->plan.weights.size();
  m->reads.blob_staging_offset.pop_back();
  NoBytes source;
  auto e = CpuEngine::create(*m, source);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "read plan: staging offsets for " + std::to_string(blobs - 1) + " of " +
                                      std::to_string(blobs) + " weight blobs");
}

// A plan compiled for CUDA NHWC (a conv over a concatenation's parts) is refused by the
// CPU engine with one line, before anything is read.
TEST(StorageCpu, ConvOverConcatPlanIsRefused) {
  auto net = parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  SessionOptions o = cpu_storage("");
  auto m = compile(*net, cpu_target(), o);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  m->plan.options.conv_over_concat = true;
  NoBytes source;
  auto e = CpuEngine::create(*m, source);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "the CPU backend does not run convs over a concatenation's parts (a plan compiled for CUDA NHWC)");
}

TEST(StorageCpu, PreparedFileMadeOnFirstUseAndReused) {
  Fastest f;
  if (!fastest(&f)) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  const std::string prepared = test::temp_dir() + "/fastest-reuse.dlrw";
  ASSERT_NE(access(prepared.c_str(), F_OK), 0);
  auto a = Session::open(f.cfg, f.weights, cpu_storage(prepared));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  struct stat first {};
  ASSERT_EQ(stat(prepared.c_str(), &first), 0);
  auto b = Session::open(f.cfg, f.weights, cpu_storage(prepared));
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  struct stat second {};
  ASSERT_EQ(stat(prepared.c_str(), &second), 0);
  EXPECT_EQ(first.st_ino, second.st_ino) << "a valid prepared file was written again";
  EXPECT_EQ(first.st_mtim.tv_nsec, second.st_mtim.tv_nsec);
  // The prepared file as the weights argument.
  auto c = Session::open(f.cfg, prepared, cpu_storage(""));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  // ... but not in host mode: the message names the fix.
  SessionOptions host;
  auto d = Session::open(f.cfg, prepared, host);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("weights_from storage"), std::string::npos) << d.status().message();
}

TEST(StorageCpu, TruncatedFileFailsOneInferenceThenTheSessionRecovers) {
  Fastest f;
  if (!fastest(&f)) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  const std::string prepared = test::temp_dir() + "/fastest-trunc.dlrw";
  auto s = Session::open(f.cfg, f.weights, cpu_storage(prepared));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::vector<float> input = test::random_input(1, 3, 160, 160, 9);
  const auto want = heads(**s, input);
  const std::string bytes = test::read_bytes(prepared);
  ASSERT_FALSE(bytes.empty());
  ASSERT_EQ(0, truncate(prepared.c_str(), off_t(bytes.size() / 2)));
  Engine& e = (*s)->engine();
  ASSERT_TRUE(e.set_input(input.data(), 1).ok());
  // The inference after the truncation may have been read wholly ahead, before it (one
  // read: yolo-fastest's blobs fit in one unit); the one after it is read after it.
  Status bad = e.run();
  if (bad.ok()) {
    ASSERT_TRUE(e.set_input(input.data(), 1).ok());
    bad = e.run();
  }
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find(prepared), std::string::npos) << bad.message();
  EXPECT_EQ(bad.message().find('\n'), std::string::npos) << bad.message();
  ASSERT_TRUE(test::write_bytes_in_place(prepared, bytes));
  EXPECT_EQ(heads(**s, input), want);
}

}  // namespace
}  // namespace dlr
