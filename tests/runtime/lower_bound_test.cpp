// latency_lower_bound (runtime/streaming/lower_bound.h): below every plan the
// planner makes (all strategies, searched units) on random networks, budgets and
// profiles, and, with the arena's idle bytes counted, below every plan staging blobs
// there (random activations too); exact on closed forms; the kernels' sum when
// everything fits; never grows with the budget; the idle bytes of aliased buffers;
// says when the kernel times count int8 expansions; input errors.
#include <gtest/gtest.h>

#include <random>

#include "runtime/compile/arena_placement.h"
#include "runtime/streaming/arena_staging.h"
#include "runtime/streaming/lower_bound.h"
#include "runtime/streaming/residency.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/unit_search.h"
#include "tests/runtime/stream_fixtures.h"

namespace dlr {
namespace {

using test::add_random_buffers;
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
  // (8 MiB), so at most 8 MiB stay resident and >= 24 MiB are copied per inference at
  // peak; where copies run before the inference a ring of them (8 MiB) may have landed:
  // >= 16 MiB within it.
  const ExecutionPlan plan = fake_plan({8 * kMiB, 8 * kMiB, 8 * kMiB, 8 * kMiB}, nullptr);
  const std::vector<double> ms(plan.steps.size(), 0.0);
  const CopyProfile prof = h100_like();
  Expected<LatencyBound> lb = latency_lower_bound(plan, ms, prof, 16 * kMiB, kGran);
  ASSERT_TRUE(lb.ok());
  EXPECT_NEAR(lb->ms, double(24 * kMiB) / (prof.peak_gbps() * 1e6), 1e-12);
  EXPECT_EQ(lb->pool_bytes, 8 * kMiB);
  EXPECT_EQ(lb->min_streamed_bytes, 24 * kMiB);
  BoundModel before;
  before.copies_before = true;
  Expected<LatencyBound> pre = latency_lower_bound(plan, ms, prof, 16 * kMiB, kGran, before);
  ASSERT_TRUE(pre.ok());
  EXPECT_NEAR(pre->ms, double(16 * kMiB) / (prof.peak_gbps() * 1e6), 1e-12);
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
  // layer 1 runs: copy + 0.5 + copy + 0.5. Where copies run before the inference the
  // first may have landed: 0.5 + copy + 0.5.
  plan = fake_plan({8 * kMiB, 8 * kMiB}, nullptr);
  ms.assign(plan.steps.size(), 0.5);
  Expected<LatencyBound> two = latency_lower_bound(plan, ms, prof, 8 * kMiB, kGran);
  ASSERT_TRUE(two.ok());
  const double copy = double(8 * kMiB) / (prof.peak_gbps() * 1e6);
  EXPECT_NEAR(two->ms, 2 * copy + 1.0, 1e-12);
  BoundModel before;
  before.copies_before = true;
  Expected<LatencyBound> pre = latency_lower_bound(plan, ms, prof, 8 * kMiB, kGran, before);
  ASSERT_TRUE(pre.ok());
  EXPECT_NEAR(pre->ms, copy + 1.0, 1e-12);
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

TEST(LowerBound, CoversPlansStagingBlobsInIdleActivationBytes) {
  std::mt19937_64 rng(29);
  int staged = 0, below_ring_only = 0;
  for (int trial = 0; trial < 40; ++trial) {
    ExecutionPlan plan = fake_plan(random_sizes(&rng, 20 + int(rng() % 30)), &rng);
    add_random_buffers(&plan, &rng);
    const CopyProfile prof = trial % 3 == 2 ? jetson_like() : h100_like();
    const std::vector<double> ms = random_times(plan, &rng, 0.002, trial % 2 ? 0.3 : 0.05);
    int64_t total = 0, largest = 0;
    for (const WeightBlob& w : plan.weights) total += w.bytes, largest = std::max(largest, w.bytes);
    std::uniform_real_distribution<double> frac(0.0, 0.6);
    const int64_t budget = align_up(int64_t(2 * largest + double(total - 2 * largest) * frac(rng)), kGran);
    if (budget >= total) continue;
    StreamOptions o;
    o.budget_bytes = budget;
    o.layout = PoolLayout::kRing;
    o.ring_granularity = kGran;
    o.never_resident = trial % 2 == 0;
    ArenaStagingOptions st;
    st.sim.prefetched = trial % 4 < 2;
    st.min_blob_bytes = 0;
    const Expected<ArenaStagingResult> r = plan_arena_staging(plan, prof, o, ms, st);
    if (!r.ok()) continue;  // no ring fits this budget
    if (r->staged == 0) continue;
    ++staged;
    BoundModel model;
    model.staging_room = arena_idle_bytes(plan);
    model.copies_before = st.sim.prefetched;
    Expected<LatencyBound> lb = latency_lower_bound(plan, ms, prof, budget, kGran, model);
    ASSERT_TRUE(lb.ok()) << lb.status().to_string();
    EXPECT_TRUE(lb->staging);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + lb->to_text() + "; " + r->how);
    EXPECT_LE(lb->ms, r->predicted_ms + 1e-9);
    StreamOptions with = o;
    with.arena_offset = r->offset;
    with.arena_wait = r->wait;
    with.arena_early = r->early;
    UnitSearchOptions us;
    us.sim = st.sim;
    Expected<UnitSearchResult> u = search_ring_units(plan, prof, with, ms, us);
    ASSERT_TRUE(u.ok()) << u.status().to_string();
    EXPECT_LE(lb->ms, u->predicted_ms + 1e-9) << "searched units";
    BoundModel ring_model;
    ring_model.copies_before = st.sim.prefetched;
    Expected<LatencyBound> ring_only = latency_lower_bound(plan, ms, prof, budget, kGran, ring_model);
    ASSERT_TRUE(ring_only.ok());
    EXPECT_LE(lb->ms, ring_only->ms + 1e-12) << "idle bytes only help the adversary";
    if (r->predicted_ms < ring_only->ms - 1e-9) ++below_ring_only;
  }
  std::printf("%d staged plans checked; %d predicted below the ring-only bound\n", staged, below_ring_only);
  EXPECT_GE(staged, 10);
}

TEST(LowerBound, ClosedFormWithIdleArenaBytes) {
  // Two 8 MiB blobs, 0.5 ms each, an 8 MiB budget. Through the ring alone the second
  // copy waits for layer 0: c + 0.5 + c + 0.5. With 8 MiB idle in the arena at both steps
  // it can be copied under layer 0 (c <= 0.5): only the first copy is exposed, and with
  // copies before the inference not even that one.
  const ExecutionPlan plan = fake_plan({8 * kMiB, 8 * kMiB}, nullptr);
  const std::vector<double> ms(plan.steps.size(), 0.5);
  const CopyProfile prof = h100_like();
  const double c = double(8 * kMiB) / (prof.peak_gbps() * 1e6);
  ASSERT_LE(c, 0.5);
  Expected<LatencyBound> ring = latency_lower_bound(plan, ms, prof, 8 * kMiB, kGran);
  ASSERT_TRUE(ring.ok());
  EXPECT_NEAR(ring->ms, 2 * c + 1.0, 1e-12);
  EXPECT_FALSE(ring->staging);
  BoundModel idle;
  idle.staging_room = {8 * kMiB, 8 * kMiB};
  Expected<LatencyBound> staged = latency_lower_bound(plan, ms, prof, 8 * kMiB, kGran, idle);
  ASSERT_TRUE(staged.ok());
  EXPECT_NEAR(staged->ms, c + 1.0, 1e-12) << staged->to_text();
  EXPECT_TRUE(staged->staging);
  EXPECT_NE(staged->to_text().find("idle activation bytes"), std::string::npos);
  idle.copies_before = true;
  Expected<LatencyBound> pre = latency_lower_bound(plan, ms, prof, 8 * kMiB, kGran, idle);
  ASSERT_TRUE(pre.ok());
  EXPECT_NEAR(pre->ms, 1.0, 1e-12) << pre->to_text();
  // Idle bytes at layer 1 only: the second blob still cannot be copied before layer 0 ends.
  BoundModel late;
  late.staging_room = {0, 8 * kMiB};
  Expected<LatencyBound> l = latency_lower_bound(plan, ms, prof, 8 * kMiB, kGran, late);
  ASSERT_TRUE(l.ok());
  EXPECT_NEAR(l->ms, 2 * c + 1.0, 1e-12) << l->to_text();
}

TEST(LowerBound, ArenaIdleBytesCountAliasedBuffersOnce) {
  ExecutionPlan plan = fake_plan({kMiB, kMiB, kMiB}, nullptr);
  plan.arena_bytes = 100;
  auto buffer = [&](int64_t offset, int64_t bytes, int first, int last) {
    Buffer b;
    b.id = int(plan.buffers.size());
    b.offset = offset;
    b.bytes = bytes;
    b.first_step = first;
    b.last_step = last;
    plan.buffers.push_back(b);
  };
  buffer(0, 40, -1, 1);   // the input, read by steps 0 and 1
  buffer(20, 40, 0, 2);   // overlaps the input's bytes [20, 40) (an in-place view)
  buffer(80, 20, 2, 3);   // a network output (last_step == steps.size())
  const std::vector<int64_t> idle = arena_idle_bytes(plan);
  ASSERT_EQ(idle.size(), 3u);
  EXPECT_EQ(idle[0], 40);  // [0, 60) live
  EXPECT_EQ(idle[1], 40);
  EXPECT_EQ(idle[2], 40);  // [20, 60) and [80, 100)
}

TEST(LowerBound, SaysWhenTheKernelTimesCountInt8Expansions) {
  // The same bound; two steps expand int8 weights (Step::dequant), whose kernel times
  // count the expansion on the compute stream: the bound counts them and its text says
  // it errs high. Without them the text says nothing of it.
  ExecutionPlan plan = fake_plan({8 * kMiB, 8 * kMiB, 8 * kMiB, 8 * kMiB}, nullptr);
  const std::vector<double> ms(plan.steps.size(), 0.01);
  Expected<LatencyBound> fp = latency_lower_bound(plan, ms, h100_like(), 16 * kMiB, kGran);
  ASSERT_TRUE(fp.ok());
  EXPECT_EQ(fp->expanded_steps, 0);
  EXPECT_EQ(fp->to_text().find("int8"), std::string::npos) << fp->to_text();
  int marked = 0;
  for (Step& st : plan.steps)
    if (st.weight >= 0 && marked < 2) st.dequant = marked++;
  ASSERT_EQ(marked, 2);
  EXPECT_EQ(plan.expanded_steps(), 2);
  Expected<LatencyBound> i8 = latency_lower_bound(plan, ms, h100_like(), 16 * kMiB, kGran);
  ASSERT_TRUE(i8.ok());
  EXPECT_EQ(i8->expanded_steps, 2);
  EXPECT_DOUBLE_EQ(i8->ms, fp->ms);
  EXPECT_NE(i8->to_text().find("count 2 int8 expansions on the compute stream"), std::string::npos) << i8->to_text();
}

TEST(LowerBound, InputErrors) {
  const ExecutionPlan plan = fake_plan({8 * kMiB, 4 * kMiB}, nullptr);
  const std::vector<double> ms(plan.steps.size(), 0.1);
  EXPECT_FALSE(latency_lower_bound(plan, {0.1}, h100_like(), 8 * kMiB, kGran).ok());
  EXPECT_FALSE(latency_lower_bound(plan, ms, h100_like(), 0, kGran).ok());
  EXPECT_FALSE(latency_lower_bound(plan, ms, h100_like(), 8 * kMiB, 0).ok());
  BoundModel short_room, negative_room;
  short_room.staging_room = {0};
  negative_room.staging_room = {0, -1};
  EXPECT_FALSE(latency_lower_bound(plan, ms, h100_like(), 8 * kMiB, kGran, short_room).ok());
  const Expected<LatencyBound> negative = latency_lower_bound(plan, ms, h100_like(), 8 * kMiB, kGran, negative_room);
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("staging room of -1 bytes"), std::string::npos);
  CopyProfile empty;
  EXPECT_FALSE(latency_lower_bound(plan, ms, empty, 8 * kMiB, kGran).ok());
}

}  // namespace
}  // namespace dlr
