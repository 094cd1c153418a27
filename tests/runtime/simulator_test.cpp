// Simulator: every planned stream is safe (no violations) on random skewed layer
// sequences, budgets, profiles and layer times; latency predictions match closed
// forms in compute- and copy-bound cases and never grow with the budget; the checks
// do catch broken plans. The two-stage (read -> kernel) model: a closed-form case,
// random plans are safe and bounded below by compute and reads, a broken wait is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "loaders/network_desc.h"
#include "runtime/compile/plan.h"
#include "runtime/streaming/read_plan.h"
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





// 50 GB/s at every size, free host calls: closed-form latencies.
CopyProfile flat_profile() {
  CopyProfile p;
  p.name = "flat";
  p.pinned = {{1, 50}, {int64_t(1) << 40, 50}};
  p.queue = {{int64_t(1) << 40, 1000}};
  p.call_us = 0;
  p.chunk_bytes = 4 << 20;
  p.min_unit_bytes = 1 << 20;
  return p;
}

StreamPlan must_plan(const ExecutionPlan& plan, const CopyProfile& prof, int64_t budget,
                     PoolLayout layout = PoolLayout::kSlots) {
  StreamOptions o;
  o.budget_bytes = budget;
  o.layout = layout;
  Expected<StreamPlan> s = plan_streaming(plan, prof, o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? *s : StreamPlan();
}

bool has_violation(const SimResult& r, const std::string& what) {
  for (const std::string& v : r.violations)
    if (v.find(what) != std::string::npos) return true;
  return false;
}

TEST(Simulator, RandomPlansAreSafe) {
  std::mt19937_64 rng(7);
  const CopyProfile profiles[] = {h100_like(), jetson_like()};
  int sims = 0, blocked = 0, rings = 0;
  for (int iter = 0; iter < 250; ++iter) {
    std::uniform_int_distribution<int> nconv(1, 120);
    const ExecutionPlan plan = fake_plan(random_sizes(&rng, nconv(rng)), &rng);
    const int64_t total = plan.weight_bytes();
    int64_t largest = 0;
    for (const WeightBlob& w : plan.weights) largest = std::max(largest, w.bytes);
    std::uniform_int_distribution<int64_t> between(2 * largest, std::max(2 * largest, total - 1));
    std::uniform_int_distribution<int64_t> above(total, 2 * total);
    std::uniform_real_distribution<double> hi_ms(0.01, 3.0);
    for (const CopyProfile& prof : profiles) {
      for (int64_t budget : {int64_t(0), between(rng), above(rng)})
        for (PoolLayout layout : {PoolLayout::kSlots, PoolLayout::kAuto}) {
        SCOPED_TRACE("iter " + std::to_string(iter) + " " + prof.name + " budget " + std::to_string(budget) + " " +
                     pool_layout_name(layout));
        const StreamPlan s = must_plan(plan, prof, budget, layout);
        if (HasFatalFailure() || s.order.empty()) return;
        const std::vector<double> times = random_times(plan, &rng, 0.002, hi_ms(rng));
        SimOptions so;
        so.launch_us = std::uniform_real_distribution<double>(0.0, 10.0)(rng);
        const SimResult r = simulate(plan, s, prof, times, so);
        ++sims;
        ASSERT_TRUE(r.violations.empty()) << r.violations.size() << " violations, first: " << r.violations.front();
        // every unit once, every layer once
        std::vector<int> units(s.units.size(), 0), layers(plan.steps.size(), 0);
        for (const StreamAction& a : s.order) ++(a.kind == StreamAction::Kind::kCopy ? units : layers)[size_t(a.index)];
        for (int c : layers) ASSERT_EQ(c, 1);
        for (int c : units) ASSERT_EQ(c, s.resident ? 0 : 1);
        // the pool within the budget, the host within the queue
        ASSERT_LE(r.max_pool_bytes_in_use, s.pool_bytes);
        ASSERT_LE(s.pool_bytes, budget == 0 ? s.minimal_pool_bytes : budget);
        if (budget == 0 && s.layout == PoolLayout::kRing) {
          ASSERT_LE(s.pool_bytes, 2 * largest + 1000000);
        }
        rings += s.layout == PoolLayout::kRing && !s.resident;
        ASSERT_LE(r.max_queued_copies, prof.name == "h100-like" ? 1020 : 14);
        // lower bounds of the latency: all compute, and (streaming) all copies
        double compute = 0, copies = 0;
        for (double t : times) compute += t;
        for (const TransferUnit& u : s.units) copies += prof.copy_ms(u.bytes);
        ASSERT_GE(r.latency_ms + 1e-9, compute);
        if (s.resident) {
          ASSERT_EQ(s.streamed_bytes(), 0);
          ASSERT_EQ(r.max_queued_copies, 0);
          ASSERT_EQ(r.stall_ms, 0);
          for (double t : r.copy_end_ms) ASSERT_EQ(t, 0);
        } else {
          ASSERT_GE(r.latency_ms + 1e-9, copies);
          ASSERT_GE(r.max_pool_bytes_in_use, s.slot_bytes);
          if (s.layout == PoolLayout::kRing) {
            ASSERT_TRUE(s.groups.empty());
          }
          for (size_t u = 0; u < s.units.size(); ++u) ASSERT_LE(r.copy_start_ms[u], r.copy_end_ms[u]);
        }
        blocked += r.host_blocked_ms > 0;
      }
    }
  }
  std::printf("%d simulations without violations (%d with the host blocked in a copy call, %d rings)\n", sims,
              blocked, rings);
  EXPECT_GT(blocked, 0);
  EXPECT_GT(rings, 300);  // the Jetson-like queue does block; the checks ran under pressure
}

// Without host costs the timing is a max-plus system in which a larger K only moves
// copy waits to earlier layers, so latency cannot grow. With host costs a larger K
// enqueues some copies earlier, which could delay a launch where the host (not the
// GPU) is the bottleneck; the planner trickles ahead copies (2 per launch) so that
// this does not happen on these sequences either.
TEST(Simulator, LatencyNeverGrowsWithMoreSlots) {
  for (bool host_costs : {false, true}) {
    for (uint64_t seed = 1; seed <= 60; ++seed) {
      std::mt19937_64 rng(seed);
      const ExecutionPlan plan = fake_plan(random_sizes(&rng, 250), &rng);
      const std::vector<double> times = random_times(plan, &rng, 0.002, 0.15);
      const int64_t total = plan.weight_bytes();
      int64_t largest = 0;
      for (const WeightBlob& w : plan.weights) largest = std::max(largest, w.bytes);
      for (CopyProfile prof : {h100_like(), jetson_like()}) {
        SimOptions so;
        if (!host_costs) prof.call_us = so.launch_us = 0;
        double prev = 1e300;
        std::string curve;
        for (int k = 2;; ++k) {
          const int64_t budget = std::min(total, int64_t(k) * largest);
          const StreamPlan s = must_plan(plan, prof, budget);
          const SimResult r = simulate(plan, s, prof, times, so);
          ASSERT_TRUE(r.violations.empty()) << r.violations.front();
          const double slack = 1e-9;
          EXPECT_LE(r.latency_ms, prev + slack)
              << "seed " << seed << " " << prof.name << " host costs " << host_costs << " K=" << k << ": " << curve;
          curve += std::to_string(r.latency_ms) + (s.resident ? " (resident)" : " ");
          prev = std::min(prev, r.latency_ms);
          if (s.resident) break;
        }
        if (seed == 1)
          std::printf("%s, host costs %d: latency by K = 2, 3, ...: %s\n", prof.name.c_str(), int(host_costs),
                      curve.c_str());
      }
    }
  }
}

TEST(Simulator, ComputeBoundLatencyIsComputePlusFirstCopy) {
  const ExecutionPlan plan = fake_plan(std::vector<int64_t>(20, kMiB), nullptr);
  const CopyProfile prof = flat_profile();
  const StreamPlan s = must_plan(plan, prof, 0);
  ASSERT_EQ(s.slots, 2);
  SimOptions so;
  so.launch_us = 0;
  const SimResult r = simulate(plan, s, prof, std::vector<double>(20, 1.0), so);
  ASSERT_TRUE(r.violations.empty()) << r.violations.front();
  EXPECT_NEAR(r.latency_ms, 20.0 + prof.copy_ms(kMiB), 1e-9);
  EXPECT_NEAR(r.stall_ms, prof.copy_ms(kMiB), 1e-9);
  EXPECT_EQ(r.max_pool_bytes_in_use, 2 * kMiB);
}

TEST(Simulator, CopyBoundLatencyIsAllCopiesPlusLastLayer) {
  const CopyProfile prof = flat_profile();
  SimOptions so;
  so.launch_us = 0;
  {  // equal blobs: closed form
    const ExecutionPlan plan = fake_plan(std::vector<int64_t>(30, 4 * kMiB), nullptr);
    const StreamPlan s = must_plan(plan, prof, 0);
    const SimResult r = simulate(plan, s, prof, std::vector<double>(30, 0.001), so);
    ASSERT_TRUE(r.violations.empty()) << r.violations.front();
    EXPECT_NEAR(r.latency_ms, 30 * prof.copy_ms(4 * kMiB) + 0.001, 1e-9);
  }
  {  // skewed blobs, more slots: the copy engine never idles
    std::mt19937_64 rng(11);
    const ExecutionPlan plan = fake_plan(random_sizes(&rng, 60), nullptr);
    const StreamPlan s = must_plan(plan, prof, plan.weight_bytes() / 2);
    ASSERT_FALSE(s.resident);
    const SimResult r = simulate(plan, s, prof, std::vector<double>(plan.steps.size(), 0.0005), so);
    ASSERT_TRUE(r.violations.empty()) << r.violations.front();
    double copies = 0;
    for (const TransferUnit& u : s.units) copies += prof.copy_ms(u.bytes);
    EXPECT_NEAR(r.latency_ms, copies + 0.0005, 1e-6 * copies);
  }
}

TEST(Simulator, ChecksCatchBrokenPlans) {
  std::mt19937_64 rng(5);
  const ExecutionPlan plan = fake_plan(std::vector<int64_t>(12, 4 * kMiB), nullptr);
  const CopyProfile prof = flat_profile();
  const StreamPlan good = must_plan(plan, prof, 0);
  ASSERT_EQ(good.slots, 2);
  const std::vector<double> slow(plan.steps.size(), 1.0), fast(plan.steps.size(), 0.001);
  ASSERT_TRUE(simulate(plan, good, prof, slow).violations.empty());
  ASSERT_TRUE(simulate(plan, good, prof, fast).violations.empty());

  {  // no slot waits: copies overwrite slots still being read
    StreamPlan bad = good;
    for (auto& w : bad.unit_waits) w.clear();
    EXPECT_TRUE(has_violation(simulate(plan, bad, prof, slow), "overwrites slot"));
  }
  {  // a layer launched before its copy is enqueued: it does not wait and reads stale bytes
    StreamPlan bad = good;
    auto copy5 = std::find_if(bad.order.begin(), bad.order.end(), [](const StreamAction& a) {
      return a.kind == StreamAction::Kind::kCopy && a.index == 5;
    });
    const StreamAction a = *copy5;
    bad.order.erase(copy5);
    auto layer5 = std::find_if(bad.order.begin(), bad.order.end(), [](const StreamAction& x) {
      return x.kind == StreamAction::Kind::kLayer && x.index == 5;
    });
    bad.order.insert(layer5 + 1, a);
    EXPECT_TRUE(has_violation(simulate(plan, bad, prof, fast), "before its weights land"));
  }
  {  // a copy enqueued before the layer it waits on
    StreamPlan bad = good;
    bad.order.clear();
    for (size_t u = 0; u < bad.units.size(); ++u) bad.order.push_back({StreamAction::Kind::kCopy, int(u)});
    for (size_t l = 0; l < plan.steps.size(); ++l) bad.order.push_back({StreamAction::Kind::kLayer, int(l)});
    const SimResult r = simulate(plan, bad, prof, slow);
    EXPECT_TRUE(has_violation(r, "is enqueued before layer"));
    EXPECT_TRUE(has_violation(r, "overwrites slot"));
  }
  {  // a pool smaller than what the slots use
    StreamPlan bad = good;
    bad.pool_bytes = good.slot_bytes;
    EXPECT_TRUE(has_violation(simulate(plan, bad, prof, slow), "pool:"));
  }
  {  // missing and duplicated actions
    StreamPlan bad = good;
    bad.order.pop_back();
    bad.order.push_back(bad.order.front());
    const SimResult r = simulate(plan, bad, prof, slow);
    EXPECT_TRUE(has_violation(r, "never launched"));
    EXPECT_TRUE(has_violation(r, "enqueued twice"));
  }
  {  // no checks: no violations recorded
    StreamPlan bad = good;
    for (auto& w : bad.unit_waits) w.clear();
    SimOptions so;
    so.check = false;
    EXPECT_TRUE(simulate(plan, bad, prof, slow, so).violations.empty());
  }
}

TEST(Simulator, ChecksCatchBrokenRingPlans) {
  // 12 blobs of 4 MiB: minimal ring 8 MiB + 1 MB -> 8 MiB; units of at most 4 MiB.
  const ExecutionPlan plan = fake_plan(std::vector<int64_t>(12, 4 * kMiB), nullptr);
  const CopyProfile prof = flat_profile();
  const StreamPlan good = must_plan(plan, prof, 0, PoolLayout::kRing);
  ASSERT_EQ(good.layout, PoolLayout::kRing);
  ASSERT_EQ(good.pool_bytes, 8 * kMiB);
  const std::vector<double> slow(plan.steps.size(), 1.0), fast(plan.steps.size(), 0.001);
  ASSERT_TRUE(simulate(plan, good, prof, slow).violations.empty());
  ASSERT_TRUE(simulate(plan, good, prof, fast).violations.empty());
  {  // no waits: copies overwrite ring bytes still being read
    StreamPlan bad = good;
    for (auto& w : bad.unit_waits) w.clear();
    const SimResult r = simulate(plan, bad, prof, slow);
    EXPECT_TRUE(has_violation(r, "overwrites blob")) << (r.violations.empty() ? "" : r.violations.front());
    EXPECT_TRUE(has_violation(r, "pool:"));
  }
  {  // waiting one layer too early is not enough
    StreamPlan bad = good;
    for (auto& w : bad.unit_waits)
      if (!w.empty() && w[0] > 0) w[0] -= 1;
    EXPECT_TRUE(has_violation(simulate(plan, bad, prof, slow), "overwrites blob"));
  }
  {  // a blob placed where the ring still holds another one
    StreamPlan bad = good;
    bad.blob_pool_offset[3] = bad.blob_pool_offset[2];
    EXPECT_TRUE(has_violation(simulate(plan, bad, prof, slow), "overwrites blob"));
  }
}

TEST(Simulator, HostBlocksOnAShallowQueue) {
  // Jetson-like: 1 MiB chunks queue 2 deep; an 8 MiB layer needs 8 copies before its launch.
  const ExecutionPlan plan = fake_plan({64 << 10, 8 * kMiB, 64 << 10, 8 * kMiB, 8 * kMiB}, nullptr);
  const CopyProfile prof = jetson_like();
  const StreamPlan s = must_plan(plan, prof, 0);
  const SimResult r = simulate(plan, s, prof, std::vector<double>(plan.steps.size(), 0.1));
  ASSERT_TRUE(r.violations.empty()) << r.violations.front();
  EXPECT_GT(r.host_blocked_ms, 0);
  EXPECT_LE(r.max_queued_copies, 14);  // 64 KB copies may queue 14 deep, 1 MiB ones only behind <= 1 other
  EXPECT_GT(r.stall_ms, 0);
}

TEST(Simulator, ModelLayerTimes) {
  Expected<NetworkDesc> net = parse_network_cfg_text(
      "[net]\nwidth=32\nheight=32\nchannels=3\n"
      "[convolutional]\nfilters=8\nsize=3\nstride=1\npad=1\nactivation=leaky\n"
      "[maxpool]\nsize=2\nstride=2\n"
      "[dropout]\nprobability=0.5\n",
      "tiny");
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  Expected<ExecutionPlan> plan = build_plan(*net, PlannerOptions());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const std::vector<double> ms = model_layer_ms(*net, *plan, 1000.0, 100.0, 5.0);
  ASSERT_EQ(ms.size(), 3u);
  EXPECT_NEAR(ms[0], net->layers[0].gflops() / 1000.0 * 1e3 + 0.005, 1e-12);
  const double pool_bytes = (8.0 * 32 * 32 + 8.0 * 16 * 16) * 4;  // read + write, f32
  EXPECT_NEAR(ms[1], pool_bytes / 100e9 * 1e3 + 0.005, 1e-12);
  // The dropout aliases its input: a no-op step without copies launches nothing, so
  // it costs nothing (not even the per-kernel 5 us).
  ASSERT_TRUE(plan->steps[2].no_op);
  ASSERT_TRUE(plan->steps[2].copies.empty());
  EXPECT_EQ(ms[2], 0.0);
}


// ---------------------------------------------------------------- two stages

TEST(SimulatorTwoStage, ClosedForm) {
  // Three 64 KiB blobs, one read each, staging for two: read 2 reuses read 0's bytes
  // and waits for layer 0. Reads 1 ms, layers 2 ms:
  //   read0 [0,1] L0 [1,3]; read1 [1,2] L1 [3,5]; read2 [3,4] (after L0) L2 [5,7].
  const ExecutionPlan plan = fake_plan({65536, 65536, 65536}, nullptr);
  ReadOptions ro;
  ro.unit_bytes = 65536;
  Expected<ReadPlan> r = plan_reads_two_stage(plan, {}, ro);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->units.size(), 3u);
  ASSERT_EQ(r->staging_bytes, 2 * 65536);
  ASSERT_EQ(r->units[2].wait_layer, 0);
  const SimResult s = simulate_two_stage(plan, *r, {2, 2, 2}, [](int64_t) { return 1.0; });
  EXPECT_TRUE(s.violations.empty()) << s.violations[0];
  EXPECT_DOUBLE_EQ(s.latency_ms, 7.0);
  EXPECT_DOUBLE_EQ(s.stall_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.read_start_ms[2], 3.0);
  EXPECT_DOUBLE_EQ(s.read_end_ms[2], 4.0);
  EXPECT_DOUBLE_EQ(s.layer_start_ms[2], 5.0);
  // Slow reads (5 ms): read-bound, reads back to back (read2's wait, L0 ending at 7,
  // is before read1 lands at 10), then the last layer: 3 x 5 + 2.
  const SimResult slow = simulate_two_stage(plan, *r, {2, 2, 2}, [](int64_t) { return 5.0; });
  EXPECT_TRUE(slow.violations.empty());
  EXPECT_DOUBLE_EQ(slow.latency_ms, 17.0);
}

