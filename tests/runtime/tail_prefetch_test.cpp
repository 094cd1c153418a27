// The next inference's leading units copied under this one's tail (StreamPlan::tail_units):
// the waits are the last readers of the ring bytes (against a byte-by-byte reference),
// random tail plans pass every simulator check, an early wait is caught, and a closed
// form: with the first blob copied under the previous tail, a compute-bound inference
// takes the kernels' time alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "runtime/compile/plan.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"
#include "tests/runtime/stream_fixtures.h"

namespace dlr {
namespace {

using test::fake_plan;
using test::h100_like;
using test::jetson_like;
using test::kMiB;
using test::random_sizes;
using test::random_times;

// The last step reading ring bytes [lo, hi) (hi <= ring), byte range by byte range: every
// ring blob's host bytes [o, o + n) cover ring offsets o % ring onwards, wrapping once.
int reference_last_reader(const ExecutionPlan& plan, const StreamPlan& s, int64_t lo, int64_t hi) {
  const int64_t ring = s.ring_bytes();
  int last = -1;
  for (size_t b = 0; b < plan.weights.size(); ++b) {
    if (!s.in_ring(int(b))) continue;
    const int64_t start = s.blob_host_offset[b] % ring, end = start + plan.weights[b].bytes;
    const bool hit = (start < hi && lo < std::min(end, ring)) || (end > ring && lo < end - ring);
    if (hit) last = std::max(last, plan.weights[b].step);
  }
  return last;
}

Expected<StreamPlan> ring_plan(const ExecutionPlan& plan, const CopyProfile& prof, int64_t budget) {
  StreamOptions so;
  so.layout = PoolLayout::kRing;
  so.budget_bytes = budget;
  return plan_streaming(plan, prof, so);
}

bool has_violation(const SimResult& r, const std::string& what) {
  return std::any_of(r.violations.begin(), r.violations.end(),
                     [&](const std::string& v) { return v.find(what) != std::string::npos; });
}

TEST(TailPrefetch, WaitsAreTheLastReadersOfTheUnitsRingBytes) {
  std::mt19937_64 rng(31);
  int checked = 0;
  for (int trial = 0; trial < 80; ++trial) {
    const ExecutionPlan plan = fake_plan(random_sizes(&rng, 8 + int(rng() % 80)), &rng);
    const int64_t budget = trial % 3 == 0 ? 0 : plan.weight_bytes() * int64_t(1 + trial % 3) / 4;
    const Expected<StreamPlan> sp = ring_plan(plan, h100_like(), budget);
    if (!sp.ok() || sp->resident) continue;
    const std::vector<int> waits = tail_wait_steps(plan, *sp);
    ASSERT_EQ(waits.size(), size_t(sp->prefetch_units())) << "trial " << trial;  // the no-wait leading units
    for (size_t u = 0; u < waits.size(); ++u) {
      const TransferUnit& tu = sp->units[u];
      ASSERT_LE(tu.pool_offset + tu.bytes, sp->pool_bytes) << "trial " << trial << " unit " << u;
      EXPECT_EQ(waits[u], reference_last_reader(plan, *sp, tu.pool_offset, tu.pool_offset + tu.bytes))
          << "trial " << trial << " unit " << u;
      ++checked;
    }
    StreamPlan s = *sp;
    ASSERT_TRUE(set_tail_units(plan, &s, int(waits.size())).ok());
    EXPECT_EQ(s.tail_waits, waits);
    EXPECT_FALSE(set_tail_units(plan, &s, int(waits.size()) + 1).ok());
    EXPECT_FALSE(set_tail_units(plan, &s, -1).ok());
  }
  EXPECT_GT(checked, 100);
}

TEST(TailPrefetch, SlotsAndResidentPlansHaveNoTail) {
  const ExecutionPlan plan = fake_plan(std::vector<int64_t>(12, 4 * kMiB), nullptr);
  StreamOptions so;
  so.layout = PoolLayout::kSlots;
  const Expected<StreamPlan> slots = plan_streaming(plan, h100_like(), so);
  ASSERT_TRUE(slots.ok());
  EXPECT_TRUE(tail_wait_steps(plan, *slots).empty());
  const Expected<StreamPlan> all = ring_plan(plan, h100_like(), 64 * kMiB);
  ASSERT_TRUE(all.ok() && all->resident);
  EXPECT_TRUE(tail_wait_steps(plan, *all).empty());
}

TEST(TailPrefetch, RandomTailPlansAreSafe) {
  std::mt19937_64 rng(37);
  int tails = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const ExecutionPlan plan = fake_plan(random_sizes(&rng, 8 + int(rng() % 80)), &rng);
    const CopyProfile prof = trial % 4 == 3 ? jetson_like() : h100_like();
    const std::vector<double> ms = random_times(plan, &rng, 0.002, trial % 2 ? 0.5 : 0.05);
    const int64_t budget = trial % 3 == 0 ? 0 : plan.weight_bytes() * int64_t(1 + trial % 3) / 4;
    const Expected<StreamPlan> sp = ring_plan(plan, prof, budget);
    if (!sp.ok() || sp->resident) continue;
    SimOptions steady;
    steady.tail = true;
    const double plain = simulate(plan, *sp, prof, ms).latency_ms;
    // No tail units: the steady state is the plain inference.
    EXPECT_DOUBLE_EQ(simulate(plan, *sp, prof, ms, steady).latency_ms, plain) << "trial " << trial;
    const int n = int(tail_wait_steps(plan, *sp).size());
    for (int k = 1; k <= n; ++k) {
      StreamPlan s = *sp;
      ASSERT_TRUE(set_tail_units(plan, &s, k).ok());
      const SimResult r = simulate(plan, s, prof, ms, steady);
      ASSERT_TRUE(r.violations.empty()) << "trial " << trial << " tail " << k << ": " << r.violations.front();
      ASSERT_EQ(r.tail_copy_end_ms.size(), size_t(k));
      for (int u = 0; u < k; ++u) EXPECT_EQ(r.copy_end_ms[size_t(u)], 0.0);  // landed by the previous tail
      EXPECT_GE(r.latency_ms, r.tail_copy_end_ms.back() - 1e-12);
      ++tails;
    }
  }
  EXPECT_GT(tails, 50);
}

TEST(TailPrefetch, ChecksCatchAnEarlyTailWait) {
  // 12 blobs of 4 MiB through an 8 MiB ring: the first units' ring bytes hold blob 10
  // at the end of an inference.
  const ExecutionPlan plan = fake_plan(std::vector<int64_t>(12, 4 * kMiB), nullptr);
  const CopyProfile prof = h100_like();
  const Expected<StreamPlan> sp = ring_plan(plan, prof, 0);
  ASSERT_TRUE(sp.ok());
  ASSERT_EQ(sp->pool_bytes, 8 * kMiB);
  StreamPlan s = *sp;
  ASSERT_TRUE(set_tail_units(plan, &s, 1).ok());
  EXPECT_EQ(s.tail_waits[0], plan.weights[10].step);
  const std::vector<double> slow(plan.steps.size(), 1.0);
  SimOptions steady;
  steady.tail = true;
  ASSERT_TRUE(simulate(plan, s, prof, slow, steady).violations.empty());
  s.tail_waits[0] = plan.weights[9].step;  // one layer too early
  EXPECT_TRUE(has_violation(simulate(plan, s, prof, slow, steady), "tail copy of unit 0 overwrites blob"));
  s.tail_waits[0] = 99;  // a step that does not exist
  EXPECT_TRUE(has_violation(simulate(plan, s, prof, slow, steady), "tail copy of unit 0 is enqueued before layer"));
  s.tail_waits.clear();  // waits that do not match the count
  EXPECT_TRUE(has_violation(simulate(plan, s, prof, slow, steady), "tail:"));
}

TEST(TailPrefetch, ComputeBoundInferenceTakesTheKernelsAloneOnceTheFirstBlobIsCopiedUnderTheTail) {
  const ExecutionPlan plan = fake_plan(std::vector<int64_t>(12, 4 * kMiB), nullptr);
  const CopyProfile prof = h100_like();
  const Expected<StreamPlan> sp = ring_plan(plan, prof, 0);
  ASSERT_TRUE(sp.ok());
  const std::vector<double> ms(plan.steps.size(), 1.0);
  const int first_blob_unit = sp->blob_last_unit[0];
  StreamPlan s = *sp;
  ASSERT_TRUE(set_tail_units(plan, &s, first_blob_unit + 1).ok());
  SimOptions steady;
  steady.tail = true;
  SimOptions plain_options;
  plain_options.launch_us = steady.launch_us;
  const SimResult plain = simulate(plan, *sp, prof, ms, plain_options);
  const SimResult tail = simulate(plan, s, prof, ms, steady);
  ASSERT_TRUE(tail.violations.empty()) << tail.violations.front();
  const double kernels = 12.0, launch = steady.launch_us * 1e-3;
  EXPECT_NEAR(tail.latency_ms, kernels + launch, 1e-9);
  // Without it the first layer waits for its blob's copies.
  EXPECT_NEAR(plain.latency_ms, kernels + plain.copy_end_ms[size_t(first_blob_unit)], 1e-6);
  EXPECT_GT(plain.latency_ms - tail.latency_ms, 0.05);
  // The tail copies end inside the last layer (blob 10's reader ends 1 ms before it).
  EXPECT_LT(tail.tail_copy_end_ms.back(), tail.latency_ms);
}

}  // namespace
}  // namespace dlr
