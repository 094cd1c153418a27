// The simulator's expansion stage (SimOptions::expand_ms): int8 weights expanded on a
// stage of their own, a batch per expansion group split per copy that lands its weights,
// each after the group before has reached its first step and after its copy; the lower
// bound over the kernels alone (BoundModel::expand_ms) below every plan simulated with the
// stage; compile() with the option on and off.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "runtime/compile/compile.h"
#include "runtime/compile/dequant_buffers.h"
#include "runtime/streaming/lower_bound.h"
#include "runtime/streaming/residency.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"
#include "tests/common/test_paths.h"
#include "tests/runtime/stream_fixtures.h"
#include "tests/runtime/yolov4_fixture.h"

namespace dlr {
namespace {

using test::fake_plan;
using test::h100_like;
using test::kMiB;

// Every conv of `plan` expands int8 weights; group g holds convs [g * per_group, ...).
void mark_int8(ExecutionPlan* plan, int per_group) {
  int k = 0;
  for (Step& st : plan->steps)
    if (st.weight >= 0) {
      st.dequant = k;
      st.dequant_group = k / per_group;
      ++k;
    }
}

StreamPlan resident_plan(const ExecutionPlan& plan) {
  StreamOptions o;
  o.budget_bytes = plan.weight_bytes();
  o.layout = PoolLayout::kRing;
  o.ring_granularity = 2 * kMiB;
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? *s : StreamPlan();
}

SimOptions no_launch_cost() {
  SimOptions so;
  so.launch_us = 0;
  return so;
}

TEST(ExpansionStage, EntriesAreTheInt8StepsInOrderWithTheirGroups) {
  // Five convs, the second and fourth not int8: entries 0..2 are steps 0, 2, 4; groups
  // of two entries start at entries 0 and 2.
  ExecutionPlan plan = fake_plan(std::vector<int64_t>(5, kMiB), nullptr);
  int k = 0;
  for (Step& st : plan.steps) {
    if (st.index == 1 || st.index == 3) continue;
    st.dequant = k;
    st.dequant_group = k / 2;
    ++k;
  }
  const ExpansionEntries e = expansion_entries(plan);
  EXPECT_EQ(e.steps, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(e.entry, (std::vector<int>{0, -1, 1, -1, 2}));
  EXPECT_EQ(e.group_first, (std::vector<int>{0, 2, 3}));
  const ExpansionEntries none = expansion_entries(fake_plan(std::vector<int64_t>(2, kMiB), nullptr));
  EXPECT_TRUE(none.steps.empty());
  EXPECT_EQ(none.group_first, (std::vector<int>{0}));
}

TEST(ExpansionStage, EachGroupExpandsUnderTheStepsBeforeIt) {
  // Four convs of 1 ms each, 0.4 ms of it expanding, a group each, every weight resident:
  // group 0 expands first (0.4 ms), then each group under the kernels of the one before.
  ExecutionPlan plan = fake_plan(std::vector<int64_t>(4, kMiB), nullptr);
  mark_int8(&plan, 1);
  const StreamPlan s = resident_plan(plan);
  ASSERT_TRUE(s.resident);
  const std::vector<double> ms(4, 1.0);
  SimOptions inline_times = no_launch_cost();
  const SimResult in_line = simulate(plan, s, h100_like(), ms, inline_times);
  EXPECT_NEAR(in_line.latency_ms, 4.0, 1e-9);
  SimOptions stage = no_launch_cost();
  stage.expand_ms.assign(4, 0.0);
  EXPECT_NEAR(simulate(plan, s, h100_like(), ms, stage).latency_ms, 4.0, 1e-9) << "no expansion time: in line";
  stage.expand_ms.assign(4, 0.4);
  const SimResult r = simulate(plan, s, h100_like(), ms, stage);
  ASSERT_TRUE(r.violations.empty()) << r.violations.front();
  EXPECT_NEAR(r.latency_ms, 0.4 + 4 * 0.6, 1e-9);
  ASSERT_EQ(r.expand_end_ms.size(), 4u);
  EXPECT_NEAR(r.expand_end_ms[0], 0.4, 1e-9);
  EXPECT_NEAR(r.expand_end_ms[1], 0.8, 1e-9);
  EXPECT_NEAR(r.layer_start_ms[1], 1.0, 1e-9);
}

TEST(ExpansionStage, AGroupWaitsUntilTheGroupBeforeHasReachedItsFirstStep) {
  // Short expansions (0.1 ms) under long kernels (0.9 ms): group 2's buffers are free
  // only once group 1 runs (runtime/compile/dequant_buffers.h), so it expands from
  // 1.0 ms (when step 1 could start), not right after group 1 (0.2 ms).
  ExecutionPlan plan = fake_plan(std::vector<int64_t>(4, kMiB), nullptr);
  mark_int8(&plan, 1);
  const StreamPlan s = resident_plan(plan);
  SimOptions stage = no_launch_cost();
  stage.expand_ms.assign(4, 0.1);
  const SimResult r = simulate(plan, s, h100_like(), std::vector<double>(4, 1.0), stage);
  ASSERT_TRUE(r.violations.empty()) << r.violations.front();
  EXPECT_NEAR(r.expand_end_ms[1], 0.2, 1e-9);
  EXPECT_NEAR(r.expand_end_ms[2], 1.1, 1e-9);
  EXPECT_NEAR(r.expand_end_ms[3], 2.0, 1e-9);
  EXPECT_NEAR(r.latency_ms, 0.1 + 4 * 0.9, 1e-9);
}

TEST(ExpansionStage, AGroupExpandsInOneBatch) {
  // Three convs in one group: every step waits for the whole batch (1.2 ms).
  ExecutionPlan plan = fake_plan(std::vector<int64_t>(3, kMiB), nullptr);
  mark_int8(&plan, 3);
  const StreamPlan s = resident_plan(plan);
  SimOptions stage = no_launch_cost();
  stage.expand_ms.assign(3, 0.4);
  const SimResult r = simulate(plan, s, h100_like(), std::vector<double>(3, 1.0), stage);
  ASSERT_TRUE(r.violations.empty()) << r.violations.front();
  for (int l = 0; l < 3; ++l) EXPECT_NEAR(r.expand_end_ms[size_t(l)], 1.2, 1e-9) << "step " << l;
  EXPECT_NEAR(r.layer_start_ms[0], 1.2, 1e-9);
  EXPECT_NEAR(r.latency_ms, 1.2 + 3 * 0.6, 1e-9);
}

TEST(ExpansionStage, AStreamedStepWaitsForItsCopyThenItsExpansion) {
  std::mt19937_64 rng(33);
  ExecutionPlan plan = fake_plan(test::random_sizes(&rng, 30), &rng);
  mark_int8(&plan, 2);
  StreamOptions o;
  o.budget_bytes = 0;  // the minimum
  o.layout = PoolLayout::kRing;
  o.ring_granularity = 2 * kMiB;
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::vector<double> ms = test::random_times(plan, &rng, 0.01, 0.2);
  SimOptions stage;
  stage.expand_ms.assign(plan.steps.size(), 0.0);
  for (const Step& st : plan.steps)
    if (st.dequant >= 0) stage.expand_ms[size_t(st.index)] = 0.3 * ms[size_t(st.index)];
  const SimResult r = simulate(plan, *s, h100_like(), ms, stage);
  ASSERT_TRUE(r.violations.empty()) << r.violations.front();
  for (const Step& st : plan.steps) {
    if (st.dequant < 0) continue;
    const int u = s->blob_last_unit[size_t(st.weight)];
    const double landed = u >= 0 ? r.copy_end_ms[size_t(u)] : 0.0;
    EXPECT_GE(r.expand_end_ms[size_t(st.index)], landed + stage.expand_ms[size_t(st.index)] - 1e-9)
        << "step " << st.index;
    EXPECT_GE(r.layer_start_ms[size_t(st.index)], r.expand_end_ms[size_t(st.index)] - 1e-9) << "step " << st.index;
  }
  // Longer expansions, the same kernels: never faster.
  SimOptions longer = stage;
  std::vector<double> longer_ms = ms;
  for (size_t i = 0; i < ms.size(); ++i) longer_ms[i] += stage.expand_ms[i], longer.expand_ms[i] *= 2;
  EXPECT_GE(simulate(plan, *s, h100_like(), longer_ms, longer).latency_ms, r.latency_ms - 1e-9) << "longer expansions";
}

TEST(ExpansionStage, AGroupLandingWithSeveralCopiesExpandsABatchPerCopy) {
  // Three 8 MiB convs in one group, streamed through the minimum ring, a copy each: the
  // first step's weights are expanded once their own copy lands, not the group's last
  // (the CUDA engine's launch per copy).
  ExecutionPlan plan = fake_plan(std::vector<int64_t>(3, 8 * kMiB), nullptr);
  mark_int8(&plan, 3);
  StreamOptions o;
  o.layout = PoolLayout::kRing;
  o.ring_granularity = 2 * kMiB;
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const int u0 = s->blob_last_unit[0], u2 = s->blob_last_unit[2];
  ASSERT_LT(u0, u2);
  SimOptions stage = no_launch_cost();
  stage.expand_ms.assign(3, 0.001);
  const SimResult r = simulate(plan, *s, h100_like(), std::vector<double>(3, 0.01), stage);
  ASSERT_TRUE(r.violations.empty()) << r.violations.front();
  EXPECT_NEAR(r.expand_end_ms[0], r.copy_end_ms[size_t(u0)] + 0.001, 1e-9);
  EXPECT_LT(r.layer_end_ms[0], r.copy_end_ms[size_t(u2)]) << "the first step ran before the last copy landed";
  EXPECT_NEAR(r.expand_end_ms[2], r.copy_end_ms[size_t(u2)] + 0.001, 1e-9);
}

TEST(ExpansionStage, TimesOfAnotherPlanAreAViolation) {
  ExecutionPlan plan = fake_plan(std::vector<int64_t>(3, kMiB), nullptr);
  mark_int8(&plan, 1);
  SimOptions stage;
  stage.expand_ms.assign(2, 0.1);
  const SimResult r = simulate(plan, resident_plan(plan), h100_like(), std::vector<double>(3, 1.0), stage);
  ASSERT_FALSE(r.violations.empty());
  EXPECT_NE(r.violations.front().find("2 expansion times for 3 steps"), std::string::npos) << r.violations.front();
}

TEST(ExpansionStage, BoundOverTheKernelsAloneIsBelowEveryPlanWithTheStage) {
  // The bound takes the expansions off the steps (BoundModel::expand_ms): it no longer
  // errs high, never rises above the in-line bound, and stays below every residency
  // plan and searched cut simulated with the expansion stage.
  std::mt19937_64 rng(5);
  int checked = 0;
  for (int trial = 0; trial < 24; ++trial) {
    ExecutionPlan plan = fake_plan(test::random_sizes(&rng, 15 + int(rng() % 30)), &rng);
    mark_int8(&plan, 1 + int(rng() % 4));
    const std::vector<double> ms = test::random_times(plan, &rng, 0.005, trial % 2 ? 0.3 : 0.05);
    std::vector<double> ex(plan.steps.size(), 0.0);
    std::uniform_real_distribution<double> share(0.0, 0.6);
    for (const Step& st : plan.steps)
      if (st.dequant >= 0) ex[size_t(st.index)] = share(rng) * ms[size_t(st.index)];
    int64_t total = 0, largest = 0;
    for (const WeightBlob& w : plan.weights) total += w.bytes, largest = std::max(largest, w.bytes);
    std::uniform_real_distribution<double> frac(0.0, 1.0);
    const int64_t budget = int64_t(3 * largest + double(total - 3 * largest) * frac(rng));
    if (budget <= 0 || budget >= total) continue;
    StreamOptions o;
    o.budget_bytes = budget;
    o.layout = PoolLayout::kRing;
    o.ring_granularity = 2 * kMiB;
    if (!plan_streaming(plan, h100_like(), o).ok()) continue;
    BoundModel apart;
    apart.expand_ms = ex;
    Expected<LatencyBound> lb = latency_lower_bound(plan, ms, h100_like(), budget, 2 * kMiB, apart);
    Expected<LatencyBound> in_line = latency_lower_bound(plan, ms, h100_like(), budget, 2 * kMiB);
    ASSERT_TRUE(lb.ok() && in_line.ok());
    EXPECT_EQ(lb->expanded_steps, 0);
    EXPECT_GT(in_line->expanded_steps, 0);
    EXPECT_LE(lb->ms, in_line->ms + 1e-12);
    for (Residency strategy : {Residency::kNone, Residency::kGreedy}) {
      ResidencyOptions ro;
      ro.strategy = strategy;
      ro.sim.expand_ms = ex;
      Expected<ResidencyResult> r = plan_residency(plan, h100_like(), o, ms, ro);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_LE(lb->ms, r->predicted_ms + 1e-9) << "trial " << trial << ", " << residency_name(strategy);
      ++checked;
    }
  }
  EXPECT_GT(checked, 20);
}

TEST(ExpansionStage, BoundRefusesTimesOfAnotherPlan) {
  ExecutionPlan plan = fake_plan(std::vector<int64_t>(3, 4 * kMiB), nullptr);
  BoundModel apart;
  apart.expand_ms.assign(2, 0.0);
  Expected<LatencyBound> lb = latency_lower_bound(plan, std::vector<double>(3, 0.1), h100_like(), 8 * kMiB, 2 * kMiB,
                                                  apart);
  ASSERT_FALSE(lb.ok());
  EXPECT_NE(lb.status().message().find("2 expansion times for 3 steps"), std::string::npos) << lb.status().message();
}

TEST(ExpansionStage, CompilePlansWithTheStageWhereTheOptionSaysSo) {
  // yolov4 @608, int8 weights at the minimum pool, the h100 profile, kernel times from the
  // cost model of which 30 % expands on the int8 steps: with the stage (the default) the
  // prediction and the bound are below those counting the expansions in line, and the
  // bound no longer says it errs high; expansion_stage off plans as before.
  DLR_REQUIRE_SHARED_DIR();
  test::Yolov4Plan n;
  ASSERT_TRUE(test::yolov4_608_plan(WeightFormat::kInt8, &n));
  const Target t = test::h100_cuda_target();
  const SessionOptions o = test::yolov4_608_min_options(WeightFormat::kInt8);
  CompileInputs in;
  in.layer_ms = n.ms;
  in.expand_ms.assign(n.ms.size(), 0.0);
  for (const Step& st : n.plan.steps)
    if (st.dequant >= 0) in.expand_ms[size_t(st.index)] = 0.3 * n.ms[size_t(st.index)];
  SessionOptions off = o;
  off.expansion_stage = false;
  const Expected<CompiledModel> with = compile(n.net, t, o, in);
  const Expected<CompiledModel> without = compile(n.net, t, off, in);
  ASSERT_TRUE(with.ok()) << with.status().to_string();
  ASSERT_TRUE(without.ok()) << without.status().to_string();
  std::printf("stage: predicted %.3f ms, bound %.3f ms; in line: %.3f ms, bound %.3f ms\n", with->predicted_ms,
              with->lower_bound_ms, without->predicted_ms, without->lower_bound_ms);
  EXPECT_EQ(with->expand_ms, in.expand_ms);
  EXPECT_EQ(with->lower_bound_expanded_steps, 0);
  EXPECT_GT(without->lower_bound_expanded_steps, 0);
  EXPECT_LE(with->lower_bound_ms, without->lower_bound_ms + 1e-12);
  EXPECT_LE(with->lower_bound_ms, with->predicted_ms + 1e-9);
  EXPECT_EQ(with->to_text().find("int8 expansions"), std::string::npos);
  EXPECT_NE(without->to_text().find("int8 expansions"), std::string::npos);
  CompileInputs wrong = in;
  wrong.expand_ms.pop_back();
  const Expected<CompiledModel> refused = compile(n.net, t, o, wrong);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("expansion times for"), std::string::npos) << refused.status().message();
}

}  // namespace
}  // namespace dlr
