// Planner invariants on every shared cfg and option combination, and the proof
// that activation reuse is safe: the same network with and without reuse (and
// with and without in-place concatenation) gives bit-identical outputs.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/compile/arena_placement.h"
#include "runtime/compile/compile.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/compile/plan.h"
#include "runtime/session.h"
#include "tests/common/cfg_walk.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

const char* kCfgs[] = {"models/yolov4.cfg",      "models/yolov4-tiny.cfg", "models/yolov4-csp.cfg",
                       "models/yolov4x-mish.cfg", "models/yolov3.cfg",      "models/yolov3-tiny.cfg",
                       "models/yolov7-tiny.cfg",  "weights/yolo-fastest-1.1.cfg"};

bool slices_packed(const PlannerOptions& o) { return o.layout == Layout::kNCHW && o.batch == 1; }

// Checks every structural invariant of a plan; returns the number of failures.
void check_plan(const NetworkDesc& net, const ExecutionPlan& plan, const std::string& what) {
  SCOPED_TRACE(what);
  const PlannerOptions& o = plan.options;
  ASSERT_EQ(plan.steps.size(), net.layers.size());
  auto check_view = [&](const ViewRef& v, int step, const Shape3* shape) {
    ASSERT_GE(v.buffer, 0);
    ASSERT_LT(v.buffer, int(plan.buffers.size()));
    const Buffer& b = plan.buffer(v);
    EXPECT_GE(v.c_offset, 0) << "step " << step;
    EXPECT_LE(v.c_offset + v.c, b.c) << "step " << step;
    EXPECT_LE(b.first_step, step) << "step " << step << " uses b" << v.buffer << " before it is live";
    EXPECT_GE(b.last_step, step) << "step " << step << " uses b" << v.buffer << " after it dies";
    if (shape) {
      EXPECT_EQ(v.c, shape->c) << "step " << step;
      EXPECT_EQ(b.h, shape->h) << "step " << step;
      EXPECT_EQ(b.w, shape->w) << "step " << step;
    }
  };
  for (const Step& s : plan.steps) {
    const LayerDesc& l = net.layers[size_t(s.layer)];
    EXPECT_EQ(s.kind, l.kind);
    if (s.output.buffer < 0) {
      // A route its only reader, a 1x1 conv, reads part by part (conv_over_concat).
      EXPECT_TRUE(o.conv_over_concat && !o.keep_all_outputs) << "step " << s.layer;
      EXPECT_EQ(s.kind, LayerKind::kRoute);
      EXPECT_TRUE(s.no_op && s.copies.empty()) << "step " << s.layer;
    } else {
      check_view(s.output, s.layer, &l.out);
    }
    // The layers read: a conv over a concatenation reads the route's inputs.
    std::vector<int> srcs = l.inputs;
    if (s.kind == LayerKind::kConv && s.inputs.size() > 1) {
      EXPECT_TRUE(o.conv_over_concat);
      const LayerDesc& r = net.layers[size_t(l.inputs[0])];
      ASSERT_EQ(r.kind, LayerKind::kRoute) << "step " << s.layer;
      EXPECT_LT(plan.steps[size_t(r.index)].output.buffer, 0) << "step " << s.layer;
      srcs = r.route().layers;
      const ConvParams& cp = l.conv();
      EXPECT_TRUE(cp.size == 1 && cp.stride_x == 1 && cp.stride_y == 1 && cp.padding == 0 && cp.groups == 1);
      for (const ViewRef& v : s.inputs) EXPECT_EQ(v.c, plan.buffer(v).c) << "step " << s.layer << ": a part is a slice";
    }
    ASSERT_EQ(s.inputs.size(), op_role(s.kind) == OpRole::kRoute || op_role(s.kind) == OpRole::kAlias ? 0 : srcs.size())
        << "step " << s.layer;
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      const int src = srcs[i];
      const Shape3 in_shape = src < 0 ? net.input_shape() : net.layers[size_t(src)].out;
      check_view(s.inputs[i], s.layer, &in_shape);
      if (!s.no_op) {
        // A computing step never reads the bytes it writes, but for a shortcut in place
        // (PlannerOptions::in_place): its first input is its output, whole.
        const ViewRef& in = s.inputs[i];
        const bool in_place = s.kind == LayerKind::kShortcut && i == 0 && in.buffer == s.output.buffer &&
                              in.c_offset == 0 && s.output.c_offset == 0 && in.c == s.output.c &&
                              in.c == plan.buffer(in).c;
        if (in_place) {
          EXPECT_TRUE(o.in_place && !o.keep_all_outputs);
        }
        if (in.buffer == s.output.buffer && !in_place) {
          const bool disjoint = in.c_offset + in.c <= s.output.c_offset || s.output.c_offset + s.output.c <= in.c_offset;
          EXPECT_TRUE(disjoint) << "step " << s.layer << " reads and writes the same channels";
        }
      }
    }
    for (const auto& cp : s.copies) {
      check_view(cp.first, s.layer, nullptr);
      check_view(cp.second, s.layer, nullptr);
      EXPECT_EQ(cp.first.c, cp.second.c);
    }
    if (s.kind == LayerKind::kConv) {
      ASSERT_GE(s.weight, 0);
      EXPECT_EQ(plan.weights[size_t(s.weight)].layer, s.layer);
      if (!o.conv_strided_io && !slices_packed(o)) {
        for (const ViewRef& v : {s.inputs[0], s.output}) {
          const Buffer& b = plan.buffer(v);
          EXPECT_TRUE(v.c_offset == 0 && v.c == b.c) << "conv " << s.layer << " gets a strided slice b" << v.buffer;
        }
      }
    }
  }
  for (int y : plan.output_layers) {
    const ViewRef& v = plan.layer_out[size_t(y)];
    const Buffer& b = plan.buffer(v);
    EXPECT_EQ(b.dtype, DType::kF32);
    EXPECT_EQ(b.layout, Layout::kNCHW) << "yolo outputs are read by the host as NCHW";
    EXPECT_TRUE(v.c_offset == 0 && v.c == b.c);
    EXPECT_EQ(b.last_step, int(plan.steps.size()));
  }
  // Memory safety: buffers alive at the same time never share bytes.
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer& a = plan.buffers[i];
    EXPECT_EQ(a.offset % o.alignment, 0);
    EXPECT_LE(a.offset + a.bytes, plan.arena_bytes);
    EXPECT_EQ(a.bytes, int64_t(o.batch) * a.c * a.h * a.w * int64_t(dtype_size(a.dtype)));
    for (size_t j = i + 1; j < plan.buffers.size(); ++j) {
      const Buffer& b = plan.buffers[j];
      const bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
      const bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(live_together && overlap) << "b" << a.id << " and b" << b.id << " overlap while both live";
    }
  }
  EXPECT_LE(plan.arena_bytes, plan.naive_bytes);
}

