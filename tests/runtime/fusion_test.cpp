// Shortcuts folded into the conv before them (runtime/compile/fusion.h): which ones, what
// the steps say, the plan's JSON, and on the CPU engine the same bits as the unfolded plan.
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"
#include "loaders/synthetic_weights.h"
#include "loaders/weights_file.h"
#include "runtime/compile/compile.h"
#include "runtime/compile/fusion.h"
#include "runtime/cache/fused_plan_cache.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/weight_source.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

PlannerOptions cuda_fp16(bool fold) {
  PlannerOptions o;
  o.layout = Layout::kNHWC;
  o.activation_dtype = DType::kF16;
  o.weight_dtype = DType::kF16;
  o.conv_strided_io = false;
  o.conv_over_concat = true;
  o.fold_shortcuts = fold;
  return o;
}

// yolov4.cfg from ../shared (the tests that use it skip without it).
Expected<NetworkDesc> yolov4(const CfgOptions& o = {}) {
  return parse_network_cfg(test::required_shared_file("models/yolov4.cfg"), o);
}

TEST(Fusion, EveryShortcutOfYolov4RunsInTheConvBeforeIt) {
  DLR_REQUIRE_SHARED_DIR();
  auto net = yolov4();
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  auto plan = build_plan(*net, cuda_fp16(true));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  const ExecutionPlan before = *plan;
  int shortcuts = 0;
  for (const Step& s : plan->steps) shortcuts += s.kind == LayerKind::kShortcut ? 1 : 0;
  EXPECT_EQ(shortcuts, 23);
  EXPECT_EQ(fold_shortcuts(&*plan), 23);
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    const Step& s = plan->steps[i];
    const Step& b = before.steps[i];
    EXPECT_EQ(s.output.buffer, b.output.buffer) << i;  // nothing moved
    if (s.kind == LayerKind::kShortcut) {
      ASSERT_EQ(s.folded_into, int(i) - 1) << i;
      EXPECT_TRUE(s.no_op);
      const Step& conv = plan->steps[i - 1];
      EXPECT_EQ(conv.kind, LayerKind::kConv);
      EXPECT_EQ(conv.residual.buffer, s.inputs[1].buffer);
      EXPECT_EQ(conv.residual_activation, std::get<ShortcutParams>(s.params).activation);
      const Buffer& r = plan->buffer(conv.residual);
      EXPECT_LT(r.first_step, conv.index);
      EXPECT_GE(r.last_step, s.index);
      EXPECT_NE(conv.residual.buffer, conv.output.buffer);
    } else {
      EXPECT_EQ(s.folded_into, -1) << i;
      EXPECT_EQ(s.no_op, b.no_op) << i;
      if (s.kind != LayerKind::kConv || plan->steps[i + 1].kind != LayerKind::kShortcut) {
        EXPECT_LT(s.residual.buffer, 0) << i;
      }
    }
  }
  EXPECT_EQ(plan->arena_bytes, before.arena_bytes);
  // Printed: the conv reads the residual, the shortcut names its conv.
  const std::string text = plan->to_text();
  EXPECT_NE(text.find("shortcuts folded into convs on"), std::string::npos);
  EXPECT_NE(text.find("   7 shortcut  b6 (in step 6)"), std::string::npos) << text.substr(0, 2000);
}

TEST(Fusion, NothingIsFoldedWhenTheOptionIsOffOrOutputsAreKept) {
  DLR_REQUIRE_SHARED_DIR();
  auto net = yolov4();
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  auto off = build_plan(*net, cuda_fp16(false));
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(fold_shortcuts(&*off), 0);
  // Without the in-place merge a shortcut writes a buffer of its own: nothing to fold.
  PlannerOptions o = cuda_fp16(true);
  o.in_place = false;
  auto apart = build_plan(*net, o);
  ASSERT_TRUE(apart.ok());
  EXPECT_EQ(fold_shortcuts(&*apart), 0);
  // A sliced conv is not folded: its shortcut stays a step.
  auto sliced = build_plan(*net, cuda_fp16(true));
  ASSERT_TRUE(sliced.ok());
  for (Step& s : sliced->steps)
    if (s.kind == LayerKind::kConv) s.slice = 0, s.slices = 2;
  EXPECT_EQ(fold_shortcuts(&*sliced), 0);
}

// compile() folds for CUDA unless fusion is off; the compiled model's JSON keeps the fields.
TEST(Fusion, CompileFoldsForCudaAndTheJsonKeepsIt) {
  DLR_REQUIRE_SHARED_DIR();
  auto net = yolov4();
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  Target t;
  t.device = DeviceKind::kCUDA;
  t.name = "hand-made target";
  t.memory_bytes = int64_t(80) << 30;
  t.map_granularity = int64_t(2) << 20;
  t.copy_profile = *CopyProfile::builtin("h100");
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  for (Fusion f : {Fusion::kAuto, Fusion::kOff, Fusion::kEpilogue, Fusion::kCudnn}) {
    o.fusion = f;
    auto m = compile(*net, t, o);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    int folded = 0;
    for (const Step& s : m->plan.steps) folded += s.folded_into >= 0 ? 1 : 0;
    EXPECT_EQ(folded, f == Fusion::kOff ? 0 : 23) << fusion_name(f);
    EXPECT_EQ(m->engine.fusion, f);
    const std::string json = compiled_model_to_json(*m);
    auto back = compiled_model_from_json(json, "round trip");
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(compiled_model_to_json(*back), json);
    for (size_t i = 0; i < m->plan.steps.size(); ++i) {
      EXPECT_EQ(back->plan.steps[i].residual.buffer, m->plan.steps[i].residual.buffer) << i;
      EXPECT_EQ(back->plan.steps[i].folded_into, m->plan.steps[i].folded_into) << i;
    }
  }
}

