// Fixtures shared by the tests of a Runtime's joint plans: a RingModel as the runtime
// hands it to the shared-ring split (CUDA target, ring layout, the h100-like profile).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "runtime/multi/ring_split.h"
#include "tests/runtime/stream_fixtures.h"

namespace dlr::test {

// A model streaming through the shared ring with 2 MiB mapping units; arena staging off
// (tests that stage turn it on). `plan` must outlive the result.
inline RingModel ring_model(const std::string& name, const ExecutionPlan& plan, std::vector<double> ms,
                            bool prefetched, double weight = 1) {
  RingModel m;
  m.name = name;
  m.weight = weight;
  m.plan = &plan;
  m.layer_ms = std::move(ms);
  m.target.device = DeviceKind::kCUDA;
  m.target.map_granularity = 2 * kMiB;
  m.target.copy_profile = h100_like();
  m.options.device = DeviceKind::kCUDA;
  m.options.mode = WeightMode::kStream;
  m.options.weight_pool = PoolLayout::kRing;
  m.options.prefetch_next = prefetched;
  m.options.arena_staging = false;
  return m;
}

}  // namespace dlr::test