TEST(SimulatorTwoStage, RandomPlansAreSafeAndBoundedByComputeAndReads) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 100; ++iter) {
    std::vector<int64_t> sizes;
    const int n = 1 + int(rng() % 30);
    for (int i = 0; i < n; ++i) sizes.push_back(kReadAlign * int64_t(1 + rng() % 64));
    const ExecutionPlan plan = fake_plan(sizes, &rng);
    ReadOptions ro;
    ro.unit_bytes = kReadAlign * int64_t(1 + rng() % 128);
    if (rng() % 2) ro.staging_bytes = kReadAlign * int64_t(256 + rng() % 256);
    Expected<ReadPlan> r = plan_reads_two_stage(plan, {}, ro);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const std::vector<double> ms = random_times(plan, &rng, 0.01, 2.0);
    const double per_mib = std::exp(std::uniform_real_distribution<double>(-3, 3)(rng));
    auto read_ms = [&](int64_t bytes) { return double(bytes) / double(kMiB) * per_mib; };
    const SimResult s = simulate_two_stage(plan, *r, ms, read_ms);
    ASSERT_TRUE(s.violations.empty()) << s.violations[0];
    double compute = 0, reads = 0;
    for (double t : ms) compute += t;
    for (const ReadUnit& u : r->units) reads += read_ms(u.bytes);
    EXPECT_GE(s.latency_ms + 1e-9, std::max(compute, reads));
    EXPECT_LE(s.latency_ms, compute + reads + 1e-9);  // never worse than fully serial
    for (size_t u = 1; u < r->units.size(); ++u) EXPECT_GE(s.read_start_ms[u] + 1e-12, s.read_end_ms[u - 1]);
  }
}

