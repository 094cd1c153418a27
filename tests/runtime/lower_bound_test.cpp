// latency_lower_bound (runtime/streaming/lower_bound.h): below every plan the
// planner makes (all strategies, searched units) on random networks, budgets and
// profiles; exact on a closed form; the kernels' sum when everything fits; never
// grows with the budget; input errors.
#include <gtest/gtest.h>

#include <random>

#include "runtime/streaming/lower_bound.h"
#include "runtime/streaming/residency.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/unit_search.h"
#include "tests/runtime/stream_fixtures.h"

namespace dlr {
namespace {

using test::fake_plan;
using test::h100_like;
using test::jetson_like;
using test::kMiB;
using test::random_sizes;
using test::random_times;

constexpr int64_t kGran = 2 * kMiB;

TEST(LowerBound, BelowEveryPlanOnRandomNetworks) {
  std::mt19937_64 rng(11);
  int checked = 0;
  double closest = 1e9;  // the smallest (plan / bound) ratio seen: how tight the bound gets
  for (int trial = 0; trial < 40; ++trial) {
    const ExecutionPlan plan = fake_plan(random_sizes(&rng, 15 + int(rng() % 40)), &rng);
    const CopyProfile prof = trial % 3 == 2 ? jetson_like() : h100_like();
    const std::vector<double> ms = random_times(plan, &rng, 0.002, trial % 2 ? 0.3 : 0.05);
    int64_t total = 0, largest = 0;
    for (const WeightBlob& w : plan.weights) total += w.bytes, largest = std::max(largest, w.bytes);
    std::uniform_real_distribution<double> frac(0.0, 1.0);
    const int64_t budget = int64_t(3 * largest + double(total - 3 * largest) * frac(rng));
    if (budget <= 0 || budget >= total) continue;
    StreamOptions o;
    o.budget_bytes = budget;
    o.layout = PoolLayout::kRing;
    o.ring_granularity = kGran;
    if (!plan_streaming(plan, prof, o).ok()) continue;
    Expected<LatencyBound> lb = latency_lower_bound(plan, ms, prof, budget, kGran);
    ASSERT_TRUE(lb.ok()) << lb.status().to_string();
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + lb->to_text());
    double compute = 0;
    for (double t : ms) compute += t;
    EXPECT_NEAR(lb->compute_ms, compute, 1e-9);
    EXPECT_GE(lb->ms, compute - 1e-12);
    for (Residency strategy : {Residency::kNone, Residency::kLargestLate, Residency::kGreedy}) {
      ResidencyOptions ro;
      ro.strategy = strategy;
      Expected<ResidencyResult> r = plan_residency(plan, prof, o, ms, ro);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_LE(lb->ms, r->predicted_ms + 1e-9) << residency_name(strategy);
      StreamOptions with = o;
      if (r->plan.resident_bytes > 0) with.resident = r->resident;
      Expected<UnitSearchResult> u = search_ring_units(plan, prof, with, ms);
      ASSERT_TRUE(u.ok()) << u.status().to_string();
      EXPECT_LE(lb->ms, u->predicted_ms + 1e-9) << residency_name(strategy) << " with searched units";
      closest = std::min(closest, u->predicted_ms / lb->ms);
      ++checked;
    }
  }
  std::printf("%d plans checked against the bound; the closest was %.3f x the bound\n", checked, closest);
  EXPECT_GE(checked, 60);
}

TEST(LowerBound, ClosedFormCopyBound) {
  // Four 8 MiB blobs, no compute, a 16 MiB budget: the ring holds at least one blob
  // (8 MiB), so at most 8 MiB stay resident and >= 24 MiB are copied at peak.
  const ExecutionPlan plan = fake_plan({8 * kMiB, 8 * kMiB, 8 * kMiB, 8 * kMiB}, nullptr);
  const std::vector<double> ms(plan.steps.size(), 0.0);
  const CopyProfile prof = h100_like();
  Expected<LatencyBound> lb = latency_lower_bound(plan, ms, prof, 16 * kMiB, kGran);
  ASSERT_TRUE(lb.ok());
  EXPECT_NEAR(lb->ms, double(24 * kMiB) / (prof.peak_gbps() * 1e6), 1e-12);
  EXPECT_EQ(lb->pool_bytes, 8 * kMiB);
  EXPECT_EQ(lb->min_streamed_bytes, 24 * kMiB);
}

TEST(LowerBound, ClosedFormComputeAfterTheLastCopy) {
  // One 8 MiB blob read by the last layer after 1 ms of weightless layers, 4 MiB
  // budget... too small for the blob: no ring fits, the bound is the kernels' sum.
  ExecutionPlan plan = fake_plan({8 * kMiB}, nullptr);
  std::vector<double> ms(plan.steps.size(), 0.5);
  const CopyProfile prof = h100_like();
  Expected<LatencyBound> none = latency_lower_bound(plan, ms, prof, 4 * kMiB, kGran);
  ASSERT_TRUE(none.ok());
  EXPECT_DOUBLE_EQ(none->ms, 0.5);
  EXPECT_EQ(none->pool_bytes, 0);
  // Two blobs, 8 MiB then 8 MiB, 0.5 ms each, budget 8 MiB: both stream through an
  // 8 MiB ring; the first lands before layer 0 starts (8 MiB / peak), layer 0 runs
  // 0.5 ms; the second copy can start only after layer 0 ends (the ring is full), then
  // layer 1 runs: copy + 0.5 + copy + 0.5.
  plan = fake_plan({8 * kMiB, 8 * kMiB}, nullptr);
  ms.assign(plan.steps.size(), 0.5);
  Expected<LatencyBound> two = latency_lower_bound(plan, ms, prof, 8 * kMiB, kGran);
  ASSERT_TRUE(two.ok());
  const double copy = double(8 * kMiB) / (prof.peak_gbps() * 1e6);
  EXPECT_NEAR(two->ms, 2 * copy + 1.0, 1e-12);
}

TEST(LowerBound, PoolAwareBoundSeesEveryCopyBoundRegion) {
  // Two regions of ten 4 MiB blobs, each region's first layer 10 ms, the others no time,
  // an 8 MiB budget. A single cut sees one region's copies; the pool sees both: per region
  // the first blob lands (c), its layer runs 10 ms with one more blob prefetched, then
  // eight blobs are copied back to back: fluid = 2 x (c + 10 + 8c), and the bound is
  // fluid - B / bw = 20 + 16c.
  std::vector<int64_t> sizes(20, 4 * kMiB);
  const ExecutionPlan plan = fake_plan(sizes, nullptr);
  std::vector<double> ms(plan.steps.size(), 0.0);
  ms[0] = ms[10] = 10.0;
  const CopyProfile prof = h100_like();
  Expected<LatencyBound> lb = latency_lower_bound(plan, ms, prof, 8 * kMiB, kGran);
  ASSERT_TRUE(lb.ok()) << lb.status().to_string();
  const double c = double(4 * kMiB) / (prof.peak_gbps() * 1e6);
  EXPECT_TRUE(lb->pool_aware) << lb->to_text();
  EXPECT_NEAR(lb->ms, 20.0 + 16.0 * c, 1e-9) << lb->to_text();
  EXPECT_NE(lb->to_text().find("pool-aware"), std::string::npos);
  // Still below what the planner predicts for that budget.
  StreamOptions o;
  o.budget_bytes = 8 * kMiB;
  o.layout = PoolLayout::kRing;
  o.ring_granularity = kGran;
  Expected<UnitSearchResult> u = search_ring_units(plan, prof, o, ms);
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  EXPECT_LE(lb->ms, u->predicted_ms + 1e-9);
}

TEST(LowerBound, KernelsAloneWhenEverythingFitsAndNeverGrowsWithTheBudget) {
  std::mt19937_64 rng(3);
  const ExecutionPlan plan = fake_plan(random_sizes(&rng, 40), &rng);
  const std::vector<double> ms = random_times(plan, &rng, 0.002, 0.05);
  int64_t total = 0;
  for (const WeightBlob& w : plan.weights) total += w.bytes;
  double compute = 0;
  for (double t : ms) compute += t;
  Expected<LatencyBound> all = latency_lower_bound(plan, ms, h100_like(), total, kGran);
  ASSERT_TRUE(all.ok());
  EXPECT_DOUBLE_EQ(all->ms, compute);
  double last = 1e18;
  for (int64_t b = 8 * kMiB; b < total; b += 3 * kMiB) {
    Expected<LatencyBound> lb = latency_lower_bound(plan, ms, h100_like(), b, kGran);
    ASSERT_TRUE(lb.ok());
    EXPECT_LE(lb->ms, last + 1e-12) << "budget " << b;
    EXPECT_GE(lb->ms, compute - 1e-12);
    last = lb->ms;
  }
}

TEST(LowerBound, InputErrors) {
  const ExecutionPlan plan = fake_plan({8 * kMiB, 4 * kMiB}, nullptr);
  const std::vector<double> ms(plan.steps.size(), 0.1);
  EXPECT_FALSE(latency_lower_bound(plan, {0.1}, h100_like(), 8 * kMiB, kGran).ok());
  EXPECT_FALSE(latency_lower_bound(plan, ms, h100_like(), 0, kGran).ok());
  EXPECT_FALSE(latency_lower_bound(plan, ms, h100_like(), 8 * kMiB, 0).ok());
  CopyProfile empty;
  EXPECT_FALSE(latency_lower_bound(plan, ms, empty, 8 * kMiB, kGran).ok());
}

}  // namespace
}  // namespace dlr
