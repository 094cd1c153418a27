// The joint plan of a Runtime (runtime/multi/budget_split.h): the split of one weight
// budget among models is the exact optimum of the multiple-choice knapsack (checked
// against brute force), never exceeds the budget, follows the models' weights, and
// refuses a budget below the models' minimum with one line naming both sizes. Model
// curves end at every blob resident and rise in budget. Prefetch across inferences in
// the simulator: the prefetched prefix waits for nothing and only ever makes an
// inference faster.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "runtime/multi/budget_split.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"
#include "tests/runtime/stream_fixtures.h"

namespace dlr {
namespace {

using test::kMiB;

ModelCurve curve(const std::string& name, std::vector<int64_t> mib, std::vector<double> ms, double weight = 1) {
  ModelCurve c;
  c.name = name;
  c.weight = weight;
  for (int64_t m : mib) c.budget_bytes.push_back(m * kMiB);
  c.predicted_ms = std::move(ms);
  return c;
}

// 1-4 models, each with 1-5 increasing budgets whose latency falls to the last point
// (all resident, the fastest), and a weight from 0.5 to 3.5.
std::vector<ModelCurve> random_curves(std::mt19937_64* rng) {
  std::vector<ModelCurve> models;
  const int n = 1 + int((*rng)() % 4);
  for (int i = 0; i < n; ++i) {
    const int k = 1 + int((*rng)() % 5);
    std::vector<int64_t> b;
    std::vector<double> ms(static_cast<size_t>(k), 0.0);
    int64_t at = 1 + int64_t((*rng)() % 20);
    for (int j = 0; j < k; ++j) {
      b.push_back(at);
      at += 1 + int64_t((*rng)() % 30);
    }
    double t = 1 + double((*rng)() % 50) / 10;
    for (int j = k - 1; j >= 0; --j) {
      ms[size_t(j)] = t;
      t += double((*rng)() % 30) / 10;
    }
    models.push_back(curve("m" + std::to_string(i), b, ms, 0.5 + double((*rng)() % 4)));
  }
  return models;
}

TEST(BudgetSplit, IsTheExactOptimumWithinTheBudget) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<ModelCurve> models = random_curves(&rng);
    const int n = int(models.size());
    const int64_t budget = int64_t(rng() % 200) * kMiB;
    // Brute force over every combination.
    double best = -1;
    std::function<void(int, int64_t, double)> walk = [&](int i, int64_t used, double cost) {
      if (used > budget) return;
      if (i == n) {
        if (best < 0 || cost < best) best = cost;
        return;
      }
      for (size_t k = 0; k < models[size_t(i)].budget_bytes.size(); ++k)
        walk(i + 1, used + models[size_t(i)].budget_bytes[k],
             cost + models[size_t(i)].weight * models[size_t(i)].predicted_ms[k]);
    };
    walk(0, 0, 0);
    const Expected<BudgetSplit> s = split_budget(models, budget);
    if (best < 0) {
      ASSERT_FALSE(s.ok()) << "trial " << trial;
      EXPECT_EQ(s.status().code(), StatusCode::kOutOfMemory);
      continue;
    }
    ASSERT_TRUE(s.ok()) << "trial " << trial << ": " << s.status().to_string();
    EXPECT_NEAR(s->cost, best, 1e-9) << "trial " << trial;
    EXPECT_LE(s->total_bytes, budget);
    int64_t sum = 0;
    for (size_t i = 0; i < models.size(); ++i) {
      EXPECT_EQ(s->bytes[i], models[i].budget_bytes[size_t(s->choice[i])]);
      sum += s->bytes[i];
    }
    EXPECT_EQ(sum, s->total_bytes);
  }
}

TEST(BudgetSplit, MaxSlowdownIsTheLeastLargestRatio) {
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<ModelCurve> models = random_curves(&rng);
    const int n = int(models.size());
    const int64_t budget = int64_t(rng() % 200) * kMiB;
    double best = -1;
    std::function<void(int, int64_t, double)> walk = [&](int i, int64_t used, double worst) {
      if (used > budget) return;
      if (i == n) {
        if (best < 0 || worst < best) best = worst;
        return;
      }
      const ModelCurve& m = models[size_t(i)];
      for (size_t k = 0; k < m.budget_bytes.size(); ++k)
        walk(i + 1, used + m.budget_bytes[k], std::max(worst, m.predicted_ms[k] / m.predicted_ms.back()));
    };
    walk(0, 0, 0);
    const Expected<BudgetSplit> s = split_budget(models, budget, kMiB, SplitObjective::kMaxSlowdown);
    if (best < 0) {
      EXPECT_FALSE(s.ok()) << "trial " << trial;
      continue;
    }
    ASSERT_TRUE(s.ok()) << "trial " << trial << ": " << s.status().to_string();
    double worst = 0;
    for (size_t i = 0; i < models.size(); ++i) {
      ASSERT_EQ(s->bytes[i], models[i].budget_bytes[size_t(s->choice[i])]) << "trial " << trial;
      worst = std::max(worst, models[i].predicted_ms[size_t(s->choice[i])] / models[i].predicted_ms.back());
    }
    EXPECT_NEAR(worst, best, 1e-9) << "trial " << trial;
    EXPECT_LE(s->total_bytes, budget);
  }
}

