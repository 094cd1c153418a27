// search_ring_units: the searched plan is a valid ring plan (every structural and
// simulated safety property), never predicted slower than equal chunks, deterministic,
// and passes slots/resident plans through; on yolov4 it beats equal chunks.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <random>

#include "loaders/network_desc.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/unit_search.h"
#include "tests/common/test_paths.h"
#include "tests/runtime/stream_checks.h"
#include "tests/runtime/stream_fixtures.h"

namespace dlr {
namespace {

using test::check_stream_plan;
using test::fake_plan;
using test::h100_like;
using test::jetson_like;
using test::kMiB;
using test::random_sizes;
using test::random_times;

TEST(UnitSearch, RandomPlansAreSafeAndNeverPredictedSlower) {
  std::mt19937_64 rng(11);
  int searched = 0, better = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const ExecutionPlan plan = fake_plan(random_sizes(&rng, 20 + int(rng() % 60)), &rng);
    const CopyProfile prof = trial % 3 == 2 ? jetson_like() : h100_like();
    const std::vector<double> ms = random_times(plan, &rng, 0.002, trial % 2 ? 0.3 : 0.05);
    int64_t total = 0, largest = 0;
    for (const WeightBlob& w : plan.weights) total += w.bytes, largest = std::max(largest, w.bytes);
    std::uniform_real_distribution<double> frac(0.0, 1.0);
    for (int64_t budget : {int64_t(0), int64_t(2 * largest + double(total) * 0.5 * frac(rng))}) {
      StreamOptions o;
      o.budget_bytes = budget;
      o.layout = PoolLayout::kRing;
      Expected<StreamPlan> def = plan_streaming(plan, prof, o);
      if (!def.ok()) continue;  // e.g. the budget holds no ring of whole mapping units
      Expected<UnitSearchResult> r = search_ring_units(plan, prof, o, ms);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      if (def->resident) {
        EXPECT_FALSE(r->plan.units_searched);
        continue;
      }
      ++searched;
      SCOPED_TRACE("trial " + std::to_string(trial) + ", budget " + std::to_string(budget));
      EXPECT_EQ(r->plan.pool_bytes, def->pool_bytes);
      EXPECT_DOUBLE_EQ(r->default_ms, simulate(plan, *def, prof, ms).latency_ms);
      EXPECT_GT(r->plan.searched_ms, 0.0);
      EXPECT_LE(r->plan.searched_ms, r->default_ms + 1e-9);
      if (r->plan.units_searched) {  // kept only for a gain of at least min_gain (1 %)
        ++better;
        EXPECT_LE(r->predicted_ms, 0.99 * r->default_ms);
        EXPECT_DOUBLE_EQ(r->plan.searched_ms, r->predicted_ms);
      } else {
        EXPECT_DOUBLE_EQ(r->predicted_ms, r->default_ms);
        EXPECT_GT(r->plan.searched_ms, 0.99 * r->default_ms);
        EXPECT_EQ(r->plan.unit_ends(), def->unit_ends());
      }
      check_stream_plan(plan, r->plan, prof, budget, r->plan.pool_bytes - largest);
      const SimResult sim = simulate(plan, r->plan, prof, ms);
      EXPECT_TRUE(sim.violations.empty()) << sim.violations.front();
      EXPECT_DOUBLE_EQ(sim.latency_ms, r->predicted_ms);
      EXPECT_LE(sim.max_pool_bytes_in_use, r->plan.pool_bytes);
      EXPECT_DOUBLE_EQ(r->plan.chunks_ms, r->default_ms);
      EXPECT_EQ(r->plan.search_layer_ms, ms);
      if (trial % 10 == 0) {  // deterministic
        Expected<UnitSearchResult> again = search_ring_units(plan, prof, o, ms);
        ASSERT_TRUE(again.ok());
        EXPECT_EQ(again->plan.unit_ends(), r->plan.unit_ends());
      }
    }
  }
  std::printf("searched %d ring plans, %d predicted >= 1 %% faster than equal chunks (kept)\n", searched, better);
  EXPECT_GT(searched, 60);
  EXPECT_GT(better, searched / 3);
}

TEST(UnitSearch, SlotsAndResidentPlansPassThrough) {
  const ExecutionPlan plan = fake_plan({1 * kMiB, 3 * kMiB, 512 << 10, 2 * kMiB, 3 * kMiB, 256 << 10, kMiB}, nullptr);
  const std::vector<double> ms(plan.steps.size(), 0.05);
  StreamOptions o;
  o.layout = PoolLayout::kSlots;
  Expected<UnitSearchResult> slots = search_ring_units(plan, h100_like(), o, ms);
  ASSERT_TRUE(slots.ok());
  EXPECT_EQ(slots->plan.layout, PoolLayout::kSlots);
  EXPECT_FALSE(slots->plan.units_searched);
  EXPECT_EQ(slots->plan.unit_ends(), plan_streaming(plan, h100_like(), o)->unit_ends());
  EXPECT_DOUBLE_EQ(slots->predicted_ms, slots->default_ms);
  o.layout = PoolLayout::kAuto;
  o.budget_bytes = 64 * kMiB;
  Expected<UnitSearchResult> resident = search_ring_units(plan, h100_like(), o, ms);
  ASSERT_TRUE(resident.ok());
  EXPECT_TRUE(resident->plan.resident);
  EXPECT_FALSE(resident->plan.units_searched);
  EXPECT_EQ(resident->simulations, 0);

  Expected<UnitSearchResult> wrong = search_ring_units(plan, h100_like(), o, std::vector<double>(3, 0.1));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(),
            "unit search: 3 layer times for " + std::to_string(plan.steps.size()) + " layers");
}

