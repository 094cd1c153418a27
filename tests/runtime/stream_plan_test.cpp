// StreamPlan: structure of the weight-streaming plan (groups, slots, units, waits,
// host order) on random skewed layer sequences, exact errors, the budget parser,
// and the numbers of the real yolov4 plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "loaders/network_desc.h"
#include "runtime/compile/plan.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"
#include "tests/runtime/stream_checks.h"
#include "tests/runtime/stream_fixtures.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

using test::fake_plan;
using test::h100_like;
using test::jetson_like;
using test::kMiB;
using test::random_sizes;
using test::random_times;

using test::check_stream_plan;
using test::kRingGranularity;

TEST(StreamPlan, RandomSequencesHaveEveryStructuralProperty) {
  std::mt19937_64 rng(20260101);
  const CopyProfile profiles[] = {h100_like(), jetson_like()};
  int cases = 0, resident = 0, minimal = 0, rings = 0;
  for (int iter = 0; iter < 300; ++iter) {
    std::uniform_int_distribution<int> nconv(1, 120);
    const ExecutionPlan plan = fake_plan(random_sizes(&rng, nconv(rng)), &rng);
    const int64_t total = plan.weight_bytes();
    int64_t largest = 0;
    for (const WeightBlob& w : plan.weights) largest = std::max(largest, w.bytes);
    const int64_t min_pool = 2 * largest;
    std::uniform_int_distribution<int64_t> between(min_pool, std::max(min_pool, total - 1));
    std::uniform_int_distribution<int64_t> above(total, 2 * total);
    for (const CopyProfile& prof : profiles) {
      for (int64_t budget : {int64_t(0), min_pool, between(rng), above(rng)})
        for (PoolLayout layout : {PoolLayout::kSlots, PoolLayout::kAuto}) {
        SCOPED_TRACE("iter " + std::to_string(iter) + " profile " + prof.name + " budget " + std::to_string(budget) +
                     " layout " + pool_layout_name(layout));
        StreamOptions o;
        o.budget_bytes = budget;
        o.layout = layout;
        Expected<StreamPlan> s = plan_streaming(plan, prof, o);
        ASSERT_TRUE(s.ok()) << s.status().to_string();
        check_stream_plan(plan, *s, prof, budget, prof.chunk_bytes);
        if (HasFatalFailure()) return;
        ++cases;
        resident += s->resident;
        minimal += !s->resident && s->slots == 2;
        rings += s->layout == PoolLayout::kRing;
        if (layout == PoolLayout::kSlots) {
          EXPECT_EQ(s->layout, PoolLayout::kSlots);
        }
        if (!s->resident) {  // min depth over the unit sizes, minus 1, in [1, 256]
          int depth = 1 << 30;
          for (const TransferUnit& u : s->units) depth = std::min(depth, prof.queue_depth(u.bytes));
          EXPECT_EQ(s->max_copies_ahead, std::max(1, std::min(256, depth - 1)));
          if (prof.name == "h100-like") {
            EXPECT_EQ(s->max_copies_ahead, 256);
          }
        }
      }
    }
  }
  std::printf("%d plans checked: %d resident, %d minimal (2 slots), %d rings\n", cases, resident, minimal, rings);
  EXPECT_GT(resident, 100);
  EXPECT_GT(minimal, 100);
  EXPECT_GT(rings, 300);
}

TEST(StreamPlan, MinimalBudgetIsExactlyTwoSlots) {
  const ExecutionPlan plan = fake_plan({1 * kMiB, 3 * kMiB, 512 << 10, 2 * kMiB, 3 * kMiB, 256 << 10, kMiB}, nullptr);
  for (int64_t budget : {int64_t(0), 6 * kMiB, 6 * kMiB + 1, 9 * kMiB - 1}) {
    StreamOptions o;
    o.budget_bytes = budget;
    o.layout = PoolLayout::kSlots;
    Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    EXPECT_FALSE(s->resident);
    EXPECT_EQ(s->slot_bytes, 3 * kMiB);
    EXPECT_EQ(s->slots, 2);
    EXPECT_EQ(s->pool_bytes, 6 * kMiB);
    EXPECT_EQ(s->minimal_pool_bytes, 6 * kMiB);
    // groups: [1, ] [3] [0.5, 2] [3] [0.25, 1]
    ASSERT_EQ(s->groups.size(), 5u);
    for (size_t g = 1; g < s->groups.size(); ++g) EXPECT_NE(s->groups[g].slot, s->groups[g - 1].slot);
    check_stream_plan(plan, *s, h100_like(), budget, h100_like().chunk_bytes);
  }
}