TEST(BudgetSplit, HeavierModelGetsTheBytes) {
  const ModelCurve a = curve("a", {10, 50}, {3.0, 2.0}, 1);
  const ModelCurve b = curve("b", {10, 50}, {3.0, 2.0}, 5);
  const Expected<BudgetSplit> s = split_budget({a, b}, 60 * kMiB);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->bytes[0], 10 * kMiB);
  EXPECT_EQ(s->bytes[1], 50 * kMiB);
  // Ties go to the smaller budget: a flat curve takes its minimum.
  const Expected<BudgetSplit> flat = split_budget({curve("f", {4, 8, 16}, {1.0, 1.0, 1.0})}, 100 * kMiB);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->bytes[0], 4 * kMiB);
}

TEST(BudgetSplit, RefusesWhatCannotFitWithOneLine) {
  const Expected<BudgetSplit> s = split_budget({curve("a", {30, 60}, {2, 1}), curve("b", {40}, {1})}, 50 * kMiB);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(s.status().message().find("50.00 MiB"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("70.00 MiB"), std::string::npos) << s.status().message();
  EXPECT_EQ(s.status().message().find('\n'), std::string::npos);
  EXPECT_FALSE(split_budget({curve("bad", {20, 10}, {1, 2})}, 100 * kMiB).ok());      // not increasing
  EXPECT_FALSE(split_budget({curve("w", {10}, {1}, 0)}, 100 * kMiB).ok());            // weight 0
  EXPECT_FALSE(split_budget({curve("q", {10}, {1})}, 100 * kMiB, 0).ok());            // quantum 0
  EXPECT_TRUE(split_budget({}, 0).ok());
}

TEST(ModelCurve, RisesFromTheMinimalPoolToEveryBlobResident) {
  std::mt19937_64 rng(3);
  const ExecutionPlan plan = test::fake_plan(test::random_sizes(&rng, 40), &rng);
  // Short kernels: copies dominate, so the minimal pool is slower than all resident.
  const std::vector<double> ms = test::random_times(plan, &rng, 0.001, 0.02);
  SimOptions sim;
  for (bool prefetched : {false, true}) {
    sim.prefetched = prefetched;
    const Expected<ModelCurve> c = model_curve("fake", plan, test::h100_like(), ms, 2 * kMiB, 12, sim);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    ASSERT_GE(c->budget_bytes.size(), 2u);
    EXPECT_EQ(c->budget_bytes.back(), plan.weight_bytes());
    for (size_t i = 1; i < c->budget_bytes.size(); ++i) EXPECT_GT(c->budget_bytes[i], c->budget_bytes[i - 1]);
    double kernels = 0;
    for (double t : ms) kernels += t;
    EXPECT_GE(c->predicted_ms.back(), kernels);  // all resident: the kernels (+ launches)
    for (double t : c->predicted_ms) EXPECT_GE(t, kernels);
    // (Prefetched, a minimal pool holding most of these weights may hide every copy.)
    if (prefetched)
      EXPECT_GE(c->predicted_ms.front(), c->predicted_ms.back());
    else
      EXPECT_GT(c->predicted_ms.front(), c->predicted_ms.back());
  }
}

TEST(Prefetch, LeadingUnitsWaitForNothingAndOnlyHelp) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    const ExecutionPlan plan = test::fake_plan(test::random_sizes(&rng, 10 + int(rng() % 40)), &rng);
    const std::vector<double> ms = test::random_times(plan, &rng, 0.005, 0.3);
    StreamOptions so;
    so.layout = trial % 3 == 0 ? PoolLayout::kSlots : PoolLayout::kRing;
    so.budget_bytes = trial % 2 ? 0 : plan.weight_bytes() / 2;
    const Expected<StreamPlan> sp = plan_streaming(plan, test::h100_like(), so);
    if (!sp.ok()) continue;  // a half budget below the minimal pool
    const int n = sp->prefetch_units();
    ASSERT_GE(n, sp->resident ? 0 : 1) << "trial " << trial;
    for (int u = 0; u < n; ++u) EXPECT_TRUE(sp->unit_waits[size_t(u)].empty());
    if (!sp->resident && n < int(sp->units.size())) {
      EXPECT_FALSE(sp->unit_waits[size_t(n)].empty());
    }
    int64_t bytes = 0;
    for (int u = 0; u < n; ++u) bytes += sp->units[size_t(u)].bytes;
    EXPECT_EQ(sp->prefetch_bytes(), bytes);
    SimOptions plain, pre;
    pre.prefetched = true;
    const SimResult a = simulate(plan, *sp, test::h100_like(), ms, plain);
    const SimResult b = simulate(plan, *sp, test::h100_like(), ms, pre);
    EXPECT_TRUE(b.violations.empty()) << "trial " << trial << ": " << b.violations[0];
    EXPECT_LE(b.latency_ms, a.latency_ms + 1e-9) << "trial " << trial;
    for (int u = 0; u < n; ++u) EXPECT_EQ(b.copy_end_ms[size_t(u)], 0.0);
  }
}

}  // namespace
}  // namespace dlr
