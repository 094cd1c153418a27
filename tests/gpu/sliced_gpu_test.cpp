// Sliced layers on the GPU (runtime/compile/slicing.h), cut by filters and by input
// channels: a sliced network matches the unsliced one within the precision's tolerance
// (cuDNN may pick other algorithms for a slice's shape; channel slices round each
// partial sum), in NCHW fp32 (slices write, or read, channel views of the buffers) and
// NHWC fp16 (filter slices write a scratch that a copy moves into place; channel slices
// read a packed copy of their channels); streamed with slots smaller than the largest
// layer it is bit-identical to the same sliced plan preloaded (the same kernels on
// weights that arrive later), down to a pool of a few MiB.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "runtime/compile/compile.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/session_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr {
namespace {

struct Heads {
  std::vector<std::vector<float>> out;
  int64_t pool_bytes = 0;
  int64_t largest_blob = 0;
  size_t steps = 0;
  std::map<int, SliceAxis> axes;  // per sliced layer
  std::vector<std::string> notes;
  double slice_axes_ms = 0;
  bool ok = false;
};

Heads run(const std::string& cfg, const std::string& weights, const SessionOptions& o,
          const std::vector<float>& input) {
  Heads h;
  auto s = Session::open(cfg, weights, o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return h;
  h.out = test::network_heads(**s, input);  // its checks fail the test on a bad run
  const CompiledModel& m = (*s)->model();
  h.pool_bytes = m.streaming ? m.stream.pool_bytes : 0;
  for (const WeightBlob& w : m.plan.weights) h.largest_blob = std::max(h.largest_blob, w.bytes);
  h.steps = m.plan.steps.size();
  for (const Step& st : m.plan.steps)
    if (st.slice == 0) h.axes[st.layer] = st.axis;
  h.notes = m.notes;
  h.slice_axes_ms = (*s)->open_timing().slice_axes_ms;
  h.ok = !h.out.empty();
  return h;
}

SessionOptions cuda(Precision p, int size) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = p;
  o.width = o.height = size;
  return o;
}

class SlicedGpu : public ::testing::TestWithParam<SliceBy> {};

INSTANTIATE_TEST_SUITE_P(Axes, SlicedGpu, ::testing::Values(SliceBy::kFilters, SliceBy::kChannels),
                         [](const ::testing::TestParamInfo<SliceBy>& i) { return std::string(slice_by_name(i.param)); });

TEST_P(SlicedGpu, MatchesUnslicedAndStreamsBitIdenticalToItsPreload) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  int ran = 0;
  for (const char* rel : {"models/yolov4-tiny.cfg", "models/yolov4.cfg"}) {
    const std::string cfg = test::required_shared_file(rel);
    if (cfg.empty()) continue;
    const std::string weights = test::synthetic_weights(cfg);
    ASSERT_FALSE(weights.empty());
    const bool big = std::string(rel).find("yolov4.cfg") != std::string::npos;
    const int size = big ? 416 : 320;
    const std::vector<float> input = test::random_input(1, 3, size, size, 3);
    // The reference: the unsliced fp32 run. A sliced fp32 run may differ from it by the
    // algorithm cuDNN picks per slice shape (Winograd vs implicit GEMM: ~1e-4 measured);
    // a sliced fp16 run's error against it stays within 2.5 x the unsliced fp16 run's.
    const Heads ref = run(cfg, weights, cuda(Precision::kFP32, size), input);
    ASSERT_TRUE(ref.ok);
    for (Precision p : {Precision::kFP32, Precision::kFP16}) {
      const Heads whole = p == Precision::kFP32 ? ref : run(cfg, weights, cuda(p, size), input);
      ASSERT_TRUE(whole.ok);
      const double whole_err = test::worst_relative(whole.out, ref.out, 1e-6);
      for (int64_t slot : {int64_t(1) << 20, int64_t(256) << 10}) {
        SessionOptions o = cuda(p, size);
        o.slot_bytes = slot;
        o.slice_by = GetParam();
        const Heads pre = run(cfg, weights, o, input);
        ASSERT_TRUE(pre.ok);
        EXPECT_GT(pre.steps, whole.steps);
        EXPECT_LE(pre.largest_blob, slot);
        const double err = test::worst_relative(pre.out, ref.out, 1e-6);
        std::printf("%s %s by %s, slot %lld KiB: %zu steps, error vs unsliced fp32 %.3g (unsliced %s %.3g)\n", rel,
                    precision_name(p), slice_by_name(o.slice_by), (long long)(slot >> 10), pre.steps, err,
                    precision_name(p), whole_err);
        if (p == Precision::kFP32) {
          EXPECT_LE(err, 5e-4) << rel << " slot " << slot;
        } else {
          EXPECT_LE(err, 2.5 * whole_err + 1e-3) << rel << " " << precision_name(p) << " slot " << slot;
        }
        for (const char* pool : {"ring", "slots"}) {
          o.mode = WeightMode::kStream;
          o.weight_budget = WeightBudget::min();
          o.stage_whole = false;  // the same slices as the preload (WholeStagingGpu keeps layers whole)
          EXPECT_TRUE(parse_pool_layout(pool, &o.weight_pool));
          const Heads st = run(cfg, weights, o, input);
          ASSERT_TRUE(st.ok);
          EXPECT_GT(st.pool_bytes, 0);
          EXPECT_LE(st.pool_bytes, std::max<int64_t>(4 * slot, int64_t(4) << 20)) << rel << " " << pool;
          for (size_t k = 0; k < pre.out.size(); ++k)
            ASSERT_EQ(st.out[k], pre.out[k]) << rel << " " << precision_name(p) << " slot " << slot << " " << pool
                                             << " head " << k;
        }
        ++ran;
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "shared models not found";
}

// Whether a file under `dir`/kernel-times holds `text`.
bool cache_holds(const std::string& dir, const std::string& text) {
  DIR* d = opendir((dir + "/kernel-times").c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 5 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    std::ifstream f(dir + "/kernel-times/" + name);
    const std::string body((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    found = found || body.find(text) != std::string::npos;
  }
  closedir(d);
  return found;
}

// slice_by auto on a GPU: each sliced layer cut along the axis chosen from times
// measured at open; the outputs stay within the fp16 tolerance, and the choice is kept
// with the kernel times: a later open of the same model and options reads it back, cuts
// alike and computes bit-identical outputs.
TEST(SlicedGpuAuto, AxisPerLayerChosenAtOpenAndKept) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const std::string cfg = test::required_shared_file("models/yolov4.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared models not found";
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  const std::string cache = test::temp_dir() + "/cache-auto-axes";
  ASSERT_EQ(setenv("DLR_CACHE_DIR", cache.c_str(), 1), 0);
  const int size = 416;
  const std::vector<float> input = test::random_input(1, 3, size, size, 5);
  const Heads ref = run(cfg, weights, cuda(Precision::kFP32, size), input);
  const Heads whole = run(cfg, weights, cuda(Precision::kFP16, size), input);
  SessionOptions o = cuda(Precision::kFP16, size);
  o.slot_bytes = int64_t(1) << 20;
  o.mode = WeightMode::kStream;
  o.weight_budget = WeightBudget::min();
  o.cache_kernel_times = true;  // off by default in the internal options (dlrun turns it on)
  o.stage_whole = false;        // every layer above the slot sliced, so that it has an axis
  const Heads first = run(cfg, weights, o, input);
  const bool kept = cache_holds(cache, "\"slice_axes\"");
  const Heads again = run(cfg, weights, o, input);
  unsetenv("DLR_CACHE_DIR");
  ASSERT_TRUE(ref.ok && whole.ok && first.ok && again.ok);
  bool noted = false;
  for (const std::string& n : first.notes) noted = noted || n.find("the axis of each layer") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_TRUE(kept) << "the choice is kept in the kernel-times cache";
  int by[2] = {0, 0};
  for (const auto& [layer, axis] : first.axes) ++by[int(axis)];
  std::printf("yolov4 fp16 @%d, 1 MiB slots, auto: %d layers by filters, %d by channels; choice %.0f ms at the first "
              "open, %.0f ms at the second\n",
              size, by[0], by[1], first.slice_axes_ms, again.slice_axes_ms);
  EXPECT_GT(by[0] + by[1], 10);
  EXPECT_EQ(again.axes, first.axes) << "the second open reads the choice back";
  EXPECT_LE(test::worst_relative(first.out, ref.out, 1e-6),
            2.5 * test::worst_relative(whole.out, ref.out, 1e-6) + 1e-3);
  for (size_t k = 0; k < first.out.size(); ++k) ASSERT_EQ(again.out[k], first.out[k]) << "head " << k;
}

// Layers above the slot kept whole (runtime/compile/whole_staging.h): streamed through a
// pool smaller than the largest layer, with the large layers copied whole into idle
// activation bytes. Where every layer above the slot stays whole the plan's kernels are
// the unsliced plan's and the outputs are bit-identical to its preload; where some stay
// sliced they are within the slicing tolerance.
TEST(WholeStagingGpu, LayersKeptWholeStreamLikeTheirPreload) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const std::string cfg = test::required_shared_file("models/yolov4.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared models not found";
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  const int size = 416;
  const std::vector<float> input = test::random_input(1, 3, size, size, 7);
  for (Precision p : {Precision::kFP32, Precision::kFP16}) {
    SessionOptions o = cuda(p, size);
    o.layout = 1;  // NHWC for both runs (strict fp32's auto layout differs between preload and stream)
    const Heads pre = run(cfg, weights, o, input);
    ASSERT_TRUE(pre.ok);
    o.mode = WeightMode::kStream;
    o.weight_budget = WeightBudget::min();
    o.slot_bytes = p == Precision::kFP32 ? 4 * (int64_t(1) << 20) : 2 * (int64_t(1) << 20);
    const Heads st = run(cfg, weights, o, input);
    ASSERT_TRUE(st.ok);
    bool noted = false;
    for (const std::string& n : st.notes) noted = noted || n.find("kept whole") != std::string::npos;
    EXPECT_TRUE(noted) << precision_name(p);
    EXPECT_LE(st.pool_bytes, 4 * o.slot_bytes);
    EXPECT_GT(st.largest_blob, o.slot_bytes) << "a layer above the slot kept whole";
    const double err = test::worst_relative(st.out, pre.out, 1e-6);
    std::printf("yolov4 @%d %s, %lld MiB slots: %zu steps (unsliced %zu), %lld KiB pool, error vs preload %.3g\n",
                size, precision_name(p), (long long)(o.slot_bytes >> 20), st.steps, pre.steps,
                (long long)(st.pool_bytes >> 10), err);
    if (st.steps == pre.steps) {
      for (size_t k = 0; k < pre.out.size(); ++k) ASSERT_EQ(st.out[k], pre.out[k]) << precision_name(p) << " head " << k;
    } else {
      EXPECT_LE(err, p == Precision::kFP32 ? 5e-4 : 2e-2) << precision_name(p);
    }
  }
}

}  // namespace
}  // namespace dlr
