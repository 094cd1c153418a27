// Sliced layers (runtime/compile/slicing.h): slice sizes, the structure of sliced plans
// (steps, blobs, scratch buffers, live ranges) on every shared cfg in both layouts and
// along both axes, stream plans of sliced networks checked by the simulator, and CPU
// outputs of sliced networks against the unsliced run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/compile/slicing.h"
#include "runtime/session.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/session_fixtures.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

TEST(SliceSizes, FewestSlicesEachFittingAndCoveringEveryFilter) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int filters = 1 + int(rng() % 2048);
    const int64_t elems = 1 + int64_t(rng() % 20000);
    const DType dt = rng() % 2 ? DType::kF16 : DType::kF32;
    const int64_t align = rng() % 2 ? 256 : 4096;
    const int64_t cap = 256 * (1 + int64_t(rng() % 40000));
    const int fallback = rng() % 2 ? 4 : 1;  // the CPU's: multiples of 4 where fewer than 8 fit
    const std::vector<int> s = slice_sizes(filters, elems, dt, align, cap, 8, WeightFormat::kFp, fallback);
    if (conv_blob_bytes(1, elems, dt, align) > cap) {
      EXPECT_TRUE(s.empty());
      continue;
    }
    ASSERT_FALSE(s.empty());
    int sum = 0;
    for (int n : s) {
      EXPECT_GT(n, 0);
      EXPECT_LE(conv_blob_bytes(n, elems, dt, align), cap) << filters << " " << elems << " " << cap;
      sum += n;
    }
    EXPECT_EQ(sum, filters);
    if (conv_blob_bytes(filters, elems, dt, align) <= cap) {
      EXPECT_EQ(s.size(), 1u);
      continue;
    }
    // Fewest: slices of the largest multiple of 8 filters that fits (else of the
    // fallback, else of the largest that fits).
    int largest = 0;
    for (int n = 1; n <= filters && conv_blob_bytes(n, elems, dt, align) <= cap; ++n) largest = n;
    const int multiple = largest >= 8 ? 8 : largest >= fallback ? fallback : 1;
    const int unit = largest - largest % multiple;
    EXPECT_EQ(int(s.size()), (filters + unit - 1) / unit);
    // All but the last the same size, a multiple of that.
    for (size_t k = 0; k + 1 < s.size(); ++k) {
      EXPECT_EQ(s[k], s[0]);
      EXPECT_EQ(s[k] % multiple, 0) << "largest " << largest << " fallback " << fallback;
    }
  }
}

TEST(SliceSizes, ChannelSlicesFitWithTheBiasAndCoverEveryChannel) {
  std::mt19937 rng(9);
  for (int trial = 0; trial < 2000; ++trial) {
    const int channels = 1 + int(rng() % 2048), filters = 1 + int(rng() % 1024);
    const int64_t kk = rng() % 2 ? 9 : 1;
    const DType dt = rng() % 2 ? DType::kF16 : DType::kF32;
    const int64_t align = rng() % 2 ? 256 : 4096;
    const int64_t cap = 256 * (1 + int64_t(rng() % 40000));
    auto bytes = [&](int n) { return blob_bytes(int64_t(n) * filters * kk, filters, dt, align); };
    const std::vector<int> s = channel_slice_sizes(channels, filters, kk, dt, align, cap, 8);
    if (bytes(1) > cap) {
      EXPECT_TRUE(s.empty());
      continue;
    }
    ASSERT_FALSE(s.empty());
    int sum = 0;
    for (int n : s) {
      EXPECT_GT(n, 0);
      EXPECT_LE(bytes(n), cap);
      sum += n;
    }
    EXPECT_EQ(sum, channels);
    if (bytes(channels) <= cap) { EXPECT_EQ(s.size(), 1u); }
    for (size_t k = 0; k + 1 < s.size(); ++k) EXPECT_EQ(s[k], s[0]);
  }
}

