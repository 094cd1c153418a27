// Weight preparation from a .weights file (runtime/weight_source.cpp, weight_store.cpp):
// the blobs a WeightSource writes, whole or in filter parts, on one thread or several,
// equal a reference built from prepare_conv (the whole layer folded in fp32, then cut,
// converted by float_to_half and laid out), for every dtype, layout and slicing axis;
// upload_chunks groups blobs as upload_blobs needs; a refused value gives the same
// error on any thread count.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/prepare.h"
#include "loaders/weights_file.h"
#include "runtime/compile/compile.h"
#include "runtime/core/half.h"
#include "runtime/weight_source.h"
#include "runtime/weight_store.h"
#include "tests/common/test_paths.h"
#include "tests/common/weight_fixtures.h"

namespace dlr {
namespace {

// The blob as the plan describes it, from the whole layer prepared by prepare_conv.
std::vector<char> reference_blob(const NetworkDesc& net, const WeightsFile& file, const WeightBlob& b, Layout layout) {
  const LayerDesc& l = net.layers[size_t(b.layer)];
  const ConvParams& p = l.conv();
  const PreparedSizes s = prepared_sizes(l);
  std::vector<float> w(size_t(s.weights)), bias(size_t(s.bias));
  EXPECT_TRUE(prepare_conv(l, file, w.data(), bias.data()).ok());
  const int64_t cin = l.in.c / p.groups, kk = int64_t(p.size) * p.size;
  const int f0 = b.filters > 0 ? b.filter_begin : 0, nf = b.filters > 0 ? b.filters : p.filters;
  const int c0 = b.channels > 0 ? b.channel_begin : 0, nc = b.channels > 0 ? b.channels : int(cin);
  std::vector<char> out(size_t(b.bytes), 0);
  const bool f16 = b.dtype == DType::kF16;
  for (int64_t o = 0; o < nf; ++o)
    for (int64_t c = 0; c < nc; ++c)
      for (int64_t k = 0; k < kk; ++k) {
        const float v = w[size_t(((f0 + o) * cin + c0 + c) * kk + k)];
        const int64_t at = layout == Layout::kNHWC ? (o * kk + k) * nc + c : (o * nc + c) * kk + k;
        if (f16) {
          const uint16_t h = float_to_half(v);
          std::memcpy(out.data() + at * 2, &h, 2);
        } else {
          std::memcpy(out.data() + at * 4, &v, 4);
        }
      }
  if (b.bias_elems > 0) std::memcpy(out.data() + b.bias_offset, bias.data() + f0, size_t(b.bias_elems) * 4);
  return out;
}

using Model = test::OpenedWeights;

bool open_tiny(Model* m) { return test::open_tiny_weights(m, "tiny.weights"); }

ExecutionPlan plan_for(const NetworkDesc& net, Precision precision, int layout, int64_t slot, SliceBy by) {
  return test::prepared_plan(net, test::cuda_plan_options(precision, layout, slot, by));
}

struct Variant {
  Precision precision;
  int layout;  // 0 NCHW, 1 NHWC
  int64_t slot;
  SliceBy by;
};

TEST(WeightPrepare, BlobsEqualTheReferenceOnAnyThreadCount) {
  DLR_REQUIRE_SHARED_DIR();
  Model m;
  if (!open_tiny(&m)) GTEST_SKIP() << "yolov4-tiny.cfg not in the shared folder";
  const Variant variants[] = {
      {Precision::kFP32, 0, 0, SliceBy::kAuto},           {Precision::kFP32, 1, 0, SliceBy::kAuto},
      {Precision::kFP16, 0, 0, SliceBy::kAuto},           {Precision::kFP16, 1, 0, SliceBy::kAuto},
      {Precision::kFP16, 1, 256 << 10, SliceBy::kFilters}, {Precision::kFP16, 1, 256 << 10, SliceBy::kChannels},
      {Precision::kFP32, 0, 512 << 10, SliceBy::kChannels}, {Precision::kFP32, 1, 512 << 10, SliceBy::kFilters},
  };
  for (const Variant& v : variants) {
    const ExecutionPlan plan = plan_for(m.net, v.precision, v.layout, v.slot, v.by);
    ASSERT_FALSE(plan.weights.empty());
    int sliced = 0;
    for (const WeightBlob& b : plan.weights) sliced += b.filters > 0 || b.channels > 0;
    EXPECT_EQ(sliced > 0, v.slot > 0) << "slot " << v.slot << ": " << sliced << " sliced blobs";
    std::unique_ptr<WeightSource> source = weights_file_source(m.net, *m.file);
    const std::string what = std::string(v.precision == Precision::kFP16 ? "fp16" : "fp32") +
                             (v.layout ? " NHWC" : " NCHW") + " slot " + std::to_string(v.slot) + " by " +
                             slice_by_name(v.by);
    for (int threads : {1, 3, 8}) {
      Expected<WeightStore> store = WeightStore::create(plan, *source, {}, threads);
      ASSERT_TRUE(store.ok()) << store.status().to_string();
      for (size_t b = 0; b < plan.weights.size(); ++b) {
        const std::vector<char> want = reference_blob(m.net, *m.file, plan.weights[b], plan.options.layout);
        ASSERT_EQ(0, std::memcmp(store->blob(int(b)), want.data(), want.size()))
            << what << ", " << threads << " threads: blob " << b << " (layer " << plan.weights[b].layer << ")";
      }
    }
  }
}

TEST(WeightPrepare, PartsOfABlobWriteOnlyTheirFilters) {
  DLR_REQUIRE_SHARED_DIR();
  Model m;
  if (!open_tiny(&m)) GTEST_SKIP() << "yolov4-tiny.cfg not in the shared folder";
  const ExecutionPlan plan = plan_for(m.net, Precision::kFP16, 1, 0, SliceBy::kAuto);
  std::unique_ptr<WeightSource> source = weights_file_source(m.net, *m.file);
  ASSERT_TRUE(source->splits());
  std::mt19937 rng(5);
  for (size_t b = 0; b < plan.weights.size(); ++b) {
    const WeightBlob& blob = plan.weights[b];
    const int filters = blob_filters(blob, m.net.layers[size_t(blob.layer)].conv().filters);
    const std::vector<char> want = reference_blob(m.net, *m.file, blob, plan.options.layout);
    std::vector<char> got(want.size(), char(0x5A));
    // Random cut points; the parts in a shuffled order.
    std::vector<int> cuts = {0, filters};
    for (int k = 0; k < 3; ++k) cuts.push_back(int(rng() % uint32_t(filters + 1)));
    std::sort(cuts.begin(), cuts.end());
    std::vector<size_t> order(cuts.size() - 1);
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order)
      ASSERT_TRUE(source->prepare_filters(blob, plan.options.layout, got.data(), cuts[i], cuts[i + 1]).ok());
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), want.size())) << "blob " << b;
  }
  const Status bad = source->prepare_filters(plan.weights[0], plan.options.layout, nullptr, 2, 1);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("filters [2, 1)"), std::string::npos) << bad.message();
}

