// round_lower_bound (runtime/multi/round_bound.h): exact on closed forms (the kernels,
// the copies alone, a compute-heavy model whose window the ring cannot fill, idle
// activation bytes at the window's end, a window across the round's end); below every
// round the shared-ring split predicts on random models, budgets and objectives; says
// when the kernel times count int8 expansions; input errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <utility>

#include "runtime/multi/round_bound.h"
#include "tests/runtime/ring_fixtures.h"
#include "tests/runtime/stream_fixtures.h"

namespace dlr {
namespace {

using test::add_random_buffers;
using test::fake_plan;
using test::h100_like;
using test::kMiB;
using test::random_sizes;
using test::random_times;
using test::ring_model;

constexpr int64_t kGran = 2 * kMiB;  // ring_model's mapping unit
constexpr double kGbps = 50;
constexpr double kBytesPerMs = kGbps * 1e6;

// A model that stages nothing.
RoundModel round_model(const std::string& name, const ExecutionPlan& plan, std::vector<double> ms) {
  return runtime_round_model(name, plan, std::move(ms), false, 0);
}

// A model of one weightless 2 ms step ("small") and a model of four 8 MiB blobs at
// 0.01 ms each ("large").
struct TwoModels {
  ExecutionPlan small = fake_plan({0}, nullptr);
  ExecutionPlan large = fake_plan({8 * kMiB, 8 * kMiB, 8 * kMiB, 8 * kMiB}, nullptr);
  std::vector<RoundModel> models() const {
    return {round_model("small", small, {2.0}), round_model("large", large, {0.01, 0.01, 0.01, 0.01})};
  }
};

TEST(RoundBound, KernelsWhenEverythingFits) {
  const TwoModels t;
  const Expected<RoundBound> b = round_lower_bound(t.models(), 40 * kMiB, kGbps);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_NEAR(b->compute_ms, 2.04, 1e-12);
  EXPECT_NEAR(b->ms, 2.04, 1e-12) << b->to_text();
  EXPECT_EQ(b->weight_bytes, 32 * kMiB);
}

TEST(RoundBound, CopiesAloneWithoutKernels) {
  const ExecutionPlan p = fake_plan({8 * kMiB, 8 * kMiB, 8 * kMiB, 8 * kMiB}, nullptr);
  const Expected<RoundBound> b = round_lower_bound({round_model("a", p, {0, 0, 0, 0})}, 8 * kMiB, kGbps);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_NEAR(b->ms, double(24 * kMiB) / kBytesPerMs, 1e-12) << b->to_text();
  EXPECT_NEAR(b->bytes_ms, b->ms, 1e-12);
}

// The kernel times of a model with int8 weights count each expansion on the compute
// stream: the same bound, and its line says that it errs high.
TEST(RoundBound, SaysWhenTheKernelTimesCountInt8Expansions) {
  ExecutionPlan p = fake_plan({8 * kMiB, 8 * kMiB, 8 * kMiB, 8 * kMiB}, nullptr);
  const Expected<RoundBound> fp = round_lower_bound({round_model("a", p, {0, 0, 0, 0})}, 8 * kMiB, kGbps);
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
  EXPECT_EQ(fp->expanded_steps, 0);
  EXPECT_EQ(fp->to_text().find("int8"), std::string::npos) << fp->to_text();
  int marked = 0;
  for (Step& st : p.steps)
    if (st.weight >= 0) st.dequant = marked++;
  const Expected<RoundBound> i8 = round_lower_bound({round_model("a", p, {0, 0, 0, 0})}, 8 * kMiB, kGbps);
  ASSERT_TRUE(i8.ok()) << i8.status().to_string();
  EXPECT_EQ(i8->expanded_steps, marked);
  EXPECT_DOUBLE_EQ(i8->ms, fp->ms);
  EXPECT_NE(i8->to_text().find("count " + std::to_string(marked) + " int8 expansions"), std::string::npos)
      << i8->to_text();
}

// While "small" runs for 2 ms, the 16 MiB budget takes at most 16 MiB of "large": the
// other 16 MiB are copied after it, and no resident set changes that (what stays resident
// is what the window could not have copied).
TEST(RoundBound, TheWindowTheRingCannotFill) {
  const TwoModels t;
  const Expected<RoundBound> b = round_lower_bound(t.models(), 16 * kMiB, kGbps);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_NEAR(b->ms, 2.0 + double(16 * kMiB) / kBytesPerMs, 1e-12) << b->to_text();
  EXPECT_NEAR(b->bytes_ms, double(16 * kMiB) / kBytesPerMs, 1e-12);
  EXPECT_EQ(b->first_model, 0);
  EXPECT_EQ(b->first_step, 0);
  EXPECT_EQ(b->end_model, 1);
  EXPECT_EQ(b->end_step, 0);
  EXPECT_NEAR(b->window_ms, 2.0, 1e-12);
  EXPECT_EQ(b->window_bytes, 0);
  EXPECT_NE(b->to_text().find("from small step 0 up to large step 0"), std::string::npos) << b->to_text();
}

// Idle activation bytes where the window ends hold more of what follows it.
TEST(RoundBound, IdleActivationsAtTheWindowsEndHoldMore) {
  const TwoModels t;
  std::vector<RoundModel> m = t.models();
  m[1].room = {8 * kMiB, 0, 0, 0};
  const Expected<RoundBound> b = round_lower_bound(m, 16 * kMiB, kGbps);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  // The window may also end at the large model's second step, with no room there, after
  // its first 8 MiB blob: 2.01 ms of kernels, 8 MiB of its own, 8 MiB left to copy.
  const double end_at_0 = 2.0 + double(8 * kMiB) / kBytesPerMs;
  const double end_at_1 = 2.01 - double(8 * kMiB) / kBytesPerMs + double(16 * kMiB) / kBytesPerMs;
  EXPECT_NEAR(b->ms, std::max(end_at_0, end_at_1), 1e-12) << b->to_text();
}

// The round is cyclic: a window may begin at the end of the list and end at its front.
TEST(RoundBound, AWindowAcrossTheRoundsEnd) {
  const TwoModels t;
  std::vector<RoundModel> m = t.models();
  std::swap(m[0], m[1]);
  const Expected<RoundBound> b = round_lower_bound(m, 16 * kMiB, kGbps);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_NEAR(b->ms, 2.0 + double(16 * kMiB) / kBytesPerMs, 1e-12) << b->to_text();
  EXPECT_EQ(b->first_model, 1);
  EXPECT_EQ(b->end_model, 0);
}

// Random models (two to four, compute-heavy or copy-heavy), budgets and objectives, with
// and without blobs staged in idle activation bytes: the round the shared-ring split
// predicts (each model simulated with the prefetch window its predecessor leaves it) is
// never below the bound.
// min_windows: how many of the bounds a window must set (not only the kernels or the bytes).
void check_predicted_rounds(bool staging, uint64_t seed, int trials, int min_windows) {
  std::mt19937_64 rng(seed);
  int checked = 0, windows = 0;
  double closest = 1e9;
  for (int trial = 0; trial < trials; ++trial) {
    const int count = 2 + trial % 3;
    std::vector<ExecutionPlan> plans;
    std::vector<std::vector<double>> times;
    int64_t arena = 0;
    for (int i = 0; i < count; ++i) {
      const bool small = (trial + i) % 3 == 0;  // few weights, long kernels: a window to bind
      plans.push_back(fake_plan(random_sizes(&rng, small ? 6 : 20 + int(rng() % 30)), &rng));
      if (staging) add_random_buffers(&plans.back(), &rng);
      arena = std::max(arena, plans.back().arena_bytes);
      times.push_back(random_times(plans.back(), &rng, small ? 0.05 : 0.002, small ? 0.4 : 0.05));
    }
    int64_t total = 0;
    std::vector<RingModel> ring;
    std::vector<RoundModel> round;
    for (int i = 0; i < count; ++i) {
      total += plans[size_t(i)].weight_bytes();
      RingModel m = ring_model("m" + std::to_string(i), plans[size_t(i)], times[size_t(i)], trial % 4 != 3);
      m.options.arena_staging = staging;
      ring.push_back(m);
      round.push_back(runtime_round_model(m.name, plans[size_t(i)], times[size_t(i)], staging, arena));
    }
    for (double frac : {0.3, 0.6}) {
      const int64_t budget = int64_t(frac * double(total));
      const SplitObjective obj = trial % 2 ? SplitObjective::kMaxSlowdown : SplitObjective::kSum;
      const Expected<RingSplit> s = split_shared_ring(ring, budget, kGran, obj);
      if (!s.ok()) continue;
      const Expected<RoundBound> b = round_lower_bound(round, budget, h100_like().peak_gbps());
      ASSERT_TRUE(b.ok()) << b.status().to_string();
      double predicted = 0;
      for (double ms : s->predicted_ms) predicted += ms;
      SCOPED_TRACE("trial " + std::to_string(trial) + ", " + std::to_string(frac) + ": " + b->to_text());
      EXPECT_GE(b->ms, b->compute_ms - 1e-12);
      EXPECT_LE(b->ms, predicted + 1e-9) << s->how;
      closest = std::min(closest, predicted / b->ms);
      ++checked;
      if (b->first_model >= 0) ++windows;
    }
  }
  std::printf("%s: %d predicted rounds checked against the bound (%d bound by a window); the closest was %.3f x the "
              "bound\n",
              staging ? "staging" : "ring only", checked, windows, closest);
  EXPECT_GE(checked, trials + trials / 3);
  EXPECT_GE(windows, min_windows);
}

TEST(RoundBound, BelowEveryPredictedRound) { check_predicted_rounds(false, 21, 12, 3); }

TEST(RoundBound, BelowEveryPredictedRoundStagingInIdleActivations) { check_predicted_rounds(true, 23, 9, 1); }

// A Runtime's model: no room where it does not stage; where it does, its plan's idle
// bytes plus what the shared arena has beyond its own arena.
TEST(RoundBound, RuntimeModelsRoomIsItsIdleBytesAndTheSharedArenasRest) {
  ExecutionPlan p = fake_plan({kMiB, 2 * kMiB}, nullptr);
  p.arena_bytes = 3 * kMiB;
  Buffer live;
  live.offset = kMiB;
  live.bytes = kMiB;
  live.first_step = 1;
  live.last_step = 1;
  p.buffers.push_back(live);
  const RoundModel off = runtime_round_model("m", p, {0.1, 0.2}, false, 10 * kMiB);
  EXPECT_TRUE(off.room.empty());
  EXPECT_EQ(off.plan, &p);
  EXPECT_EQ(off.layer_ms.size(), 2u);
  const RoundModel on = runtime_round_model("m", p, {0.1, 0.2}, true, 10 * kMiB);
  ASSERT_EQ(on.room.size(), 2u);
  EXPECT_EQ(on.room[0], 10 * kMiB);
  EXPECT_EQ(on.room[1], 9 * kMiB);
}

TEST(RoundBound, RefusesBadInputWithOneLine) {
  const TwoModels t;
  EXPECT_FALSE(round_lower_bound({}, kMiB, kGbps).ok());
  EXPECT_FALSE(round_lower_bound(t.models(), 0, kGbps).ok());
  EXPECT_FALSE(round_lower_bound(t.models(), kMiB, 0).ok());
  std::vector<RoundModel> m = t.models();
  m[1].layer_ms.pop_back();
  const Expected<RoundBound> short_times = round_lower_bound(m, kMiB, kGbps);
  ASSERT_FALSE(short_times.ok());
  EXPECT_NE(short_times.status().message().find("'large': 3 kernel times for 4 steps"), std::string::npos)
      << short_times.status().message();
  m = t.models();
  m[0].room = {-1};
  EXPECT_FALSE(round_lower_bound(m, kMiB, kGbps).ok());
  m = t.models();
  m[0].plan = nullptr;
  EXPECT_FALSE(round_lower_bound(m, kMiB, kGbps).ok());
  ExecutionPlan bad = t.large;
  bad.steps[2].weight = 9;
  m = t.models();
  m[1].plan = &bad;
  const Expected<RoundBound> missing = round_lower_bound(m, kMiB, kGbps);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("step 2 reads blob 9 of 4"), std::string::npos) << missing.status().message();
}

}  // namespace
}  // namespace dlr