void check_filter_slice(const ExecutionPlan& plan, const LayerDesc& l, size_t i) {
  const Step& s = plan.steps[i];
  const WeightBlob& w = plan.weights[size_t(s.weight)];
  const ConvParams& p = std::get<ConvParams>(s.params);
  EXPECT_EQ(w.filters, p.filters);
  EXPECT_EQ(w.filter_begin, s.filter_begin);
  EXPECT_EQ(w.channels, 0);
  EXPECT_EQ(w.bias_elems, p.filters);
  EXPECT_EQ(s.out.c, p.filters);
  EXPECT_FALSE(s.accumulate);
  EXPECT_EQ(p.activation, l.conv().activation);
  if (s.slice > 0) {
    const Step& before = plan.steps[i - 1];
    EXPECT_EQ(before.filter_begin + before.out.c, s.filter_begin);
  } else {
    EXPECT_EQ(s.filter_begin, 0);
  }
  if (s.slice + 1 == s.slices) { EXPECT_EQ(s.filter_begin + s.out.c, l.conv().filters); }
  const ViewRef& out = plan.layer_out[size_t(s.layer)];
  const ViewRef dst = s.copies.empty() ? s.output : s.copies[0].second;
  EXPECT_EQ(dst.buffer, out.buffer);
  EXPECT_EQ(dst.c_offset, out.c_offset + s.filter_begin);
  EXPECT_EQ(dst.c, s.out.c);
  if (!s.copies.empty()) {
    const Buffer& b = plan.buffer(s.output);
    EXPECT_EQ(s.output.c, b.c) << "a scratch is the slice, packed";
    EXPECT_EQ(b.first_step, int(i));
    EXPECT_EQ(b.last_step, int(i));
  }
}

// An input-channel slice: the whole output, its channels of the input, partial sums
// added by all but the first, bias and activation only in the last.
void check_channel_slice(const ExecutionPlan& plan, const LayerDesc& l, size_t i) {
  const Step& s = plan.steps[i];
  const WeightBlob& w = plan.weights[size_t(s.weight)];
  const ConvParams& p = std::get<ConvParams>(s.params);
  const bool last = s.slice + 1 == s.slices;
  EXPECT_EQ(p.filters, l.conv().filters);
  EXPECT_EQ(w.filters, 0);
  EXPECT_EQ(w.channels, s.in.c);
  EXPECT_EQ(w.channel_begin, s.channel_begin);
  EXPECT_EQ(w.weight_elems, int64_t(p.filters) * s.in.c * p.size * p.size);
  EXPECT_EQ(w.bias_elems, last ? p.filters : 0);
  EXPECT_EQ(s.accumulate, s.slice > 0);
  EXPECT_EQ(p.activation, last ? l.conv().activation : Activation::kLinear);
  EXPECT_TRUE(s.copies.empty());
  EXPECT_EQ(s.output.buffer, plan.layer_out[size_t(s.layer)].buffer);
  EXPECT_EQ(s.output.c, l.out.c);
  const ViewRef src = s.packs.empty() ? s.inputs[0] : s.packs[0].first;
  EXPECT_EQ(src.c, s.in.c);
  if (s.slice > 0) {
    const Step& before = plan.steps[i - 1];
    EXPECT_EQ(before.channel_begin + before.in.c, s.channel_begin);
    const ViewRef prev = before.packs.empty() ? before.inputs[0] : before.packs[0].first;
    EXPECT_EQ(prev.buffer, src.buffer);
    EXPECT_EQ(prev.c_offset + prev.c, src.c_offset);
  } else {
    EXPECT_EQ(s.channel_begin, 0);
  }
  if (last) { EXPECT_EQ(s.channel_begin + s.in.c, l.in.c); }
  if (!s.packs.empty()) {
    const Buffer& b = plan.buffer(s.inputs[0]);
    EXPECT_EQ(s.packs[0].second.buffer, s.inputs[0].buffer);
    EXPECT_EQ(b.c, s.in.c) << "a scratch is the slice, packed";
    EXPECT_EQ(b.first_step, int(i));
    EXPECT_EQ(b.last_step, int(i));
  }
}