TEST(StreamPlan, BudgetBelowMinimalGivesExactError) {
  // blobs of layers 0..3; the largest (3 MiB) is blob 1 = layer 1.
  const ExecutionPlan plan = fake_plan({1 * kMiB, 3 * kMiB, 512 << 10, 2 * kMiB}, nullptr);
  StreamOptions o;
  o.layout = PoolLayout::kSlots;
  o.budget_bytes = 6 * kMiB - 1;
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "weight budget 5.9999990 MiB is below the minimum of 6.0000000 MiB (two slots of the largest layer, "
            "3.00 MiB, layer 1); a smaller slot_bytes runs the largest layers in slices");
  o.budget_bytes = 5 * kMiB;
  s = plan_streaming(plan, h100_like(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "weight budget 5.00 MiB is below the minimum of 6.00 MiB (two slots of the largest layer, 3.00 MiB, "
            "layer 1); a smaller slot_bytes runs the largest layers in slices");
}

TEST(StreamPlan, RingPlacesByteXAtXModuloTheRing) {
  // Largest blob 3 MiB: the minimal ring is 6 MiB + 1 MB rounded down to 2 MiB = 6 MiB;
  // units of at most 6 - 3 = 3 MiB (the first one 1 MiB).
  const ExecutionPlan plan = fake_plan({1 * kMiB, 3 * kMiB, 512 << 10, 2 * kMiB, 3 * kMiB, 256 << 10, kMiB}, nullptr);
  for (int64_t budget : {int64_t(0), 6 * kMiB, 7 * kMiB + 5}) {
    StreamOptions o;
    o.budget_bytes = budget;
    Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);  // auto picks the ring
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    EXPECT_EQ(s->layout, PoolLayout::kRing);
    EXPECT_EQ(s->pool_bytes, 6 * kMiB);
    EXPECT_EQ(s->address_span(), 12 * kMiB);
    EXPECT_EQ(s->minimal_pool_bytes, 6 * kMiB);
    // host offsets 0, 1, 4, 4.5, 6.5, 9.5, 9.75 MiB
    EXPECT_EQ(s->blob_pool_offset, (std::vector<int64_t>{0, kMiB, 4 * kMiB, 9 * kMiB / 2, kMiB / 2, 7 * kMiB / 2,
                                                         15 * kMiB / 4}));
    // units of at most max(min unit, ring / 8) = 1 MiB (the profile's 4 MiB is too coarse here)
    for (const TransferUnit& u : s->units) EXPECT_LE(u.bytes, kMiB);
    EXPECT_EQ(s->units.front().bytes, kMiB);
    check_stream_plan(plan, *s, h100_like(), budget, h100_like().chunk_bytes);
    const std::string text = s->to_text();
    EXPECT_NE(text.find("stream plan: ring of 6.00 MiB mapped twice (minimal 6.00 MiB)"), std::string::npos) << text;
    EXPECT_NE(text.find("unit    0: ring, host"), std::string::npos) << text;
    EXPECT_EQ(size_t(std::count(text.begin(), text.end(), '\n')), 1 + s->units.size());
  }
  StreamOptions o;
  o.budget_bytes = 10 * kMiB;  // 10 MiB ring: nothing overwritten before byte 10 MiB
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->pool_bytes, 10 * kMiB);
  for (const TransferUnit& u : s->units) EXPECT_LE(u.bytes, 10 * kMiB / 8);
  o.chunk_bytes = 4 * kMiB;  // an explicit chunk is kept (up to ring - largest blob)
  Expected<StreamPlan> explicit_chunk = plan_streaming(plan, h100_like(), o);
  ASSERT_TRUE(explicit_chunk.ok());
  EXPECT_EQ(explicit_chunk->units[1].bytes, 7 * kMiB / 2);  // 4 MiB, cut back at the blob end at 4.5 MiB
  for (const TransferUnit& u : s->units)
    EXPECT_EQ(s->unit_waits[size_t(u.index)].empty(), u.host_offset + u.bytes <= 10 * kMiB) << "unit " << u.index;
  check_stream_plan(plan, *s, h100_like(), o.budget_bytes, h100_like().chunk_bytes);
}