TEST(SimulatorTwoStage, ChecksCatchAMissingWait) {
  const ExecutionPlan plan = fake_plan({65536, 65536, 65536}, nullptr);
  ReadOptions ro;
  ro.unit_bytes = 65536;
  Expected<ReadPlan> r = plan_reads_two_stage(plan, {}, ro);
  ASSERT_TRUE(r.ok());
  ReadPlan broken = *r;
  broken.units[2].wait_layer = -1;  // read 2 would overwrite blob 0 while layer 0 runs
  const SimResult s = simulate_two_stage(plan, broken, {2, 2, 2}, [](int64_t) { return 1.0; });
  EXPECT_TRUE(has_violation(s, "read 2 overwrites blob 0")) << (s.violations.empty() ? "" : s.violations[0]);
  ReadPlan wrong_unit = *r;
  wrong_unit.layer_read_unit[1] = 0;  // layer 1 would not wait for the read bringing its blob
  const SimResult w = simulate_two_stage(plan, wrong_unit, {2, 2, 2}, [](int64_t) { return 1.0; });
  EXPECT_TRUE(has_violation(w, "blob 1 comes with read 1")) << (w.violations.empty() ? "" : w.violations[0]);
}

TEST(SimulatorTwoStage, ReadAheadClosedForm) {
  // Three 64 KiB blobs, one read each, staging for all three: every unit may be read
  // ahead; unit k waits for layer k of the previous inference. Reads 1 ms, layers 2 ms.
  // Inference 1: read0 [0,1] L0 [1,3] read1 [1,2] L1 [3,5] read2 [2,3] L2 [5,7]. Ahead:
  // read0' after L0 [3,4], read1' after L1 [5,6], read2' after L2 [7,8]; inference 2
  // starts at 7: L0' [7,9], L1' [9,11], L2' [11,13]: 6 ms, no stall. Without read ahead
  // read0' [7,8] stalls L0' by 1 ms: 7 ms.
  const ExecutionPlan plan = fake_plan({65536, 65536, 65536}, nullptr);
  ReadOptions ro;
  ro.unit_bytes = 65536;
  ro.staging_bytes = 3 * 65536;
  Expected<ReadPlan> r = plan_reads_two_stage(plan, {}, ro);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->units.size(), 3u);
  ASSERT_EQ(r->read_ahead_units, 3);
  for (int k = 0; k < 3; ++k) ASSERT_EQ(r->units[size_t(k)].wait_layer_prev, plan.weights[size_t(k)].layer);
  const auto one_ms = [](int64_t) { return 1.0; };
  const SimResult on = simulate_two_stage(plan, *r, {2, 2, 2}, one_ms, TwoStageSimOptions{2, true});
  EXPECT_TRUE(on.violations.empty()) << on.violations[0];
  EXPECT_DOUBLE_EQ(on.latency_ms, 6.0);
  EXPECT_DOUBLE_EQ(on.stall_ms, 0.0);
  EXPECT_DOUBLE_EQ(on.read_start_ms[0], -4.0);
  EXPECT_DOUBLE_EQ(on.read_start_ms[1], -2.0);
  EXPECT_DOUBLE_EQ(on.read_start_ms[2], 0.0);
  const SimResult off = simulate_two_stage(plan, *r, {2, 2, 2}, one_ms, TwoStageSimOptions{2, false});
  EXPECT_TRUE(off.violations.empty()) << off.violations[0];
  EXPECT_DOUBLE_EQ(off.latency_ms, 7.0);
  EXPECT_DOUBLE_EQ(off.stall_ms, 1.0);
  // One inference is the single-inference simulation.
  const SimResult single = simulate_two_stage(plan, *r, {2, 2, 2}, one_ms, TwoStageSimOptions{1, true});
  EXPECT_DOUBLE_EQ(single.latency_ms, simulate_two_stage(plan, *r, {2, 2, 2}, one_ms).latency_ms);
}