TEST(Planner, InvariantsOnEverySharedCfg) {
  DLR_REQUIRE_SHARED_DIR();
  int checked = 0;
  for (const char* rel : kCfgs) {
    const std::string path = test::required_shared_file(rel);  // missing: a failure
    if (path.empty()) continue;
    auto net = parse_network_cfg(path);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    for (int batch : {1, 3})
      for (Layout layout : {Layout::kNCHW, Layout::kNHWC})
        for (bool concat : {true, false})
          for (bool strided : {true, false})
            for (int keep_fuse = 0; keep_fuse < 4; ++keep_fuse) {
              const bool keep = keep_fuse & 1, fuse = keep_fuse & 2;
              PlannerOptions o;
              o.in_place = fuse;
              o.conv_over_concat = fuse && layout == Layout::kNHWC;
              o.batch = batch;
              o.layout = layout;
              o.activation_dtype = layout == Layout::kNHWC ? DType::kF16 : DType::kF32;
              o.concat_in_place = concat;
              o.conv_strided_io = strided;
              o.keep_all_outputs = keep;
              auto plan = build_plan(*net, o);
              ASSERT_TRUE(plan.ok()) << plan.status().to_string();
              check_plan(*net, *plan,
                         std::string(rel) + " batch " + std::to_string(batch) + " " + layout_name(layout) +
                             (concat ? " concat" : "") + (strided ? " strided" : "") + (keep ? " keep" : "") +
                             (fuse ? " in-place, conv over concat" : ""));
              ++checked;
            }
  }
  EXPECT_EQ(checked, int(sizeof(kCfgs) / sizeof(kCfgs[0])) * 2 * 2 * 2 * 2 * 4);
}