TEST(StreamPlan, ExplicitRingUnitEnds) {
  // 10.75 MiB of weights, largest blob 3 MiB, 6 MiB ring: units of at most 3 MiB.
  const ExecutionPlan plan = fake_plan({1 * kMiB, 3 * kMiB, 512 << 10, 2 * kMiB, 3 * kMiB, 256 << 10, kMiB}, nullptr);
  const int64_t total = 43 * kMiB / 4;
  StreamOptions o;
  o.budget_bytes = 6 * kMiB;
  o.unit_ends = {kMiB / 2, 3 * kMiB, 9 * kMiB / 2, 13 * kMiB / 2, 19 * kMiB / 2, total};
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->layout, PoolLayout::kRing);
  EXPECT_EQ(s->unit_ends(), o.unit_ends);
  EXPECT_EQ(s->units[1].first_blob, 0);  // [0.5, 3) MiB: the end of blob 0 and most of blob 1
  EXPECT_EQ(s->units[1].last_blob, 1);
  EXPECT_EQ(s->blob_last_unit[1], 2);
  check_stream_plan(plan, *s, h100_like(), o.budget_bytes, 3 * kMiB);
  const SimResult r = simulate(plan, *s, h100_like(), std::vector<double>(plan.steps.size(), 0.05));
  EXPECT_TRUE(r.violations.empty()) << r.violations.front();

  auto error = [&](std::vector<int64_t> e, PoolLayout layout = PoolLayout::kAuto) {
    StreamOptions bad = o;
    bad.unit_ends = std::move(e);
    bad.layout = layout;
    Expected<StreamPlan> x = plan_streaming(plan, h100_like(), bad);
    return x.ok() ? std::string("ok") : x.status().message();
  };
  EXPECT_EQ(error({kMiB, kMiB, total}),
            "transfer unit 1 ends at byte 1048576; expected increasing multiples of 256 after 1048576");
  EXPECT_EQ(error({1000, total}), "transfer unit 0 ends at byte 1000; expected increasing multiples of 256 after 0");
  EXPECT_EQ(error({kMiB, 5 * kMiB, total}),
            "transfer unit 1 ends at byte 5242880: 4194304 bytes, more than the 3145728 a ring of 6.00 MiB allows");
  EXPECT_EQ(error({kMiB, 3 * kMiB}),
            "transfer units end at byte 3145728; expected the last at " + std::to_string(total) + " (all weight bytes)");
  EXPECT_EQ(error(o.unit_ends, PoolLayout::kSlots), "explicit transfer unit boundaries apply to the ring pool only");
}

