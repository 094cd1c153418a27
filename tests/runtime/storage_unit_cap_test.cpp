// Weights from storage on a GPU (three stages: one read per transfer unit) with a host
// budget below what the ring's own largest unit would need: the planner caps the
// transfer units (StreamOptions::max_unit_bytes) so that two reads fit the staging,
// instead of refusing the budget. yolov4-tiny fp16 on a hand-made H100-like target,
// sliced into 1 MiB slots (device pool 2 MiB).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/streaming/simulator.h"
#include "tests/common/test_paths.h"
#include "tests/common/weight_fixtures.h"

namespace dlr {
namespace {

SessionOptions storage_options(int64_t host_budget) {
  SessionOptions o = test::cuda_plan_options(Precision::kFP16, -1, int64_t(1) << 20, SliceBy::kChannels);
  o.mode = WeightMode::kStream;
  o.weights_from = WeightsFrom::kStorage;
  o.zero_copy = 0;
  o.host_budget = host_budget;
  return o;
}

int64_t largest_unit(const StreamPlan& s) {
  int64_t n = 0;
  for (const TransferUnit& u : s.units) n = std::max(n, u.bytes);
  return n;
}

// The budget's plan: within the budget, every unit read once, units and reads within
// half the staging, the same device pool as without a budget, and a plan the simulator
// finds safe.
void expect_within(const CompiledModel& m, int64_t host_budget, int64_t pool_bytes, const std::vector<double>& ms) {
  ASSERT_FALSE(m.reads.two_stage);
  EXPECT_LE(m.reads.staging_bytes, host_budget);
  EXPECT_LE(2 * m.reads.largest_unit(), m.reads.staging_bytes);
  EXPECT_LE(2 * largest_unit(m.stream), host_budget);
  EXPECT_EQ(m.reads.units.size(), m.stream.units.size());
  EXPECT_EQ(m.reads.read_bytes(), m.stream.total_weight_bytes - m.stream.resident_bytes);
  EXPECT_EQ(m.stream.pool_bytes, pool_bytes);
  if (ms.empty()) return;
  SimOptions so;
  so.reads = &m.reads;
  so.read_ms = [](int64_t bytes) { return double(bytes) / 2.0e6; };  // 2 GB/s
  const SimResult r = simulate(m.plan, m.stream, m.target.copy_profile, ms, so);
  EXPECT_TRUE(r.violations.empty()) << r.violations.front();
}

TEST(StorageUnitCap, HostBudgetBelowTheRingsLargestReadCapsTheUnits) {
  auto net = parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  const Target t = test::h100_like_target();
  auto free = compile(*net, t, storage_options(0));  // host budget 0: the minimum staging
  ASSERT_TRUE(free.ok()) << free.status().to_string();
  const int64_t minimum = free->reads.min_staging_bytes;
  ASSERT_GE(minimum, int64_t(1) << 20);
  const std::vector<double> ms = model_layer_ms(*net, free->plan, 200e3, 2000, 3.0);
  // Just below what the uncapped units need, and half of it.
  for (int64_t budget : {minimum - (int64_t(64) << 10), minimum / 2}) {
    for (bool timed : {false, true}) {
      SCOPED_TRACE(std::to_string(budget) + (timed ? " bytes, units searched with kernel times" : " bytes, equal chunks"));
      auto m = timed ? compile(*net, t, storage_options(budget), ms) : compile(*net, t, storage_options(budget));
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      expect_within(*m, budget, free->stream.pool_bytes, timed ? ms : std::vector<double>());
      EXPECT_LT(largest_unit(m->stream), largest_unit(free->stream));
      EXPECT_GT(m->stream.units.size(), free->stream.units.size());
    }
  }
  // A budget too small for two reads of the smallest unit (4096 bytes): refused with one
  // line naming both sizes.
  auto tiny_budget = compile(*net, t, storage_options(4096));
  ASSERT_FALSE(tiny_budget.ok());
  EXPECT_NE(tiny_budget.status().message().find("host budget 0.00 MiB is below the minimum for reading from storage, "
                                                "0.01 MiB (2 x the largest read, 0.00 MiB)"),
            std::string::npos)
      << tiny_budget.status().message();
  // A budget that holds the uncapped reads plans them as before.
  auto roomy = compile(*net, t, storage_options(2 * minimum));
  ASSERT_TRUE(roomy.ok()) << roomy.status().to_string();
  EXPECT_EQ(roomy->stream.units.size(), free->stream.units.size());
  EXPECT_EQ(largest_unit(roomy->stream), largest_unit(free->stream));
}

}  // namespace
}  // namespace dlr