// The slice-specific invariants of a sliced plan, and memory safety of its arena.
void check_sliced(const NetworkDesc& net, const ExecutionPlan& plan, int64_t cap, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(plan.layer_step.size(), net.layers.size());
  int prev_layer = -1;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& s = plan.steps[i];
    EXPECT_EQ(s.index, int(i));
    EXPECT_GE(s.layer, prev_layer);
    if (s.layer != prev_layer) { EXPECT_EQ(plan.layer_step[size_t(s.layer)], int(i)); }
    prev_layer = s.layer;
    if (s.weight < 0) continue;
    const WeightBlob& w = plan.weights[size_t(s.weight)];
    EXPECT_EQ(w.step, int(i));
    EXPECT_EQ(w.layer, s.layer);
    EXPECT_LE(w.bytes, cap) << "step " << i << " (layer " << s.layer << ")";
    const ConvParams& p = std::get<ConvParams>(s.params);
    const LayerDesc& l = net.layers[size_t(s.layer)];
    if (s.slice < 0) {
      EXPECT_EQ(p.filters, l.conv().filters);
      EXPECT_EQ(w.filters + w.channels, 0);
      continue;
    }
    // Slices of one layer: consecutive steps covering every filter (channel) in order.
    const Step& first = plan.steps[size_t(plan.layer_step[size_t(s.layer)])];
    EXPECT_EQ(int(i) - first.index, s.slice);
    EXPECT_EQ(s.axis, first.axis);
    if (s.axis == SliceAxis::kChannels) check_channel_slice(plan, l, i);
    else check_filter_slice(plan, l, i);
    const ViewRef& out = plan.layer_out[size_t(s.layer)];
    for (const ViewRef& in : s.inputs) {
      const Buffer& b = plan.buffer(in);
      EXPECT_LE(b.first_step, int(i));
      EXPECT_GE(b.last_step, int(i)) << "the input of slice " << s.slice << " of layer " << s.layer << " died early";
    }
    const Buffer& ob = plan.buffer(out);
    EXPECT_LE(ob.first_step, first.index) << "layer " << s.layer << " output not live at its first slice";
  }
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer& a = plan.buffers[i];
    EXPECT_EQ(a.id, int(i));
    EXPECT_LE(a.offset + a.bytes, plan.arena_bytes);
    for (size_t j = i + 1; j < plan.buffers.size(); ++j) {
      const Buffer& b = plan.buffers[j];
      const bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
      const bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(live_together && overlap) << "b" << a.id << " and b" << b.id << " overlap while both live";
    }
  }
}

PlannerOptions nhwc_fp16() {
  PlannerOptions p;
  p.layout = Layout::kNHWC;
  p.activation_dtype = p.weight_dtype = DType::kF16;
  p.conv_strided_io = false;
  p.conv_over_concat = true;
  return p;
}

TEST(SlicePlan, EverySharedCfgInBothLayouts) {
  DLR_REQUIRE_SHARED_DIR();
  for (const char* rel : {"models/yolov4.cfg", "models/yolov4-tiny.cfg", "models/yolov3.cfg", "models/yolov4-csp.cfg",
                          "models/yolov7-tiny.cfg"}) {
    const std::string path = test::required_shared_file(rel);
    if (path.empty()) continue;
    auto net = parse_network_cfg(path);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    for (const PlannerOptions& o : {PlannerOptions{}, nhwc_fp16()}) {
      for (SliceAxis axis : {SliceAxis::kFilters, SliceAxis::kChannels}) {
        for (int64_t cap : {int64_t(1) << 20, int64_t(256) << 10}) {
          auto plan = build_plan(*net, o);
          ASSERT_TRUE(plan.ok());
          const int64_t total = plan->weight_bytes();
          ASSERT_TRUE(slice_plan(&*plan, SliceOptions{cap, 8, axis, {}}, path).ok());
          EXPECT_GT(plan->steps.size(), net->layers.size()) << rel;
          EXPECT_GE(plan->weight_bytes(), total);
          check_sliced(*net, *plan, cap,
                       std::string(rel) + (o.layout == Layout::kNHWC ? " nhwc " : " nchw ") +
                           (axis == SliceAxis::kChannels ? "channels " : "filters ") + std::to_string(cap));
        }
      }
    }
  }
}