TEST(StreamPlan, RingLayoutErrorsAndFallback) {
  const ExecutionPlan plan = fake_plan({1 * kMiB, 3 * kMiB, 512 << 10, 2 * kMiB, 3 * kMiB}, nullptr);
  StreamOptions o;
  o.layout = PoolLayout::kRing;
  o.ring_granularity = 0;  // a device without virtual memory management
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "the ring weight pool needs CUDA virtual memory management, which this device does not support; use the "
            "slots pool");
  o.layout = PoolLayout::kAuto;  // auto falls back to slots
  s = plan_streaming(plan, h100_like(), o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->layout, PoolLayout::kSlots);
  EXPECT_EQ(s->pool_bytes, 6 * kMiB);
  o.ring_granularity = 2 * kMiB;
  o.layout = PoolLayout::kRing;
  o.budget_bytes = 5 * kMiB;
  s = plan_streaming(plan, h100_like(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "weight budget 5.00 MiB is below the minimum of 6.00 MiB (a ring of two of the largest layer in 2.00 MiB "
            "mapping units, 3.00 MiB, layer 1); a smaller slot_bytes runs the largest layers in slices");
  // 6.5 MiB: the ring rounds down to 6 MiB (auto and ring), slots take 2 x 3 MiB.
  o.budget_bytes = 13 * kMiB / 2;
  for (PoolLayout l : {PoolLayout::kAuto, PoolLayout::kRing, PoolLayout::kSlots}) {
    o.layout = l;
    s = plan_streaming(plan, h100_like(), o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    EXPECT_EQ(s->layout, l == PoolLayout::kSlots ? PoolLayout::kSlots : PoolLayout::kRing);
    EXPECT_EQ(s->pool_bytes, 6 * kMiB);
  }
  // A coarse granularity: the ring minimum (4 MiB units: 8 MiB) exceeds two slots + 1 MB,
  // so the minimal mode uses slots and a 7 MiB budget too.
  o.ring_granularity = 4 * kMiB;
  o.layout = PoolLayout::kAuto;
  for (int64_t budget : {int64_t(0), 7 * kMiB}) {
    o.budget_bytes = budget;
    s = plan_streaming(plan, h100_like(), o);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->layout, PoolLayout::kSlots) << budget;
  }
  // Largest blob 3 MiB + 4 KiB: two slots need 6.01 MiB, the ring 6 MiB. Below both,
  // auto names the smaller (the ring), slots name their own.
  const ExecutionPlan odd = fake_plan({1 * kMiB, 3 * kMiB + 4096, 2 * kMiB, 3 * kMiB}, nullptr);
  o = StreamOptions();
  o.budget_bytes = 5 * kMiB;
  s = plan_streaming(odd, h100_like(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "weight budget 5.00 MiB is below the minimum of 6.00 MiB (a ring of two of the largest layer in 2.00 MiB "
            "mapping units, 3.00 MiB, layer 1); a smaller slot_bytes runs the largest layers in slices");
  o.layout = PoolLayout::kSlots;
  s = plan_streaming(odd, h100_like(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "weight budget 5.00 MiB is below the minimum of 6.01 MiB (two slots of the largest layer, 3.00 MiB, "
            "layer 1); a smaller slot_bytes runs the largest layers in slices");
  o.layout = PoolLayout::kAuto;
  o.ring_granularity = 1000;
  s = plan_streaming(odd, h100_like(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "ring granularity 1000 bytes must be a multiple of 256");
  PoolLayout parsed = PoolLayout::kAuto;
  EXPECT_TRUE(parse_pool_layout("ring", &parsed));
  EXPECT_EQ(parsed, PoolLayout::kRing);
  EXPECT_TRUE(parse_pool_layout("slots", &parsed));
  EXPECT_EQ(parsed, PoolLayout::kSlots);
  EXPECT_FALSE(parse_pool_layout("Ring", &parsed));
}

TEST(StreamPlan, ResidentWhenTheBudgetHoldsEverything) {
  const ExecutionPlan plan = fake_plan({1 * kMiB, 9 * kMiB, 512 << 10}, nullptr);
  for (int64_t budget : {plan.weight_bytes(), 2 * plan.weight_bytes()}) {
    StreamOptions o;
    o.budget_bytes = budget;
    Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s->resident);
    EXPECT_EQ(s->streamed_bytes(), 0);
    EXPECT_EQ(s->pool_bytes, plan.weight_bytes());
    // open-time copies: chunks of the whole store; the 9 MiB blob is cut at 4 MiB chunks
    ASSERT_EQ(s->units.size(), 3u);  // 4, 4, 2.5 MiB (the boundary at 1 MiB is too early in the first chunk)
    check_stream_plan(plan, *s, h100_like(), budget, h100_like().chunk_bytes);
  }
}

// A Runtime's shared ring: a model streams through a ring that holds all its weights
// (StreamOptions::never_resident) instead of becoming resident.
TEST(StreamPlan, NeverResidentStreamsThroughARingThatHoldsEverything) {
  const ExecutionPlan plan = fake_plan({1 * kMiB, 9 * kMiB, 512 << 10}, nullptr);
  std::vector<double> ms(plan.steps.size(), 0.05);
  for (int64_t budget : {24 * kMiB, plan.weight_bytes() / kRingGranularity * kRingGranularity + 2 * kRingGranularity}) {
    StreamOptions o;
    o.budget_bytes = budget;
    o.layout = PoolLayout::kRing;
    o.never_resident = true;
    Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    EXPECT_FALSE(s->resident);
    EXPECT_EQ(s->layout, PoolLayout::kRing);
    EXPECT_EQ(s->pool_bytes, budget / kRingGranularity * kRingGranularity);
    EXPECT_EQ(s->streamed_bytes(), plan.weight_bytes());
    for (const auto& waits : s->unit_waits) EXPECT_TRUE(waits.empty());  // nothing is overwritten in one inference
    for (size_t b = 0; b < plan.weights.size(); ++b) EXPECT_EQ(s->blob_pool_offset[b], s->blob_host_offset[b]);
    const SimResult r = simulate(plan, *s, h100_like(), ms, SimOptions{});
    EXPECT_TRUE(r.violations.empty()) << r.violations.front();
    EXPECT_GT(r.latency_ms, 0.05 * double(plan.steps.size()));  // the first copy is waited for
    // With a resident blob the rest streams through the same ring.
    o.resident = {0, 1, 0};
    o.budget_bytes = budget + 9 * kMiB;
    Expected<StreamPlan> part = plan_streaming(plan, h100_like(), o);
    ASSERT_TRUE(part.ok()) << part.status().to_string();
    EXPECT_EQ(part->pool_bytes, s->pool_bytes);
    EXPECT_EQ(part->resident_bytes, 9 * kMiB);
    EXPECT_EQ(part->streamed_bytes(), plan.weight_bytes() - 9 * kMiB);
  }
  // Without it the same budget is resident; it needs the ring.
  StreamOptions o;
  o.budget_bytes = 24 * kMiB;
  EXPECT_TRUE(plan_streaming(plan, h100_like(), o)->resident);
  o.never_resident = true;
  o.layout = PoolLayout::kSlots;
  Expected<StreamPlan> slots = plan_streaming(plan, h100_like(), o);
  ASSERT_FALSE(slots.ok());
  EXPECT_NE(slots.status().message().find("never resident"), std::string::npos) << slots.status().message();
  o.layout = PoolLayout::kAuto;
  o.ring_granularity = 0;
  EXPECT_FALSE(plan_streaming(plan, h100_like(), o).ok());
}

// The prefetch copies the leading no-wait units within prefetch_limit_bytes only (the
// window a Runtime gives the model), cut at a unit boundary, and the simulator counts
// exactly those as landed before the inference.
TEST(StreamPlan, PrefetchUnitsStopAtTheLimit) {
  const ExecutionPlan plan = fake_plan(std::vector<int64_t>(12, 2 * kMiB), nullptr);
  StreamOptions o;
  o.budget_bytes = 16 * kMiB;
  o.layout = PoolLayout::kRing;
  o.chunk_bytes = 2 * kMiB;
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const int all = s->prefetch_units();
  ASSERT_GE(all, 4);
  const int64_t all_bytes = s->prefetch_bytes();
  std::vector<double> ms(plan.steps.size(), 0.02);
  SimOptions sim;
  sim.prefetched = true;
  const double unlimited_ms = simulate(plan, *s, h100_like(), ms, sim).latency_ms;
  StreamPlan cut = *s;
  cut.prefetch_limit_bytes = s->units[0].bytes + s->units[1].bytes + 1;  // two units and a byte
  EXPECT_EQ(cut.prefetch_units(), 2);
  EXPECT_EQ(cut.prefetch_bytes(), s->units[0].bytes + s->units[1].bytes);
  cut.prefetch_limit_bytes = 0;
  EXPECT_EQ(cut.prefetch_units(), 0);
  cut.prefetch_limit_bytes = all_bytes;
  EXPECT_EQ(cut.prefetch_units(), all);
  // Landed before the inference: the plan's cut, the same as the simulator's own limit.
  cut.prefetch_limit_bytes = s->units[0].bytes + s->units[1].bytes;
  SimOptions limited = sim;
  limited.prefetch_limit_bytes = cut.prefetch_limit_bytes;
  const double by_plan = simulate(plan, cut, h100_like(), ms, sim).latency_ms;
  EXPECT_DOUBLE_EQ(by_plan, simulate(plan, *s, h100_like(), ms, limited).latency_ms);
  EXPECT_GT(by_plan, unlimited_ms);
}

TEST(StreamPlan, UnitsCutAtBlobBoundariesInTheLastQuarterOfAChunk) {
  // slot 8 MiB; groups [8] [3.5 2 1] [8]; chunks of 4 MiB. The inference's first unit is
  // min_unit_bytes (1 MiB). The boundary at 3.5 MiB of the second group lies in the
  // last quarter of its first chunk, so that unit ends there.
  ExecutionPlan plan = fake_plan({8 * kMiB, 7 * kMiB / 2, 2 * kMiB, 1 * kMiB, 8 * kMiB}, nullptr);
  StreamOptions slots;
  slots.layout = PoolLayout::kSlots;
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), slots);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->groups.size(), 3u);
  auto sizes = [&]() {
    std::vector<int64_t> v;
    for (const TransferUnit& u : s->units) v.push_back(u.bytes);
    return v;
  };
  EXPECT_EQ(sizes(), (std::vector<int64_t>{kMiB, 4 * kMiB, 3 * kMiB, 7 * kMiB / 2, 3 * kMiB, 4 * kMiB, 4 * kMiB}));
  EXPECT_EQ(s->blob_last_unit, (std::vector<int>{2, 3, 4, 4, 6}));
  check_stream_plan(plan, *s, h100_like(), 0, 4 * kMiB);
  // groups [8] [1 4 2] [8]: the boundary at 1 MiB of the second group is too early in
  // its first chunk, so that chunk is a full 4 MiB and the 4 MiB blob spans two units.
  plan = fake_plan({8 * kMiB, 1 * kMiB, 4 * kMiB, 2 * kMiB, 8 * kMiB}, nullptr);
  s = plan_streaming(plan, h100_like(), slots);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->groups.size(), 3u);
  EXPECT_EQ(sizes(), (std::vector<int64_t>{kMiB, 4 * kMiB, 3 * kMiB, 4 * kMiB, 3 * kMiB, 4 * kMiB, 4 * kMiB}));
  EXPECT_EQ(s->blob_last_unit, (std::vector<int>{2, 3, 4, 4, 6}));
  check_stream_plan(plan, *s, h100_like(), 0, 4 * kMiB);
}

