// The slicing axis per layer (runtime/compile/slice_choice.h): the choice from two timed
// variants, the chosen plan's kernel times put together from theirs, the note, the text
// form the kernel-times cache keeps, and compile() with per-layer axes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"
#include "runtime/cache/kernel_times_cache.h"
#include "runtime/compile/compile.h"
#include "runtime/compile/slice_choice.h"
#include "tests/common/test_paths.h"
#include "tests/common/weight_fixtures.h"

namespace dlr {
namespace {

Target gpu_target() { return test::h100_like_target(); }

SessionOptions sliced_options(SliceBy by) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.mode = WeightMode::kStream;
  o.slot_bytes = int64_t(1) << 20;
  o.slice_by = by;
  o.stage_whole = false;  // every layer above the slot sliced (whole_staging_test.cpp keeps some whole)
  return o;
}

struct Variants {
  NetworkDesc net;
  CompiledModel channels, filters;
  std::vector<double> channels_ms, filters_ms;
};

// A made-up kernel time: layers whose index is a multiple of 3 run faster by filters,
// the others by channels; every step of a layer costs the same.
double made_up_ms(const Step& st) {
  const bool by_filters = st.slices > 0 && st.axis == SliceAxis::kFilters;
  const bool filters_win = st.layer % 3 == 0;
  const double per_layer = 0.1 + 0.001 * st.layer + (by_filters == filters_win ? 0.0 : 0.05);
  return st.slices > 0 ? per_layer / st.slices : per_layer;
}

// yolov4 (shared data): many layers above 1 MiB in fp16.
#define YOLOV4_OR_SKIP()                                                   \
  const std::string cfg = test::required_shared_file("models/yolov4.cfg"); \
  if (cfg.empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)"

Variants variants(const std::string& cfg) {
  Variants v;
  Expected<NetworkDesc> net = parse_network_cfg(cfg);
  EXPECT_TRUE(net.ok()) << net.status().to_string();
  v.net = *net;
  Expected<CompiledModel> a = compile(v.net, gpu_target(), sliced_options(SliceBy::kChannels));
  Expected<CompiledModel> b = compile(v.net, gpu_target(), sliced_options(SliceBy::kFilters));
  EXPECT_TRUE(a.ok() && b.ok());
  v.channels = *a;
  v.filters = *b;
  for (const Step& st : v.channels.plan.steps) v.channels_ms.push_back(made_up_ms(st));
  for (const Step& st : v.filters.plan.steps) v.filters_ms.push_back(made_up_ms(st));
  return v;
}

TEST(SliceChoice, EachSlicedLayerTakesTheFasterAxis) {
  YOLOV4_OR_SKIP();
  const Variants v = variants(cfg);
  Expected<std::map<int, SliceAxis>> axes =
      choose_slice_axes({&v.channels.plan, &v.channels_ms}, {&v.filters.plan, &v.filters_ms});
  ASSERT_TRUE(axes.ok()) << axes.status().to_string();
  std::map<int, SliceAxis> expected;
  for (const Step& st : v.channels.plan.steps)
    if (st.slices > 0 && st.axis == SliceAxis::kChannels)
      expected[st.layer] = st.layer % 3 == 0 ? SliceAxis::kFilters : SliceAxis::kChannels;
  ASSERT_GT(expected.size(), 10u) << "yolov4 fp16 at 1 MiB slots slices many layers";
  EXPECT_EQ(*axes, expected);
}

TEST(SliceChoice, TheChosenPlanGetsEachStepsTimeFromItsVariant) {
  YOLOV4_OR_SKIP();
  const Variants v = variants(cfg);
  const TimedPlan a{&v.channels.plan, &v.channels_ms}, b{&v.filters.plan, &v.filters_ms};
  Expected<std::map<int, SliceAxis>> axes = choose_slice_axes(a, b);
  ASSERT_TRUE(axes.ok());
  CompileInputs inputs;
  inputs.slice_axes = *axes;
  Expected<CompiledModel> mixed = compile(v.net, gpu_target(), sliced_options(SliceBy::kAuto), inputs);
  ASSERT_TRUE(mixed.ok()) << mixed.status().to_string();
  int by_filters = 0, by_channels = 0;
  for (const Step& st : mixed->plan.steps) {
    if (st.slices == 0) continue;
    if (st.slice == 0) ++(st.axis == SliceAxis::kFilters ? by_filters : by_channels);
    const auto it = axes->find(st.layer);
    if (it == axes->end()) {
      EXPECT_EQ(st.axis, SliceAxis::kFilters) << "layer " << st.layer << ": a conv over a concatenation";
      continue;
    }
    EXPECT_EQ(st.axis, it->second) << "layer " << st.layer;
  }
  EXPECT_GT(by_filters, 0);
  EXPECT_GT(by_channels, 0);
  EXPECT_NE(slice_axes_note(mixed->plan).find(std::to_string(by_channels) + " layers by input channels, " +
                                                std::to_string(by_filters) + " by filters"),
            std::string::npos)
      << slice_axes_note(mixed->plan);
  bool noted = false;
  for (const std::string& n : mixed->notes) noted = noted || n == slice_axes_note(mixed->plan);
  EXPECT_TRUE(noted) << "compile() notes the per-layer choice";
  Expected<std::vector<double>> ms = mixed_step_ms(mixed->plan, a, b);
  ASSERT_TRUE(ms.ok()) << ms.status().to_string();
  ASSERT_EQ(ms->size(), mixed->plan.steps.size());
  double total = 0, best = 0;
  for (size_t i = 0; i < ms->size(); ++i) {
    EXPECT_DOUBLE_EQ((*ms)[i], made_up_ms(mixed->plan.steps[i])) << "step " << i;
    total += (*ms)[i];
  }
  // The chosen plan is the faster variant of every layer: no slower than either.
  double ta = 0, tb = 0;
  for (double t : v.channels_ms) ta += t;
  for (double t : v.filters_ms) tb += t;
  best = std::min(ta, tb);
  EXPECT_LT(total, best - 1e-9);
}

TEST(SliceChoice, TimesThatDoNotFitTheirPlanAreRefused) {
  YOLOV4_OR_SKIP();
  const Variants v = variants(cfg);
  std::vector<double> short_ms(v.channels_ms.begin(), v.channels_ms.end() - 1);
  Expected<std::map<int, SliceAxis>> axes =
      choose_slice_axes({&v.channels.plan, &short_ms}, {&v.filters.plan, &v.filters_ms});
  ASSERT_FALSE(axes.ok());
  EXPECT_NE(axes.status().message().find("channels variant's kernel times do not match"), std::string::npos);
  // A plan sliced at another slot has steps the variants never ran.
  SessionOptions other = sliced_options(SliceBy::kChannels);
  other.slot_bytes = int64_t(256) << 10;
  Expected<CompiledModel> finer = compile(v.net, gpu_target(), other);
  ASSERT_TRUE(finer.ok());
  Expected<std::vector<double>> ms =
      mixed_step_ms(finer->plan, {&v.channels.plan, &v.channels_ms}, {&v.filters.plan, &v.filters_ms});
  ASSERT_FALSE(ms.ok());
  EXPECT_NE(ms.status().message().find("has no measured counterpart"), std::string::npos) << ms.status().message();
}

TEST(SliceChoice, CandidatesArePerLayerThenEachUniformCut) {
  const std::map<int, SliceAxis> mixed{{3, SliceAxis::kFilters}, {5, SliceAxis::kChannels}};
  const auto c = slice_axis_candidates(mixed);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], mixed);
  EXPECT_EQ(c[1], (std::map<int, SliceAxis>{{3, SliceAxis::kChannels}, {5, SliceAxis::kChannels}}));
  EXPECT_EQ(c[2], (std::map<int, SliceAxis>{{3, SliceAxis::kFilters}, {5, SliceAxis::kFilters}}));
  const std::map<int, SliceAxis> uniform{{3, SliceAxis::kChannels}, {5, SliceAxis::kChannels}};
  const auto u = slice_axis_candidates(uniform);
  ASSERT_EQ(u.size(), 2u) << "the per-layer choice that is all channels is not predicted twice";
  EXPECT_EQ(u[0], uniform);
  EXPECT_EQ(u[1].at(3), SliceAxis::kFilters);
}

