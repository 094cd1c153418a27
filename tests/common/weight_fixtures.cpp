#include "tests/common/weight_fixtures.h"

#include <gtest/gtest.h>

#include <utility>

#include "loaders/synthetic_weights.h"
#include "tests/common/test_paths.h"

namespace dlr::test {

bool open_tiny_weights(OpenedWeights* m, const std::string& name) {
  const std::string cfg = shared_file("models/yolov4-tiny.cfg");
  if (cfg.empty()) return false;
  CfgOptions o;
  o.width = o.height = 256;
  Expected<NetworkDesc> net = parse_network_cfg(cfg, o);
  EXPECT_TRUE(net.ok());
  if (!net.ok()) return false;
  m->net = std::move(net).value();
  const std::string path = temp_dir() + "/" + name;
  EXPECT_TRUE(write_synthetic_weights(m->net, path, SyntheticOptions{}).ok());
  m->file = WeightsFile::open(path, m->net);
  EXPECT_TRUE(m->file.ok());
  return m->file.ok();
}

SessionOptions cuda_plan_options(Precision precision, int layout, int64_t slot, SliceBy by, WeightFormat format) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = precision;
  o.layout = layout;
  o.slot_bytes = slot;
  o.slice_by = by;
  o.weight_format = format;
  return o;
}

ExecutionPlan prepared_plan(const NetworkDesc& net, const SessionOptions& o) {
  Expected<ExecutionPlan> plan = plan_for_prepare(net, o);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return plan.ok() ? std::move(plan).value() : ExecutionPlan();
}

Target h100_like_target() {
  Target t;
  t.device = DeviceKind::kCUDA;
  t.name = "hand-made H100-like target";
  t.memory_bytes = int64_t(80) << 30;
  t.map_granularity = int64_t(2) << 20;
  t.copy_profile = *CopyProfile::builtin("h100");
  return t;
}

}  // namespace dlr::test