// The CPU engine runs a folded plan (conv, then the shortcut's add in place) with the bits
// of the unfolded one: yolov4 @64 with synthetic weights, every output element compared.
TEST(Fusion, CpuFoldedPlanGivesTheSameBits) {
  CfgOptions co;
  co.width = 64;
  co.height = 64;
  DLR_REQUIRE_SHARED_DIR();
  auto net = yolov4(co);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  Target cpu;
  cpu.device = DeviceKind::kCPU;
  cpu.name = "cpu";
  SessionOptions o;
  o.threads = 2;
  auto plain = compile(*net, cpu, o);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  CompiledModel folded = *plain;
  folded.plan.options.fold_shortcuts = true;
  ASSERT_EQ(fold_shortcuts(&folded.plan), 23);
  const std::string path = test::temp_dir() + "/fusion-yolov4.weights";
  ASSERT_TRUE(write_synthetic_weights(*net, path, SyntheticOptions{}).ok());
  auto file = WeightsFile::open(path, *net);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto w1 = weights_file_source(*net, *file), w2 = weights_file_source(*net, *file);
  auto a = CpuEngine::create(*plain, *w1);
  auto b = CpuEngine::create(folded, *w2);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  std::vector<float> input(size_t(3) * 64 * 64);
  for (size_t i = 0; i < input.size(); ++i) input[i] = float((i * 2654435761u) % 1000) / 1000.0f;
  for (auto* e : {a->get(), b->get()}) {
    ASSERT_TRUE(e->set_input(input.data(), 1).ok());
    ASSERT_TRUE(e->run().ok());
  }
  for (int y : plain->plan.output_layers) {
    const Shape3 shape = net->layers[size_t(y)].out;
    const size_t n = size_t(shape.count());
    ASSERT_EQ(std::memcmp((*a)->output(y, 0), (*b)->output(y, 0), n * sizeof(float)), 0) << "yolo layer " << y;
  }
}

// The kept cuDNN plans' file: round trip; another key, format or a bad entry is refused.
TEST(FusedPlanCache, RoundTripAndRefusals) {
  ConvAlgoKey key;
  key.gpu_uuid = "00112233445566778899aabbccddeeff";
  key.cudnn_version = 91900;
  key.model = "yolov4 0123456789abcdef";
  key.precision = "fp16";
  key.layout = "NHWC";
  key.policy = "heuristic";
  key.workspace_limit = int64_t(256) << 20;
  FusedPlanMap plans;
  plans["fused in 1x64x38x38 out ..."].plan = "{\"plan\": 1}";                 // built, not timed
  plans["fused b"] = FusedPlanEntry{"x", 0.0125, 0.02};                          // timed: the graph won
  plans["fused c"] = FusedPlanEntry{"", 0.046, 0.033};                           // timed: the epilogue won
  auto back = parse_fused_plans(format_fused_plans(key, plans), key);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, plans);
  EXPECT_FALSE((*back)["fused in 1x64x38x38 out ..."].measured());
  EXPECT_TRUE((*back)["fused c"].measured());
  ConvAlgoKey other = key;
  other.cudnn_version = 91400;
  EXPECT_FALSE(parse_fused_plans(format_fused_plans(key, plans), other).ok());
  for (const char* older_text : {"{\"format\": 1}", "{\"format\": 2}", "{\"format\": 3}"}) {  // files of older dlruns
    const auto older = parse_fused_plans(older_text, key);
    ASSERT_FALSE(older.ok());
    EXPECT_NE(older.status().message().find("format is not 4 (from an older dlrun"), std::string::npos)
        << older.status().message();
  }
  EXPECT_FALSE(parse_fused_plans("not json", key).ok());
  // An empty plan without its times, a time that is not a number, an entry that is a bare
  // string (format 1's shape): refused, naming the convolution.
  const std::string header = "{\"format\": 4, \"key\": " + nlohmann::json(key.text()).dump() + ", \"plans\": ";
  for (const std::string& bad : {format_fused_plans(key, {{"fused a", FusedPlanEntry{"", 0.1, -1}}}),
                                 header + "{\"fused a\": {\"plan\": \"x\", \"graph_ms\": \"fast\"}}}",
                                 header + "{\"fused a\": \"x\"}}"}) {
    auto refused = parse_fused_plans(bad, key);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("fused a"), std::string::npos) << refused.status().message();
  }
}

}  // namespace
}  // namespace dlr