TEST(SimulatorTwoStage, ReadAheadChecksCatchAMissingWaitOnThePreviousInference) {
  // Minimal staging: read 2 reuses read 0's bytes, so the next inference's read 0 must
  // wait for layer 2 (the last reader of read 2) of the previous one.
  const ExecutionPlan plan = fake_plan({65536, 65536, 65536}, nullptr);
  ReadOptions ro;
  ro.unit_bytes = 65536;
  Expected<ReadPlan> r = plan_reads_two_stage(plan, {}, ro);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->read_ahead_units, 2);
  ASSERT_EQ(r->units[0].wait_layer_prev, plan.weights[2].layer);
  const auto one_ms = [](int64_t) { return 1.0; };
  const SimResult ok = simulate_two_stage(plan, *r, {2, 2, 2}, one_ms, TwoStageSimOptions{3, true});
  EXPECT_TRUE(ok.violations.empty()) << ok.violations[0];
  ReadPlan broken = *r;
  broken.units[0].wait_layer_prev = -1;
  const SimResult s = simulate_two_stage(plan, broken, {2, 2, 2}, one_ms, TwoStageSimOptions{2, true});
  EXPECT_TRUE(has_violation(s, "inference 2: read 0 overwrites blob 2 (layer " +
                                   std::to_string(plan.weights[2].layer) + " of the previous inference)"))
      << (s.violations.empty() ? "" : s.violations[0]);
}