// Per-layer axes (SliceOptions::layer_axis, chosen at open from kernel times): random
// mixes keep every slice invariant and the arena safe, and each layer is cut its way.
TEST(SlicePlan, MixedAxesPerLayer) {
  const std::string path = test::required_shared_file("models/yolov4.cfg");
  if (path.empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  auto net = parse_network_cfg(path);
  ASSERT_TRUE(net.ok());
  std::mt19937 rng(31);
  for (const PlannerOptions& o : {PlannerOptions{}, nhwc_fp16()}) {
    for (int trial = 0; trial < 4; ++trial) {
      SliceOptions so{int64_t(1) << 20, 8, rng() % 2 ? SliceAxis::kFilters : SliceAxis::kChannels, {}};
      for (size_t l = 0; l < net->layers.size(); ++l)
        if (rng() % 2) so.layer_axis[int(l)] = rng() % 2 ? SliceAxis::kFilters : SliceAxis::kChannels;
      auto plan = build_plan(*net, o);
      ASSERT_TRUE(plan.ok());
      ASSERT_TRUE(slice_plan(&*plan, so, path).ok());
      check_sliced(*net, *plan, so.max_blob_bytes, "mixed trial " + std::to_string(trial));
      int by[2] = {0, 0};
      for (const Step& st : plan->steps) {
        if (st.slice != 0) continue;
        const auto it = so.layer_axis.find(st.layer);
        const bool concat = st.inputs.size() != 1;
        const SliceAxis want = concat ? SliceAxis::kFilters : it != so.layer_axis.end() ? it->second : so.axis;
        EXPECT_EQ(st.axis, want) << "layer " << st.layer;
        ++by[int(st.axis)];
      }
      EXPECT_GT(by[0], 0);
      EXPECT_GT(by[1], 0);
    }
  }
}

TEST(SlicePlan, NothingAboveTheSlotLeavesThePlanAlone) {
  const std::string path = test::source_file("models/yolov4-tiny.cfg");
  auto net = parse_network_cfg(path);
  ASSERT_TRUE(net.ok());
  auto a = build_plan(*net, PlannerOptions{});
  auto b = build_plan(*net, PlannerOptions{});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(slice_plan(&*b, SliceOptions{int64_t(1) << 30, 8, SliceAxis::kFilters, {}}, path).ok());
  EXPECT_EQ(a->to_text(), b->to_text());
  ASSERT_TRUE(slice_plan(&*b, SliceOptions{0, 8, SliceAxis::kFilters, {}}, path).ok());
  EXPECT_EQ(a->to_text(), b->to_text());
}

TEST(SlicePlan, AFilterLargerThanTheSlotIsRefusedNamingTheLayer) {
  const std::string path = test::source_file("models/yolov4-tiny.cfg");
  auto net = parse_network_cfg(path);
  ASSERT_TRUE(net.ok());
  for (SliceAxis axis : {SliceAxis::kFilters, SliceAxis::kChannels}) {
    auto plan = build_plan(*net, PlannerOptions{});
    ASSERT_TRUE(plan.ok());
    const Status s = slice_plan(&*plan, SliceOptions{1024, 8, axis, {}}, path);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("yolov4-tiny.cfg: layer "), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(axis == SliceAxis::kChannels ? "one input channel's" : "one filter's"),
              std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("expected a larger slot_bytes"), std::string::npos) << s.message();
  }
}