// Equal chunks predicted within min_gain of the kernels' sum cannot be beaten by the
// gain a cut needs, so the search does not run; where copies dominate it does.
TEST(UnitSearch, SkippedWhereNoCutCanGainEnough) {
  const ExecutionPlan plan = fake_plan({kMiB, 3 * kMiB, 512 << 10, 2 * kMiB, 3 * kMiB, 256 << 10, kMiB}, nullptr);
  StreamOptions o;
  o.layout = PoolLayout::kRing;
  for (const double layer_ms : {5.0, 0.001}) {  // compute-bound, then copy-bound
    SCOPED_TRACE("layer ms " + std::to_string(layer_ms));
    const std::vector<double> ms(plan.steps.size(), layer_ms);
    Expected<StreamPlan> def = plan_streaming(plan, h100_like(), o);
    ASSERT_TRUE(def.ok());
    ASSERT_FALSE(def->resident);
    const double kernels = layer_ms * double(plan.steps.size());
    const double default_ms = simulate(plan, *def, h100_like(), ms).latency_ms;
    Expected<UnitSearchResult> r = search_ring_units(plan, h100_like(), o, ms);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_DOUBLE_EQ(r->default_ms, default_ms);
    const bool hopeless = 0.99 * default_ms < kernels;
    EXPECT_EQ(hopeless, layer_ms > 1.0) << default_ms << " ms against kernels " << kernels;
    EXPECT_EQ(r->skipped, hopeless);
    if (hopeless) {
      EXPECT_EQ(r->simulations, 1);
      EXPECT_FALSE(r->plan.units_searched);
      EXPECT_EQ(r->plan.unit_ends(), def->unit_ends());
      EXPECT_DOUBLE_EQ(r->predicted_ms, default_ms);
    } else {
      EXPECT_GT(r->simulations, 1);
    }
  }
}

TEST(UnitSearch, Yolov4FasterThanEqualChunks) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4.cfg");
  CfgOptions co;
  co.width = co.height = 608;
  Expected<NetworkDesc> net = parse_network_cfg(cfg, co);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  PlannerOptions po;
  po.weight_dtype = DType::kF16;
  Expected<ExecutionPlan> plan = build_plan(*net, po);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  Expected<CopyProfile> prof = CopyProfile::builtin("h100");
  ASSERT_TRUE(prof.ok());
  // H100-like fp16 kernel times: ~1.8 ms in all, front-loaded like the measured ones.
  const std::vector<double> ms = model_layer_ms(*net, *plan, 60000.0, 2000.0, 3.0);
  double compute = 0;
  for (double t : ms) compute += t;
  std::printf("model kernel time %.3f ms\n", compute);
  for (const char* b : {"min", "25%", "50%"}) {
    Expected<int64_t> budget = parse_weight_budget(b, plan->weight_bytes(), 0);
    ASSERT_TRUE(budget.ok());
    StreamOptions o;
    o.budget_bytes = *budget;
    Expected<UnitSearchResult> r = search_ring_units(*plan, *prof, o, ms);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_EQ(r->plan.layout, PoolLayout::kRing);
    EXPECT_EQ(r->plan.units_searched, std::string(b) != "50%") << b;
    const std::string text = r->plan.to_text();
    const std::string line = r->plan.units_searched ? "units chosen by simulation: searched cut "
                                                    : "units in equal chunks (the search gained < 1 %): searched cut ";
    EXPECT_NE(text.find(line), std::string::npos) << text.substr(0, 400);
    std::printf("yolov4 fp16 @608, budget %-3s: ring %.2f MiB, equal chunks %.3f ms -> searched %.3f ms (%zu units, "
                "%d simulations)\n",
                b, double(r->plan.pool_bytes) / kMiB, r->default_ms, r->predicted_ms, r->plan.units.size(),
                r->simulations);
    // Small rings gain most (the cut decides when the copy engine may refill); with
    // these model times 50 % is compute-bound and the search gains < 1 %.
    EXPECT_LE(r->plan.searched_ms, (std::string(b) == "50%" ? 1.0 : 0.98) * r->default_ms) << b;
    const SimResult sim = simulate(*plan, r->plan, *prof, ms);
    EXPECT_TRUE(sim.violations.empty()) << sim.violations.front();
  }
}

}  // namespace
}  // namespace dlr