// The placement reaches the floor (the most bytes live at one step) on every shared
// cfg in the CUDA fp16 layout; yolov4 @608 used to need 56.41 MiB where 45.12 are live
// at most (largest-first, lowest-offset placement alone).
TEST(Planner, ArenaReachesTheLiveBytesFloor) {
  DLR_REQUIRE_SHARED_DIR();
  for (const char* rel : kCfgs) {
    const std::string path = test::required_shared_file(rel);
    if (path.empty()) continue;
    auto net = parse_network_cfg(path);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
      PlannerOptions o;
      o.layout = layout;
      o.activation_dtype = layout == Layout::kNHWC ? DType::kF16 : DType::kF32;
      o.conv_strided_io = layout == Layout::kNCHW;
      for (bool over_concat : {false, layout == Layout::kNHWC}) {
        o.conv_over_concat = over_concat;
        auto plan = build_plan(*net, o);
        ASSERT_TRUE(plan.ok()) << plan.status().to_string();
        EXPECT_EQ(plan->arena_bytes, live_lower_bound(plan->buffers, o.alignment))
            << rel << " " << layout_name(layout) << (over_concat ? " conv over concat" : "");
      }
    }
  }
  auto v4 = parse_network_cfg(test::required_shared_file("models/yolov4.cfg"), CfgOptions{608, 608});
  ASSERT_TRUE(v4.ok());
  PlannerOptions o;
  o.layout = Layout::kNHWC;
  o.activation_dtype = DType::kF16;
  o.conv_strided_io = false;
  auto plan = build_plan(*v4, o);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->arena_bytes, 4 * int64_t(304) * 304 * 64 * 2) << "four 304x304x64 fp16 outputs live at step 9";
  // The CUDA fp16 plan: the CSP route's 1x1 conv reads the route's two parts (no
  // 128-channel concat buffer at step 9) and the residual add at step 7 runs in place,
  // so the most live is step 6: layers 2, 4 and 6 (304x304x64) and layer 5 (x32).
  SessionOptions so;
  so.device = DeviceKind::kCUDA;
  so.precision = Precision::kFP16;
  const PlannerOptions cuda = planner_options(DeviceKind::kCUDA, so);
  ASSERT_TRUE(cuda.conv_over_concat && cuda.in_place);
  auto fused = build_plan(*v4, cuda);
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(fused->arena_bytes, 7 * int64_t(304) * 304 * 32 * 2) << fused->to_text();
  EXPECT_EQ(fused->arena_bytes, live_lower_bound(fused->buffers, cuda.alignment));
  const Step& route = fused->steps[9];  // route 8,2
  EXPECT_LT(route.output.buffer, 0);
  ASSERT_EQ(fused->steps[10].inputs.size(), 2u);
  EXPECT_EQ(fused->steps[10].inputs[0].buffer, fused->layer_out[8].buffer);
  EXPECT_EQ(fused->steps[10].inputs[1].buffer, fused->layer_out[2].buffer);
  EXPECT_EQ(fused->steps[7].output.buffer, fused->steps[7].inputs[0].buffer) << "the residual add in place";
  int over_concat = 0;
  for (const Step& s : fused->steps) over_concat += s.kind == LayerKind::kConv && s.inputs.size() > 1;
  EXPECT_EQ(over_concat, 10) << "every multi-input route of yolov4 feeds one 1x1 conv";
}