TEST(StreamPlan, ChunkOptionOverridesTheProfile) {
  const ExecutionPlan plan = fake_plan({8 * kMiB, 8 * kMiB, 8 * kMiB}, nullptr);
  StreamOptions o;
  o.layout = PoolLayout::kSlots;
  o.chunk_bytes = 2 * kMiB;
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->units.size(), 13u);  // 1 (the first unit: min_unit_bytes) + 2 + 2 + 2 + 1, then 4 + 4
  check_stream_plan(plan, *s, h100_like(), 0, 2 * kMiB);
  o.chunk_bytes = 1000;
  s = plan_streaming(plan, h100_like(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "copy chunk size 1000 bytes must be a positive multiple of 256");
  o.chunk_bytes = 0;
  o.max_copies_ahead = 3;
  s = plan_streaming(plan, h100_like(), o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->max_copies_ahead, 3);
}

TEST(StreamPlan, UnqueueableUnitSizeNamesTheChunkToUse) {
  const ExecutionPlan plan = fake_plan({8 * kMiB, 1 * kMiB, 8 * kMiB}, nullptr);
  StreamOptions o;
  o.chunk_bytes = 4 * kMiB;
  Expected<StreamPlan> s = plan_streaming(plan, jetson_like(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "copy profile 'jetson-like' cannot queue copies of 4.00 MiB (unit 1); use a chunk size of at most "
            "2097152 bytes (2.00 MiB)");
  o.chunk_bytes = 0;  // the profile's 1 MiB
  s = plan_streaming(plan, jetson_like(), o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->max_copies_ahead, 1);
}

TEST(StreamPlan, ToTextHasASummaryAndOneLinePerGroupAndUnit) {
  const ExecutionPlan plan = fake_plan({1 * kMiB, 3 * kMiB, 512 << 10, 2 * kMiB, 3 * kMiB}, nullptr);
  StreamOptions slots;
  slots.layout = PoolLayout::kSlots;
  Expected<StreamPlan> s = plan_streaming(plan, h100_like(), slots);
  ASSERT_TRUE(s.ok());
  const std::string text = s->to_text();
  EXPECT_EQ(size_t(std::count(text.begin(), text.end(), '\n')), 1 + s->groups.size() + s->units.size());
  EXPECT_NE(text.find("2 slots x 3.00 MiB = 6.00 MiB pool"), std::string::npos) << text;
  EXPECT_NE(text.find("waits 1"), std::string::npos) << text;
}

TEST(StreamPlanBudget, ParsesEveryForm) {
  const int64_t total = 1000 * kMiB, minimal = 36 * kMiB;
  auto parse = [&](const std::string& t) { return parse_weight_budget(t, total, minimal); };
  EXPECT_EQ(*parse("min"), minimal);
  EXPECT_EQ(*parse("MIN"), minimal);
  EXPECT_EQ(*parse("all"), total);
  EXPECT_EQ(*parse("25%"), total / 4);
  EXPECT_EQ(*parse("100%"), total);
  EXPECT_EQ(*parse("12.5 %"), total / 8);
  EXPECT_EQ(*parse("64MB"), 64000000);
  EXPECT_EQ(*parse("64MiB"), 64 * kMiB);
  EXPECT_EQ(*parse(" 64mib "), 64 * kMiB);
  EXPECT_EQ(*parse("1.5GB"), 1500000000);
  EXPECT_EQ(*parse("1.5GiB"), 3 * (int64_t(1) << 29));
  EXPECT_EQ(*parse("512KiB"), 512 * 1024);
  EXPECT_EQ(*parse("100kb"), 100000);
  EXPECT_EQ(*parse("123456789"), 123456789);
  EXPECT_EQ(*parse("4096B"), 4096);
}

TEST(StreamPlanBudget, RejectsGarbage) {
  auto err = [](const std::string& t) {
    Expected<int64_t> v = parse_weight_budget(t, 1000 * kMiB, 36 * kMiB);
    EXPECT_FALSE(v.ok()) << t;
    return v.ok() ? std::string() : v.status().message();
  };
  EXPECT_EQ(err("-5MB"), "weight budget \"-5MB\": negative");
  EXPECT_EQ(err("0"), "weight budget \"0\": must be greater than zero");
  EXPECT_EQ(err("0MB"), "weight budget \"0MB\": must be greater than zero");
  EXPECT_EQ(err("0%"), "weight budget \"0%\": must be greater than zero");
  EXPECT_EQ(err("150%"), "weight budget \"150%\": a percentage must be in (0, 100]");
  EXPECT_EQ(err("12XB"), "weight budget \"12XB\": unknown unit 'XB'; expected %, B, KB, MB, GB, KiB, MiB or GiB");
  EXPECT_EQ(err("1.5"),
            "weight budget \"1.5\": a plain byte count must be an integer (or add a unit: KB, MB, GB, KiB, MiB, GiB)");
  EXPECT_NE(err(""), "");
  EXPECT_NE(err("abc"), "");
  EXPECT_NE(err("%"), "");
  EXPECT_NE(err("1."), "");
  EXPECT_NE(err("nan"), "");
  EXPECT_NE(err("inf"), "");
  EXPECT_NE(err("1e9"), "");
  EXPECT_NE(err("99999999999999GB"), "");
  EXPECT_EQ(err("0.0000000001%"), "weight budget \"0.0000000001%\": rounds to zero bytes");
}

// The real yolov4 plan, fp32 and fp16 weights: groups, units and copies per budget,
// and the simulator's prediction for the built-in H100 copy profile (which must load:
// no fallback). The numbers are pinned: the plan and the simulator are pure functions
// of the cfg, the profile and the budget, so any change to the planner, the unit
// cutting or the simulator's model shows here (update the table with the printed
// line when a change is intended). Pool sizes to 0.005 MiB, latency and stall to
// 0.0005 ms (the printed precision). Invariants on top: latency >= modelled compute,
// stall >= 0, latency never grows with the budget, the ring is never slower than the
// slots at the same budget, 100 % is resident without stall.
struct Yolov4Row {
  const char* budget;
  PoolLayout layout;
  bool resident;
  double pool_mib;
  size_t units;
  double latency_ms, stall_ms;
};
// Measured at fe7b9fc (the numbers this test printed before it asserted them).
const Yolov4Row kYolov4F32[] = {
    {"min", PoolLayout::kSlots, false, 36.01, 73, 9.469, 2.173}, {"min", PoolLayout::kRing, false, 36.00, 64, 8.257, 0.962},
    {"25%", PoolLayout::kSlots, false, 54.01, 73, 8.467, 1.172}, {"25%", PoolLayout::kRing, false, 60.00, 64, 7.587, 0.292},
    {"50%", PoolLayout::kSlots, false, 108.02, 73, 7.414, 0.118}, {"50%", PoolLayout::kRing, false, 122.00, 64, 7.313, 0.018},
    {"75%", PoolLayout::kSlots, false, 180.04, 73, 7.313, 0.018}, {"75%", PoolLayout::kRing, false, 184.00, 64, 7.313, 0.018},
    {"100%", PoolLayout::kSlots, true, 245.40, 64, 7.293, 0.000}, {"100%", PoolLayout::kRing, true, 245.40, 64, 7.293, 0.000},
};
const Yolov4Row kYolov4F16[] = {
    {"min", PoolLayout::kSlots, false, 18.01, 45, 8.014, 0.719}, {"min", PoolLayout::kRing, false, 18.00, 57, 7.391, 0.095},
    {"25%", PoolLayout::kSlots, false, 27.01, 45, 7.313, 0.018}, {"25%", PoolLayout::kRing, false, 30.00, 36, 7.313, 0.018},
    {"50%", PoolLayout::kSlots, false, 54.02, 45, 7.313, 0.018}, {"50%", PoolLayout::kRing, false, 60.00, 33, 7.313, 0.018},
    {"75%", PoolLayout::kSlots, false, 90.04, 45, 7.313, 0.018}, {"75%", PoolLayout::kRing, false, 92.00, 33, 7.313, 0.018},
    {"100%", PoolLayout::kSlots, true, 122.76, 32, 7.293, 0.000}, {"100%", PoolLayout::kRing, true, 122.76, 32, 7.293, 0.000},
};

TEST(StreamPlan, Yolov4Numbers) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4.cfg");
  Expected<NetworkDesc> net = parse_network_cfg(cfg);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  Expected<CopyProfile> builtin = CopyProfile::builtin("h100");
  ASSERT_TRUE(builtin.ok()) << builtin.status().to_string();
  const CopyProfile& prof = *builtin;
  for (DType dt : {DType::kF32, DType::kF16}) {
    PlannerOptions po;
    po.weight_dtype = dt;
    Expected<ExecutionPlan> plan = build_plan(*net, po);
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    const int64_t total = plan->weight_bytes();
    int64_t largest = 0;
    int largest_layer = -1;
    for (const WeightBlob& w : plan->weights)
      if (w.bytes > largest) largest = w.bytes, largest_layer = w.layer;
    EXPECT_EQ(plan->weights.size(), 110u);
    EXPECT_EQ(largest_layer, 86);
    EXPECT_EQ(largest, dt == DType::kF32 ? 18878464 : 9441280);
    std::printf("yolov4 %s: %zu blobs, %.2f MiB of weights, slot %.2f MiB (%lld bytes, layer %d), minimal pool %.2f "
                "MiB, profile %s\n",
                dtype_name(dt), plan->weights.size(), double(total) / kMiB, double(largest) / kMiB,
                (long long)largest, largest_layer, 2.0 * double(largest) / kMiB, prof.name.c_str());
    const std::vector<double> layer_ms = model_layer_ms(*net, *plan, 20000.0, 1500.0, 5.0);
    double compute = 0;
    for (double t : layer_ms) compute += t;
    EXPECT_NEAR(compute, 7.289, 0.0005);
    double prev_latency[2] = {INFINITY, INFINITY};  // per layout
    double slots_latency = 0;
    for (const Yolov4Row& row : dt == DType::kF32 ? kYolov4F32 : kYolov4F16) {
      const std::string b = row.budget;
      const PoolLayout layout = row.layout;
      SCOPED_TRACE(std::string(dtype_name(dt)) + " budget " + b + " " + pool_layout_name(layout));
      Expected<int64_t> budget = parse_weight_budget(b, total, 0);
      ASSERT_TRUE(budget.ok());
      StreamOptions o;
      o.budget_bytes = *budget;
      o.layout = layout;
      Expected<StreamPlan> s = plan_streaming(*plan, prof, o);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      check_stream_plan(*plan, *s, prof, *budget, prof.chunk_bytes);
      if (b == "min") {  // the minimal-mode bound: two largest units + 1 MB
        EXPECT_LE(s->pool_bytes, 2 * largest + 1000000);
      }
      if (std::getenv("DLR_PRINT_STREAM_PLAN")) std::printf("%s", s->to_text().c_str());
      const SimResult r = simulate(*plan, *s, prof, layer_ms);
      EXPECT_TRUE(r.violations.empty()) << r.violations.front();
      std::printf("  budget %-4s %-5s: %s, %2d slots, pool %7.2f MiB, %3zu groups, %3zu units, %3zu copies "
                  "per inference (%.2f MiB); sim: latency %.3f ms (compute %.3f ms), stall %.3f ms\n",
                  b.c_str(), pool_layout_name(layout), s->resident ? "resident " : "streaming", s->slots,
                  double(s->pool_bytes) / kMiB, s->groups.size(), s->units.size(),
                  s->resident ? size_t(0) : s->units.size(), double(s->streamed_bytes()) / kMiB, r.latency_ms,
                  compute, r.stall_ms);
      // Pinned numbers.
      EXPECT_EQ(s->resident, row.resident);
      EXPECT_NEAR(double(s->pool_bytes) / kMiB, row.pool_mib, 0.005);
      EXPECT_EQ(s->units.size(), row.units);
      EXPECT_NEAR(r.latency_ms, row.latency_ms, 0.0005);
      EXPECT_NEAR(r.stall_ms, row.stall_ms, 0.0005);
      // Invariants.
      if (b != "min") {
        EXPECT_LE(s->pool_bytes, *budget);
      }
      EXPECT_GE(r.latency_ms, compute);
      EXPECT_GE(r.stall_ms, 0.0);
      const int li = layout == PoolLayout::kRing ? 1 : 0;
      EXPECT_LE(r.latency_ms, prev_latency[li] + 1e-9) << "more budget, slower";
      prev_latency[li] = r.latency_ms;
      if (layout == PoolLayout::kSlots) {
        slots_latency = r.latency_ms;
      } else {
        EXPECT_LE(r.latency_ms, slots_latency + 1e-9) << "ring slower than slots";
      }
      if (b == "100%") {
        EXPECT_TRUE(s->resident);
        EXPECT_EQ(r.stall_ms, 0.0);
      }
    }
  }
}

}  // namespace
}  // namespace dlr