TEST(SimulatorTwoStage, ReadAheadOnRandomPlansIsSafe) {
  std::mt19937_64 rng(23);
  int faster = 0;
  for (int iter = 0; iter < 100; ++iter) {
    std::vector<int64_t> sizes;
    const int n = 1 + int(rng() % 30);
    for (int i = 0; i < n; ++i) sizes.push_back(kReadAlign * int64_t(1 + rng() % 64));
    const ExecutionPlan plan = fake_plan(sizes, &rng);
    ReadOptions ro;
    ro.unit_bytes = kReadAlign * int64_t(1 + rng() % 128);
    if (rng() % 2) ro.staging_bytes = kReadAlign * int64_t(256 + rng() % 512);
    Expected<ReadPlan> r = plan_reads_two_stage(plan, {}, ro);
    if (!r.ok()) continue;  // staging below the minimum for this plan
    const std::vector<double> ms = random_times(plan, &rng, 0.01, 2.0);
    const double per_mib = std::exp(std::uniform_real_distribution<double>(-3, 3)(rng));
    auto read_ms = [&](int64_t bytes) { return double(bytes) / double(kMiB) * per_mib; };
    const SimResult on = simulate_two_stage(plan, *r, ms, read_ms, TwoStageSimOptions{4, true});
    ASSERT_TRUE(on.violations.empty()) << on.violations[0];
    const SimResult off = simulate_two_stage(plan, *r, ms, read_ms, TwoStageSimOptions{4, false});
    ASSERT_TRUE(off.violations.empty()) << off.violations[0];
    double compute = 0;
    for (double t : ms) compute += t;
    EXPECT_GE(on.latency_ms + 1e-9, compute);
    for (size_t u = 0; u < r->units.size(); ++u) {
      EXPECT_GE(off.read_start_ms[u] + 1e-9, 0.0);
      if (int(u) >= r->read_ahead_units) {
        EXPECT_GE(on.read_start_ms[u] + 1e-9, 0.0) << "read " << u << " of the next inference read ahead";
      }
    }
    if (on.latency_ms + 1e-9 < off.latency_ms) ++faster;
  }
  EXPECT_GT(faster, 10);
}

