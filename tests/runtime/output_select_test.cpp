// The plan's outputs selected on the device (plan.h, OutputSelect; output_select.cpp):
// which heads, their capacity and block layout, the option that turns it off, auto's
// choice by batch, the CPU plan without it, and the plan's text and JSON carrying it.
#include <gtest/gtest.h>

#include <tuple>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/compile/plan.h"
#include "runtime/options.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

Expected<ExecutionPlan> tiny_plan(DeviceKind device, Decode decode, int batch = 1) {
  Expected<NetworkDesc> net = parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  if (!net.ok()) return net.status();
  SessionOptions o;
  o.device = device;
  o.precision = device == DeviceKind::kCUDA ? Precision::kFP16 : Precision::kFP32;
  o.thresh = 0.3f;
  o.batch = batch;
  o.decode = decode;
  return build_plan(*net, planner_options(device, o));
}

TEST(OutputSelect, EveryYoloHeadOfACudaPlan) {
  Expected<ExecutionPlan> p = tiny_plan(DeviceKind::kCUDA, Decode::kGpu, 2);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->options.select_thresh, 0.3f);
  ASSERT_EQ(p->selects.size(), 2u);
  ASSERT_EQ(p->output_layers.size(), 2u);
  // yolov4-tiny @416: 13x13 and 26x26 cells, 3 anchors, 80 classes.
  const int cells[] = {13 * 13, 26 * 26};
  const int capacity[] = {64, 26 * 26 * 3 / 16};
  int64_t at = 0;
  for (size_t k = 0; k < 2; ++k) {
    const OutputSelect& s = p->selects[k];
    EXPECT_EQ(s.layer, p->output_layers[k]);
    EXPECT_EQ(p->select_of(s.layer), &s);
    EXPECT_EQ(s.anchors, 3);
    EXPECT_EQ(s.entries, 85);
    EXPECT_EQ(s.cells, cells[k]);
    EXPECT_EQ(s.capacity, capacity[k]);
    EXPECT_EQ(s.offset, at);
    EXPECT_EQ(s.offset % 256, 0);
    EXPECT_EQ(s.keys_offset % 256, 0);
    EXPECT_EQ(s.rows_offset % 256, 0);
    EXPECT_GE(s.keys_offset, 2 * 4);                                     // two counts
    EXPECT_GE(s.rows_offset, s.keys_offset + 2 * int64_t(s.capacity) * 4);  // two images' keys
    EXPECT_GE(s.bytes, s.rows_offset + 2 * int64_t(s.capacity) * s.entries * 4);
    at += s.bytes;
  }
  EXPECT_EQ(p->select_bytes(), at);
  EXPECT_EQ(p->select_of(0), nullptr);
  EXPECT_NE(p->to_text().find("2 [yolo] heads' candidates picked on the device, up to 64/126 rows"), std::string::npos)
      << p->to_text();
}

// auto: the device picks them for a batch of several images only.
TEST(OutputSelect, AutoPicksOnTheDeviceForBatches) {
  for (int batch : {1, 2, 8}) {
    Expected<ExecutionPlan> p = tiny_plan(DeviceKind::kCUDA, Decode::kAuto, batch);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ(p->selects.size(), batch > 1 ? 2u : 0u) << "batch " << batch;
    EXPECT_EQ(p->options.select_thresh, batch > 1 ? 0.3f : -1.f) << "batch " << batch;
  }
  EXPECT_EQ(SessionOptions().decode, Decode::kAuto);
}

TEST(OutputSelect, NoneWhenOffOrOnTheCpu) {
  for (const auto& [device, decode, batch] :
       {std::tuple{DeviceKind::kCUDA, Decode::kCpu, 1}, std::tuple{DeviceKind::kCUDA, Decode::kCpu, 8},
        std::tuple{DeviceKind::kCPU, Decode::kGpu, 1}, std::tuple{DeviceKind::kCPU, Decode::kAuto, 8}}) {
    Expected<ExecutionPlan> p = tiny_plan(device, decode, batch);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_LT(p->options.select_thresh, 0.f);
    EXPECT_TRUE(p->selects.empty());
    EXPECT_EQ(p->select_bytes(), 0);
    EXPECT_EQ(p->to_text().find("picked on the device"), std::string::npos);
  }
}

TEST(OutputSelect, TheThresholdDoesNotChangeThePlanText) {
  Expected<NetworkDesc> net = parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  ASSERT_TRUE(net.ok());
  SessionOptions a, b;
  a.device = b.device = DeviceKind::kCUDA;
  a.thresh = 0.25f;
  b.thresh = 0.5f;
  // The text is the model's identity in the kernel caches (conv_algo_cache.h).
  EXPECT_EQ(build_plan(*net, planner_options(DeviceKind::kCUDA, a))->to_text(),
            build_plan(*net, planner_options(DeviceKind::kCUDA, b))->to_text());
}

}  // namespace
}  // namespace dlr