// The candidates are compiled with their kernel times (the simulator predicts each); the
// predicted latency follows the times it was given.
TEST(SliceChoice, EachCandidateCompilesWithItsTimesAndIsPredicted) {
  YOLOV4_OR_SKIP();
  const Variants v = variants(cfg);
  const TimedPlan a{&v.channels.plan, &v.channels_ms}, b{&v.filters.plan, &v.filters_ms};
  Expected<std::map<int, SliceAxis>> axes = choose_slice_axes(a, b);
  ASSERT_TRUE(axes.ok());
  SessionOptions o = sliced_options(SliceBy::kAuto);
  o.weight_budget = WeightBudget::min();
  for (const auto& cand : slice_axis_candidates(*axes)) {
    CompileInputs inputs;
    inputs.slice_axes = cand;
    Expected<CompiledModel> m = compile(v.net, gpu_target(), o, inputs);
    ASSERT_TRUE(m.ok());
    Expected<std::vector<double>> ms = mixed_step_ms(m->plan, a, b);
    ASSERT_TRUE(ms.ok()) << ms.status().to_string();
    inputs.layer_ms = *ms;
    m = compile(v.net, gpu_target(), o, inputs);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    double sum = 0;  // the kernels that run (simulate() gives a no-op step without copies no time)
    for (const Step& st : m->plan.steps)
      if (!st.no_op || !st.copies.empty()) sum += (*ms)[size_t(st.index)];
    EXPECT_GE(m->predicted_ms, sum * (1 - 1e-9)) << "a streamed plan is never predicted below its kernels";
  }
}