// SimOptions::prefetch_limit_bytes: only the leading prefetch units whose cumulative
// bytes stay within the limit land at time 0; 0 lands none (the plain inference), -1
// every prefetch unit. A larger limit lands at least as many units and is never slower.
TEST(Simulator, PrefetchLimitLandsOnlyTheLeadingUnitsWithinIt) {
  std::mt19937_64 rng(17);
  int partial = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const ExecutionPlan plan = fake_plan(random_sizes(&rng, 10 + int(rng() % 60)), &rng);
    const std::vector<double> ms = random_times(plan, &rng, 0.002, 0.2);
    const CopyProfile prof = trial % 4 == 3 ? jetson_like() : h100_like();
    StreamOptions so;
    so.layout = PoolLayout::kRing;
    so.budget_bytes = trial % 2 ? 0 : plan.weight_bytes() / 2;
    const Expected<StreamPlan> sp = plan_streaming(plan, prof, so);
    if (!sp.ok() || sp->resident) continue;
    const int n = sp->prefetch_units();
    ASSERT_GE(n, 1) << "trial " << trial;
    std::vector<int64_t> cum = {0};  // bytes of units [0, k)
    for (int u = 0; u < n; ++u) cum.push_back(cum.back() + sp->units[size_t(u)].bytes);
    // Limits in increasing order (-1, no limit, last), each with the units it lands.
    std::vector<std::pair<int64_t, int>> limits = {{0, 0}, {cum[1] - 1, 0}, {cum[1], 1}};
    const int half = (n + 1) / 2;
    limits.push_back({cum[size_t(half)] + (cum[size_t(half) + (half < n ? 1 : 0)] - cum[size_t(half)]) / 2, half});
    limits.push_back({cum[size_t(n)], n});
    limits.push_back({-1, n});
    SimOptions plain;
    const SimResult none = simulate(plan, *sp, prof, ms, plain);
    double prev_ms = none.latency_ms;
    int prev_landed = 0;
    for (const auto& [limit, expect] : limits) {
      SimOptions o;
      o.prefetched = true;
      o.prefetch_limit_bytes = limit;
      const SimResult r = simulate(plan, *sp, prof, ms, o);
      ASSERT_TRUE(r.violations.empty()) << "trial " << trial << ": " << r.violations.front();
      int landed = 0;
      while (landed < int(r.copy_end_ms.size()) && r.copy_end_ms[size_t(landed)] == 0.0) ++landed;
      EXPECT_EQ(landed, expect) << "trial " << trial << " limit " << limit;
      EXPECT_GE(landed, prev_landed) << "trial " << trial << " limit " << limit;
      EXPECT_LE(r.latency_ms, prev_ms + 1e-9) << "trial " << trial << " limit " << limit;
      if (limit == 0) {
        EXPECT_DOUBLE_EQ(r.latency_ms, none.latency_ms);
      }
      if (landed > 0 && landed < n) ++partial;
      prev_ms = r.latency_ms;
      prev_landed = landed;
    }
  }
  EXPECT_GT(partial, 20);  // the partial limits did cut the prefix
}

}  // namespace
}  // namespace dlr