// Hand-made lifetimes. The second set is the shape of yolov4's first layers: largest
// first with the lowest offset (the planner's only order before) needs 5120 bytes there,
// where at most 4096 are live at one step.
TEST(Planner, PlacementTriesOrdersBeyondLargestFirst) {
  auto buf = [](int id, int64_t bytes, int first, int last) {
    Buffer b;
    b.id = id;
    b.bytes = bytes;
    b.first_step = first;
    b.last_step = last;
    return b;
  };
  std::vector<Buffer> bs = {buf(0, 4096, 0, 0), buf(1, 3072, 0, 1), buf(2, 3072, 1, 2), buf(3, 3072, 2, 2)};
  const int64_t arena = place_buffers(&bs, 1024);
  EXPECT_EQ(arena, live_lower_bound(bs, 1024));
  std::vector<Buffer> v4 = {buf(0, 2048, 0, 1), buf(1, 1024, 1, 4), buf(2, 1024, 2, 9), buf(3, 1024, 4, 7),
                            buf(4, 512, 5, 6),  buf(5, 1024, 6, 7), buf(6, 1024, 7, 8), buf(7, 1024, 8, 9),
                            buf(8, 2048, 9, 10), buf(9, 1024, 10, 11)};
  EXPECT_EQ(place_buffers(&v4, 256), 4096);
  for (size_t i = 0; i < v4.size(); ++i)
    for (size_t j = i + 1; j < v4.size(); ++j) {
      const Buffer &a = v4[i], &b = v4[j];
      const bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
      const bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(live_together && overlap) << i << " " << j;
    }
  std::vector<Buffer> none;
  EXPECT_EQ(place_buffers(&none, 256), 0);
  EXPECT_EQ(live_lower_bound(none, 256), 0);
}

TEST(Planner, Yolov4SppConcatIsInPlaceAndMemoryIsReused) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4.cfg");
  auto net = parse_network_cfg(cfg);
  ASSERT_TRUE(net.ok());
  auto plan = build_plan(*net, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  const Step& spp = plan->steps[113];  // route 112,110,108,107
  EXPECT_TRUE(spp.no_op);
  EXPECT_TRUE(spp.copies.empty());
  for (int producer : {112, 110, 108, 107}) EXPECT_EQ(plan->layer_out[size_t(producer)].buffer, spp.output.buffer);
  EXPECT_EQ(plan->layer_out[107].c_offset, 1536);
  // Reuse: far below the naive sum (yolov4 @608 fp32 outputs sum to ~1 GiB).
  EXPECT_LT(plan->arena_bytes * 4, plan->naive_bytes) << plan->to_text();
  EXPECT_EQ(plan->weights.size(), 110u);
}

TEST(Planner, RouteWithGroupsIsAViewUnlessAConvCannotReadIt) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4-tiny.cfg");
  auto net = parse_network_cfg(cfg);
  ASSERT_TRUE(net.ok());
  auto plan = build_plan(*net, PlannerOptions{});
  ASSERT_TRUE(plan.ok());
  const Step& r = plan->steps[3];  // route -1 groups=2 group_id=1 over a 64-channel conv
  EXPECT_TRUE(r.no_op);
  EXPECT_EQ(r.output.buffer, plan->layer_out[2].buffer);
  EXPECT_EQ(r.output.c_offset, 32);
  EXPECT_EQ(r.output.c, 32);
  PlannerOptions o;
  o.layout = Layout::kNHWC;
  o.conv_strided_io = false;
  auto p2 = build_plan(*net, o);
  ASSERT_TRUE(p2.ok());
  EXPECT_FALSE(p2->steps[3].no_op);
  ASSERT_EQ(p2->steps[3].copies.size(), 1u);
}

TEST(Planner, RejectsBadOptions) {
  NetworkDesc empty;
  EXPECT_FALSE(build_plan(empty, PlannerOptions{}).ok());
  DLR_REQUIRE_FILE(cfg, "models/yolov4-tiny.cfg");
  auto net = parse_network_cfg(cfg);
  ASSERT_TRUE(net.ok());
  PlannerOptions o;
  o.batch = 0;
  auto p = build_plan(*net, o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "batch 0 is out of range (1..1024)");
}