TEST(SlicePlan, AGroupedConvAboveTheSlotIsRefusedNamingTheLayer) {
  DLR_REQUIRE_SHARED_DIR();
  const std::string path = test::required_shared_file("models/darknet-cfg/csresnext50-panet-spp.cfg");
  ASSERT_FALSE(path.empty());
  auto net = parse_network_cfg(path);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  int64_t grouped = 0;  // the largest blob of a grouped conv
  auto plan = build_plan(*net, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  for (const Step& st : plan->steps)
    if (st.weight >= 0 && std::get<ConvParams>(st.params).groups > 1)
      grouped = std::max(grouped, plan->weights[size_t(st.weight)].bytes);
  ASSERT_GT(grouped, 512);
  const Status s = slice_plan(&*plan, SliceOptions{grouped - 256, 8, SliceAxis::kChannels, {}}, path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("csresnext50-panet-spp.cfg: layer "), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("a grouped convolution"), std::string::npos) << s.message();
}

// Stream plans of sliced networks, at random slots and budgets: the simulator's checks
// (no unit overwrites a blob before its reader ends, every blob lands before its reader)
// hold, and the pool is as small as two of the largest slice allows.
TEST(SlicePlan, StreamPlansOfSlicedNetworksPassTheSimulatorsChecks) {
  DLR_REQUIRE_SHARED_DIR();
  const std::string path = test::required_shared_file("models/yolov4.cfg");
  ASSERT_FALSE(path.empty());
  auto net = parse_network_cfg(path);
  ASSERT_TRUE(net.ok());
  std::mt19937 rng(11);
  auto h100 = CopyProfile::builtin("h100");
  ASSERT_TRUE(h100.ok());
  const CopyProfile& profile = *h100;
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t cap = (int64_t(1) << 20) * (1 + int64_t(rng() % 8));
    auto plan = build_plan(*net, nhwc_fp16());
    ASSERT_TRUE(plan.ok());
    const SliceAxis axis = trial % 2 ? SliceAxis::kChannels : SliceAxis::kFilters;
    ASSERT_TRUE(slice_plan(&*plan, SliceOptions{cap, 8, axis, {}}, path).ok());
    const std::vector<double> ms = model_layer_ms(*net, *plan, 200e3, 2000, 3);
    StreamOptions so;
    so.budget_bytes = 0;  // the minimal pool
    if (trial % 3 == 1)
      so.budget_bytes = std::max(plan->weight_bytes() * int64_t(5 + rng() % 40) / 100,
                                 align_up(2 * cap, int64_t(2) << 20) + (int64_t(2) << 20));
    if (trial % 3 == 2) so.layout = PoolLayout::kSlots;
    auto sp = plan_streaming(*plan, profile, so);
    ASSERT_TRUE(sp.ok()) << sp.status().to_string() << " cap " << cap;
    EXPECT_LE(sp->slot_bytes, cap);
    if (so.budget_bytes == 0) { EXPECT_LE(sp->pool_bytes, std::max<int64_t>(4 * cap, int64_t(4) << 20)); }
    const SimResult r = simulate(*plan, *sp, profile, ms);
    EXPECT_TRUE(r.violations.empty()) << (r.violations.empty() ? "" : r.violations[0]) << " cap " << cap;
    EXPECT_GT(r.latency_ms, 0);
  }
}

// Output-channel slices compute every output element from the same products, but not
// always in the same order: the conv's tiles (filter chunks, kernels/cpu/conv2d.cpp) and
// Eigen's blocking and remainder kernels follow the slice's filter count, and some
// outputs are summed with split accumulators in one run and in sequence in the other
// (measured 3.5e-7 of each head's largest value at 1 MiB slots everywhere; at 128 KiB
// slots 4.3e-6 on a Xeon with 48 KiB L1 and 2 MiB L2 per core, within 1e-6 on the
// machines before it). Input-channel slices split every sum into one partial sum per
// slice, rounded to fp32 as each is added, where the BLAS splits it at its own blocks of
// k: other roundings, which the layers after carry on (1.7e-6 at 1 MiB, 4.0e-6 at 128 KiB
// on that Xeon). Both within 5e-6 of the unsliced run; bit-identical where no layer needs
// slicing.
class SlicedCpu : public ::testing::TestWithParam<SliceBy> {};

INSTANTIATE_TEST_SUITE_P(Axes, SlicedCpu, ::testing::Values(SliceBy::kFilters, SliceBy::kChannels),
                         [](const ::testing::TestParamInfo<SliceBy>& i) { return std::string(slice_by_name(i.param)); });