TEST(WeightPrepare, ARefusedValueGivesTheSameErrorOnAnyThreadCount) {
  DLR_REQUIRE_SHARED_DIR();
  Model m;
  if (!open_tiny(&m)) GTEST_SKIP() << "yolov4-tiny.cfg not in the shared folder";
  // A NaN in the middle of the largest conv's weights.
  const WeightsIndex& index = m.file->index();
  size_t layer = 0;
  for (size_t l = 0; l < m.net.layers.size(); ++l)
    if (m.net.layers[l].kind == LayerKind::kConv && m.net.layers[l].weight_count() > m.net.layers[layer].weight_count())
      layer = l;
  const BlobRef* w = index.layers[layer].find(BlobRole::kWeights);
  ASSERT_NE(w, nullptr);
  std::string bytes = test::read_bytes(m.file->path());
  const int64_t element = int64_t(w->count / 2 + 3);
  const float nan = std::nanf("");
  std::memcpy(&bytes[size_t(w->offset + element * 4)], &nan, 4);
  const std::string path = test::temp_dir() + "/tiny-nan.weights";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
  Expected<WeightsFile> bad = WeightsFile::open(path, m.net);
  ASSERT_TRUE(bad.ok());
  const ExecutionPlan plan = plan_for(m.net, Precision::kFP16, 1, 0, SliceBy::kAuto);
  std::string first;
  for (int threads : {1, 4}) {
    std::unique_ptr<WeightSource> source = weights_file_source(m.net, *bad);
    Expected<WeightStore> store = WeightStore::create(plan, *source, {}, threads);
    ASSERT_FALSE(store.ok());
    const std::string msg = store.status().message();
    EXPECT_NE(msg.find("weights[" + std::to_string(element) + "] is nan"), std::string::npos) << msg;
    EXPECT_NE(msg.find("layer " + std::to_string(layer)), std::string::npos) << msg;
    if (first.empty()) first = msg;
    EXPECT_EQ(msg, first);
  }
}

TEST(WeightPrepare, UploadChunksCoverTheHeldBlobsInOrder) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 500; ++trial) {
    ExecutionPlan plan;
    const int n = 1 + int(rng() % 40);
    std::vector<int64_t> offsets(size_t(n), -1);
    int64_t at = 0;
    for (int b = 0; b < n; ++b) {
      WeightBlob w;
      w.bytes = 256 * int64_t(1 + rng() % 64);
      plan.weights.push_back(w);
      if (rng() % 4 != 0) {
        offsets[size_t(b)] = at;
        at += w.bytes;
      }
    }
    const int64_t chunk = 256 * int64_t(1 + rng() % 100);
    const std::vector<UploadChunk> chunks = upload_chunks(plan, offsets, chunk);
    int64_t covered = 0;
    int prev_end = 0;
    for (const UploadChunk& c : chunks) {
      ASSERT_GE(c.first, prev_end);
      ASSERT_LT(c.first, c.end);
      ASSERT_GE(offsets[size_t(c.first)], 0);
      ASSERT_EQ(c.offset, covered);
      int64_t sum = 0, held = 0;
      for (int b = c.first; b < c.end; ++b)
        if (offsets[size_t(b)] >= 0) {
          ASSERT_EQ(offsets[size_t(b)], c.offset + sum);
          sum += plan.weights[size_t(b)].bytes;
          ++held;
        }
      ASSERT_EQ(sum, c.bytes);
      ASSERT_TRUE(c.bytes <= chunk || held == 1) << "a chunk over the size holds one blob";
      covered += c.bytes;
      prev_end = c.end;
    }
    ASSERT_EQ(covered, at);
  }
}

}  // namespace
}  // namespace dlr