// Runs `cfg` on the CPU with the given plan options and returns every yolo output.
std::vector<std::vector<float>> run_cpu(const std::string& cfg, const std::string& weights, int size, int batch,
                                        bool concat, bool keep) {
  SessionOptions so;
  so.width = size;
  so.height = size;
  so.batch = batch;
  so.concat_in_place = concat;
  so.keep_all_outputs = keep;
  auto s = Session::open(cfg, weights, so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  Engine& e = (*s)->engine();
  const auto in = test::random_input(batch, 3, size, size, 7);
  EXPECT_TRUE(e.set_input(in.data(), batch).ok());
  EXPECT_TRUE(e.run().ok());
  std::vector<std::vector<float>> outs;
  for (int y : (*s)->network().yolo_layers())
    for (int b = 0; b < batch; ++b) {
      const int64_t n = (*s)->network().layers[size_t(y)].out.count();
      outs.emplace_back(e.output(y, b), e.output(y, b) + n);
    }
  return outs;
}

TEST(Planner, ReuseAndInPlaceConcatDoNotChangeOutputs) {
  DLR_REQUIRE_SHARED_DIR();
  int ran = 0;
  for (const char* rel : {"models/yolov4.cfg", "models/yolov4-tiny.cfg", "models/yolov7-tiny.cfg",
                          "weights/yolo-fastest-1.1.cfg"}) {
    const std::string cfg = test::required_shared_file(rel);  // missing: a failure
    if (cfg.empty()) continue;
    SCOPED_TRACE(rel);
    const std::string w = test::synthetic_weights(cfg);
    ASSERT_FALSE(w.empty());
    const int size = 160;  // small input keeps the CPU runs short; the graph is the same
    const auto base = run_cpu(cfg, w, size, 2, true, false);
    const auto keep = run_cpu(cfg, w, size, 2, true, true);
    const auto copy = run_cpu(cfg, w, size, 2, false, false);
    ASSERT_FALSE(base.empty());
    ASSERT_EQ(base.size(), keep.size());
    ASSERT_EQ(base.size(), copy.size());
    for (size_t i = 0; i < base.size(); ++i) {
      EXPECT_EQ(0, std::memcmp(base[i].data(), keep[i].data(), base[i].size() * 4)) << "output " << i;
      EXPECT_EQ(0, std::memcmp(base[i].data(), copy[i].data(), base[i].size() * 4)) << "output " << i;
    }
    ++ran;
  }
  EXPECT_EQ(ran, 4);
}

}  // namespace
}  // namespace dlr

namespace dlr {
namespace {

// cuDNN rejects NHWC channel slices (docs/architecture.md): in every plan the CUDA
// engine makes for a tensor-core precision (NHWC, conv_strided_io off), every conv
// reads and writes whole buffers. Checked on every Darknet cfg that loads, at 256 px.
// (yolov4-sam-mish-csp-reorg-bfm once had a conv reading a concat slice through a
// whole-input [route] view: the H100 run refused it with NOT_SUPPORTED.)
TEST(Planner, NhwcConvsNeverTouchChannelSlices) {
  if (test::shared_dir().empty()) GTEST_SKIP() << "shared data not found: models/darknet-cfg";
  const std::string dir = test::shared_dir() + "/models/darknet-cfg";
  SessionOptions so;
  so.device = DeviceKind::kCUDA;
  so.precision = Precision::kFP16;
  const PlannerOptions po = planner_options(DeviceKind::kCUDA, so);
  ASSERT_EQ(po.layout, Layout::kNHWC);
  ASSERT_FALSE(po.conv_strided_io);
  int planned = 0;
  for (const std::string& name : test::list_cfgs(dir)) {
    auto net = parse_network_cfg(dir + "/" + name, CfgOptions{256, 256});
    if (!net.ok()) continue;  // the cfg table test accounts for cfgs that do not load
    auto plan = build_plan(*net, po);
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status().to_string();
    ++planned;
    for (const Step& s : plan->steps) {
      if (s.kind != LayerKind::kConv) continue;
      std::vector<ViewRef> views = s.inputs;  // several: a conv over a concatenation's parts
      views.push_back(s.output);
      for (const ViewRef& v : views) {
        const Buffer& b = plan->buffer(v);
        EXPECT_TRUE(v.c_offset == 0 && v.c == b.c)
            << name << " layer " << s.layer << " (cfg line " << s.cfg_line << "): conv touches channels ["
            << v.c_offset << ", " << v.c_offset + v.c << ") of a " << b.c << "-channel buffer";
      }
    }
  }
  EXPECT_GE(planned, 45);  // 48 of the 87 load at 256 px (2026-11-24)
}

}  // namespace
}  // namespace dlr