TEST(SliceChoice, TextRoundTripAndBadTokens) {
  const std::map<int, SliceAxis> axes{{3, SliceAxis::kFilters}, {105, SliceAxis::kChannels}};
  EXPECT_EQ(slice_axes_to_text(axes), "3:filters 105:channels");
  Expected<std::map<int, SliceAxis>> back = slice_axes_from_text(slice_axes_to_text(axes));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, axes);
  EXPECT_TRUE(slice_axes_from_text("")->empty());
  for (const char* bad : {"3:rows", "x:filters", "3filters", "-1:filters", "99999999:filters", "3:filters 3:channels"}) {
    Expected<std::map<int, SliceAxis>> r = slice_axes_from_text(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_NE(slice_axes_from_text("3:rows").status().message().find("'3:rows'"), std::string::npos);
}

TEST(SliceChoice, KeptBesideTheKernelTimes) {
  YOLOV4_OR_SKIP();
  ASSERT_EQ(setenv("DLR_CACHE_DIR", (test::temp_dir() + "/cache-axes").c_str(), 1), 0);
  const Variants v = variants(cfg);
  const std::map<int, SliceAxis> axes{{3, SliceAxis::kFilters}, {105, SliceAxis::kChannels}};
  std::map<int, SliceAxis> loaded;
  EXPECT_FALSE(save_slice_axes(v.channels, axes).ok()) << "needs the kernel times first";
  EXPECT_FALSE(load_slice_axes(v.channels, &loaded));
  ASSERT_TRUE(save_kernel_times(v.channels, v.channels_ms).ok());
  ASSERT_TRUE(save_slice_axes(v.channels, axes).ok());
  ASSERT_TRUE(load_slice_axes(v.channels, &loaded));
  EXPECT_EQ(loaded, axes);
  EXPECT_EQ(load_kernel_times(v.channels), v.channels_ms) << "the times stay";
  EXPECT_FALSE(load_slice_axes(v.filters, &loaded)) << "another plan, another file";
  // A damaged choice is not trusted.
  Expected<std::string> path = kernel_times_path(v.channels);
  ASSERT_TRUE(path.ok());
  nlohmann::json doc = nlohmann::json::parse(std::ifstream(*path));
  for (const char* bad : {"3:rows", "3:filters 3:channels", "x"}) {
    doc["slice_axes"] = bad;
    std::ofstream(*path) << doc.dump();
    EXPECT_FALSE(load_slice_axes(v.channels, &loaded)) << bad;
  }
  doc["slice_axes"] = 7;
  std::ofstream(*path) << doc.dump();
  EXPECT_FALSE(load_slice_axes(v.channels, &loaded)) << "not a string";
  ASSERT_TRUE(save_kernel_times(v.channels, v.channels_ms).ok());
  EXPECT_FALSE(load_slice_axes(v.channels, &loaded)) << "times measured again drop the choice";
  unsetenv("DLR_CACHE_DIR");
}

}  // namespace
}  // namespace dlr
