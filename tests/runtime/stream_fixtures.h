// Fixtures shared by the streaming tests: fake execution plans with yolov4-like
// skewed blob sizes, random layer times, and hand-made copy profiles.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/compile/arena_placement.h"
#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"

namespace dlr::test {

constexpr int64_t kMiB = int64_t(1) << 20;

inline // One conv per blob size with 0-2 non-conv steps (some no-op) before each when rng is set.
ExecutionPlan fake_plan(const std::vector<int64_t>& blob_bytes, std::mt19937_64* rng) {
  ExecutionPlan p;
  std::uniform_int_distribution<int> extra(0, 2), coin(0, 2);
  auto add_step = [&](LayerKind kind, bool no_op, int weight) {
    Step s;
    s.index = s.layer = int(p.steps.size());
    s.kind = kind;
    s.no_op = no_op;
    s.weight = weight;
    p.steps.push_back(s);
  };
  for (int64_t bytes : blob_bytes) {
    const int n_extra = rng ? extra(*rng) : 0;
    for (int e = 0; e < n_extra; ++e) {
      const int c = coin(*rng);
      add_step(c == 0 ? LayerKind::kRoute : c == 1 ? LayerKind::kShortcut : LayerKind::kUpsample, c == 0, -1);
    }
    WeightBlob w;
    w.step = w.layer = int(p.steps.size());
    w.bytes = bytes;
    add_step(LayerKind::kConv, false, int(p.weights.size()));
    p.weights.push_back(w);
  }
  return p;
}

inline // 4 KB .. 20 MB, log-skewed towards small blobs like yolov4.
std::vector<int64_t> random_sizes(std::mt19937_64* rng, int n) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double lo = std::log(4096.0), hi = std::log(20e6);
  std::vector<int64_t> v;
  for (int i = 0; i < n; ++i)
    v.push_back(align_up(int64_t(std::exp(lo + (hi - lo) * std::pow(u(*rng), 1.6))), 256));
  return v;
}

inline std::vector<double> random_times(const ExecutionPlan& p, std::mt19937_64* rng, double lo_ms, double hi_ms) {
  std::uniform_real_distribution<double> u(std::log(lo_ms), std::log(hi_ms));
  std::vector<double> t;
  for (const Step& s : p.steps) t.push_back(s.no_op ? 0.0 : std::exp(u(*rng)));
  return t;
}

// Activation buffers for a fake plan: one per step, 64 KiB .. 16 MiB, most read by the
// next step or two, some kept for many steps (routes); placed as the planner places them.
inline void add_random_buffers(ExecutionPlan* plan, std::mt19937_64* rng) {
  const int n = int(plan->steps.size());
  std::uniform_real_distribution<double> size(std::log(64.0 * 1024), std::log(16.0 * kMiB));
  std::uniform_int_distribution<int> near(1, 2), far(3, 30), kind(0, 4);
  for (int i = -1; i < n; ++i) {
    Buffer b;
    b.id = int(plan->buffers.size());
    b.bytes = align_up(int64_t(std::exp(size(*rng))), 256);
    b.first_step = i;
    b.last_step = std::min(n, i + (kind(*rng) == 0 ? far(*rng) : near(*rng)));
    plan->buffers.push_back(b);
  }
  plan->arena_bytes = place_buffers(&plan->buffers, 256);
}

inline CopyProfile h100_like() {
  CopyProfile p;
  p.name = "h100-like";
  p.pinned = {{64 << 10, 16}, {1 << 20, 46}, {4 << 20, 53}, {16 << 20, 55}};
  p.queue = {{int64_t(1) << 40, 1020}};
  p.call_us = 2;
  p.chunk_bytes = 4 << 20;
  p.min_unit_bytes = 1 << 20;
  return p;
}

inline CopyProfile jetson_like() {
  CopyProfile p;
  p.name = "jetson-like";
  p.pinned = {{64 << 10, 4}, {1 << 20, 10}, {16 << 20, 12}};
  p.queue = {{64 << 10, 14}, {1 << 20, 2}, {2 << 20, 1}, {int64_t(1) << 40, 0}};
  p.call_us = 10;
  p.chunk_bytes = 1 << 20;
  p.min_unit_bytes = 256 << 10;
  return p;
}

}  // namespace dlr::test
