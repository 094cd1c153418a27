// The per-layer report and trace (tools/common/report.h) over an engine's timings: a tail
// copy (the next inference's unit, CopyTiming::next_inference) counts as copy-engine work
// but is not one of its first layer's copies, and the trace names it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/engine.h"
#include "tests/common/null_engine.h"
#include "tests/common/test_paths.h"
#include "tools/common/report.h"

namespace dlr::tools {
namespace {

// An engine that only reports the timings it is given.
class TimingsEngine : public test::NullEngine {
 public:
  std::vector<LayerTiming> layers;
  std::vector<CopyTiming> copies;
  std::vector<LayerTiming> layer_timings() const override { return layers; }
  std::vector<CopyTiming> copy_timings() const override { return copies; }
  double last_run_ms() const override { return 1.0; }
};

LayerTiming layer(int i, double start, double end) {
  LayerTiming t;
  t.layer = t.step = i;
  t.start_ms = t.ready_ms = start;
  t.end_ms = end;
  return t;
}

CopyTiming copy(int unit, double start, double end, bool next) {
  CopyTiming c;
  c.unit = unit;
  c.first_layer = 0;
  c.bytes = 1 << 20;
  c.start_ms = start;
  c.end_ms = end;
  c.next_inference = next;
  return c;
}

TEST(Report, TailCopiesCountAsCopiesButNotAsTheirFirstLayers) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  auto net = parse_network_cfg(cfg);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  TimingsEngine e;
  e.layers = {layer(0, 0.1, 0.4), layer(1, 0.4, 0.7), layer(2, 0.7, 1.0)};
  e.copies = {copy(0, 0.0, 0.1, false), copy(0, 0.8, 0.9, true)};
  const nlohmann::json j = layer_report_json(*net, e);
  EXPECT_DOUBLE_EQ(j["layers"][0]["copy_start_ms"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["layers"][0]["copy_end_ms"].get<double>(), 0.1);  // not the tail copy's 0.9
  EXPECT_EQ(j["totals"]["copied_bytes"].get<int64_t>(), int64_t(2) << 20);
  EXPECT_NEAR(report_totals(e).copy_busy_ms, 0.2, 1e-12);
  const std::string trace = chrome_trace(*net, e).dump();
  EXPECT_NE(trace.find("unit 0 (L0) for the next inference"), std::string::npos);
  EXPECT_NE(trace.find("\"unit 0 (L0)\""), std::string::npos);
}

}  // namespace
}  // namespace dlr::tools