TEST_P(SlicedCpu, FilterSlicesBitIdenticalChannelSlicesWithinFiveMillionths) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  SessionOptions o;
  o.width = o.height = 128;
  auto ref = Session::open(cfg, weights, o);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  const std::vector<float> input = test::random_input(1, 3, 128, 128, 5);
  const auto want = test::network_heads(**ref, input);
  o.slice_by = GetParam();
  for (int64_t slot : {int64_t(64) << 20, int64_t(1) << 20, int64_t(128) << 10}) {
    o.slot_bytes = slot;
    auto s = Session::open(cfg, weights, o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    const ExecutionPlan& p = (*s)->plan();
    for (const WeightBlob& w : p.weights) EXPECT_LE(w.bytes, slot);
    const bool sliced = p.steps.size() > (*ref)->plan().steps.size();
    EXPECT_EQ(sliced, slot < (int64_t(64) << 20));
    const auto got = test::network_heads(**s, input);
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    for (size_t h = 0; h < got.size(); ++h) {
      ASSERT_EQ(got[h].size(), want[h].size());
      double peak = 1e-30, diff = 0;
      for (size_t i = 0; i < got[h].size(); ++i) {
        peak = std::max(peak, double(std::fabs(want[h][i])));
        diff = std::max(diff, double(std::fabs(got[h][i] - want[h][i])));
      }
      worst = std::max(worst, diff / peak);
      if (!sliced) {
        EXPECT_EQ(got[h], want[h]) << "head " << h;
      }
    }
    std::printf("%s, slot %lld: %zu steps, worst difference %.3g of the head's largest value\n",
                slice_by_name(o.slice_by), (long long)slot, p.steps.size(), worst);
    for (const Step& st : p.steps) {
      if (st.slice >= 0) {
        EXPECT_EQ(st.axis == SliceAxis::kChannels, o.slice_by == SliceBy::kChannels);
      }
    }
    EXPECT_LE(worst, 5e-6) << "slot " << slot;
    // Filter slices: each output is the same sum in the same order (whole 4-filter panels
    // of Eigen's GEMM, one thread per GEMM whatever the team): the same bits. (OpenBLAS,
    // opt-in, has other panels: within 1e-6 there.)
#if defined(DLR_TEST_EIGEN_GEMM)
    if (o.slice_by == SliceBy::kFilters) {
      for (size_t h = 0; h < got.size(); ++h) EXPECT_EQ(got[h], want[h]) << "slot " << slot << " head " << h;
    }
#else
    if (o.slice_by == SliceBy::kFilters) {
      EXPECT_LE(worst, 1e-6) << "slot " << slot;
    }
#endif
    int slice_rows = 0;
    for (const LayerTiming& t : (*s)->engine().layer_timings()) slice_rows += t.slice >= 0 ? 1 : 0;
    EXPECT_EQ(slice_rows > 0, sliced);
  }
}

// From storage the prepared file holds the slices (format version 4), read into a
// staging area no longer sized by the largest layer: outputs bit-identical to the same sliced
// plan from host memory, in less host memory than whole layers need; a file prepared
// for other slices is refused naming slot_bytes.
TEST_P(SlicedCpu, FromStorageBitIdenticalToHostInLessStaging) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  const std::vector<float> input = test::random_input(1, 3, 128, 128, 8);
  SessionOptions host;
  host.width = host.height = 128;
  host.slot_bytes = 256 << 10;
  host.slice_by = GetParam();
  auto ref = Session::open(cfg, weights, host);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  const auto want = test::network_heads(**ref, input);
  SessionOptions o = host;
  o.weights_from = WeightsFrom::kStorage;
  o.prepared_path = test::temp_dir() + "/tiny-sliced-" + slice_by_name(o.slice_by) + ".dlrw";
  std::remove(o.prepared_path.c_str());
  SessionOptions whole = o;
  whole.slot_bytes = 0;
  whole.prepared_path = test::temp_dir() + "/tiny-whole.dlrw";
  auto w = Session::open(cfg, weights, whole);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  auto s = Session::open(cfg, weights, o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const int64_t staging = (*s)->model().reads.staging_bytes, whole_staging = (*w)->model().reads.staging_bytes;
  std::printf("staging: %lld bytes sliced (256 KiB slots), %lld whole layers\n", (long long)staging,
              (long long)whole_staging);
  // The CPU reads in units of up to 4 MiB (the whole largest blob when larger) and
  // stages two of them: slices shrink the staging to two units.
  EXPECT_LE(staging, whole_staging / 2);
  for (int run = 0; run < 2; ++run) EXPECT_TRUE(test::same_bits(test::network_heads(**s, input), want)) << run;
  SessionOptions other = o;
  other.slot_bytes = 512 << 10;
  other.prepared_path.clear();
  auto refused = Session::open(cfg, o.prepared_path, other);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("slot_bytes"), std::string::npos) << refused.status().message();
  // The same slot cut the other way: the same number of blobs, other ranges.
  SessionOptions across = o;
  across.slice_by = o.slice_by == SliceBy::kChannels ? SliceBy::kFilters : SliceBy::kChannels;
  across.prepared_path.clear();
  auto crossed = Session::open(cfg, o.prepared_path, across);
  ASSERT_FALSE(crossed.ok());
  EXPECT_NE(crossed.status().message().find("slice"), std::string::npos) << crossed.status().message();
}

}  // namespace
}  // namespace dlr
