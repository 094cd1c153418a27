// yolov4 @608 for the planner tests: its network, CUDA fp16 execution plan (weights in
// the given format) and kernel times from the cost model. Needs ../shared
// (test::required_shared_file says why when it is absent).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/streaming/simulator.h"
#include "tests/common/test_paths.h"

namespace dlr::test {

struct Yolov4Plan {
  NetworkDesc net;
  ExecutionPlan plan;
  std::vector<double> ms;  // per step, from model_layer_ms
};

// yolov4.cfg at 608x608; false (with a failure or the skip message) when it is absent
// or does not parse.
inline bool yolov4_608_net(NetworkDesc* out) {
  const std::string cfg = required_shared_file("models/yolov4.cfg");
  if (cfg.empty()) return false;
  CfgOptions co;
  co.width = co.height = 608;
  Expected<NetworkDesc> net = parse_network_cfg(cfg, co);
  EXPECT_TRUE(net.ok()) << net.status().to_string();
  if (!net.ok()) return false;
  *out = std::move(*net);
  return true;
}

// False (with a failure or the skip message) when the cfg is absent or does not plan.
inline bool yolov4_608_plan(WeightFormat format, Yolov4Plan* out) {
  if (!yolov4_608_net(&out->net)) return false;
  SessionOptions so;
  so.precision = Precision::kFP16;
  so.weight_format = format;
  Expected<ExecutionPlan> plan = build_plan(out->net, planner_options(DeviceKind::kCUDA, so));
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  if (!plan.ok()) return false;
  out->ms = model_layer_ms(out->net, *plan, 120000.0, 2500.0, 4.0);
  out->plan = std::move(*plan);
  return true;
}

// A CUDA target with 2 MiB ring mapping units and the built-in h100 copy profile.
inline Target h100_cuda_target() {
  Target t;
  t.device = DeviceKind::kCUDA;
  t.name = "test";
  t.map_granularity = int64_t(2) << 20;
  t.copy_profile = *CopyProfile::builtin("h100");
  return t;
}

// yolov4 @608 streamed on CUDA in fp16 with weights in `format`, at the minimum pool.
inline SessionOptions yolov4_608_min_options(WeightFormat format) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.mode = WeightMode::kStream;
  o.precision = Precision::kFP16;
  o.weight_format = format;
  o.weight_budget = WeightBudget::min();
  o.width = o.height = 608;
  return o;
}

}  // namespace dlr::test
