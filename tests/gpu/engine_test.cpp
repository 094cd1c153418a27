// End-to-end CUDA engine tests against the CPU reference, and the stream-mode
// guarantees: outputs bit-identical to preload, repeatable runs, graph = no graph.
// Data comes from the shared folder (DLR_SHARED_DIR): cfgs, the real
// yolo-fastest weights, and images/dog.ppm (or dog.jpg with OpenCV).
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"
#include "tools/common/tool_support.h"

namespace dlr {
namespace {

struct Model {
  const char* cfg;
  const char* weights;  // nullptr: synthetic
  int size;
};

const Model kModels[] = {
    {"models/yolov4.cfg", nullptr, 608},
    {"models/yolov4-tiny.cfg", nullptr, 416},
    {"models/yolov3.cfg", nullptr, 416},
    {"weights/yolo-fastest-1.1.cfg", "weights/yolo-fastest-1.1.weights", 320},
};

// Cfgs of Darknet's own folder with the layers added for issue 9 ([region] after [reorg],
// [avgpool] + [scale_channels], [reorg3d] + [sam], [Gaussian_yolo], shortcuts of other
// channel counts), synthetic weights.
const Model kIssue9Models[] = {
    {"models/darknet-cfg/yolov2.cfg", nullptr, 416},
    {"models/darknet-cfg/enet-coco.cfg", nullptr, 416},
    {"models/darknet-cfg/yolov4-sam-mish-csp-reorg-bfm.cfg", nullptr, 256},
    {"models/darknet-cfg/Gaussian_yolov3_BDD.cfg", nullptr, 416},
    {"models/darknet-cfg/csresnext50-panet-spp.cfg", nullptr, 416},
};

struct Outcome {
  std::vector<std::vector<float>> heads;  // network outputs ([yolo], [region], [Gaussian_yolo]), image 0
  std::vector<Detection> dets;
  bool ok = false;
  StreamPlan stream;  // stream mode: the plan that ran
};

const tools::LoadedImage* test_image() {
  static tools::LoadedImage img;
  static bool loaded = false;
  if (!loaded) {
    loaded = true;
    for (const char* rel : {"images/dog.ppm", "images/dog.jpg"}) {
      const std::string p = test::shared_file(rel);
      if (p.empty()) continue;
      auto r = tools::load_image(p);
      if (r.ok()) {
        img = std::move(r).value();
        break;
      }
    }
  }
  return img.pixels.empty() ? nullptr : &img;
}

Outcome run(const std::string& cfg, const std::string& weights, SessionOptions o, int size) {
  Outcome out;
  std::printf("[session] %s %s %s %s budget %s pool %s%s @%d\n", cfg.substr(cfg.find_last_of('/') + 1).c_str(),
              device_name(o.device), precision_name(o.precision), weight_mode_name(o.mode), o.weight_budget.c_str(),
              o.weight_pool.c_str(), o.unit_search ? "" : " (equal chunks)", size);
  std::fflush(stdout);
  o.width = size;
  o.height = size;
  auto s = Session::open(cfg, weights, o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return out;
  auto dets = (*s)->detect(test_image()->view());
  EXPECT_TRUE(dets.ok()) << dets.status().to_string();
  if (!dets.ok()) return out;
  out.dets = *dets;
  for (int y : (*s)->network().output_layers()) {
    const int64_t n = (*s)->network().layers[size_t(y)].out.count();
    const float* p = (*s)->engine().output(y, 0);
    out.heads.emplace_back(p, p + n);
  }
  if (const StreamPlan* sp = (*s)->engine().stream_plan()) out.stream = *sp;
  out.ok = true;
  return out;
}

struct Resolved {
  std::string cfg, weights;
};

// DLR_TEST_SMALL_MODELS=1 (compute-sanitizer runs): only the smallest model (yolo-fastest).
bool small_only() {
  const char* e = std::getenv("DLR_TEST_SMALL_MODELS");
  return e && *e == '1';
}

// any_size: resolve larger models in small mode too (the caller runs them at 320).
bool resolve(const Model& m, Resolved* r, bool any_size = false) {
  if (small_only() && m.size > 320 && !any_size) return false;
  r->cfg = test::shared_file(m.cfg);
  if (r->cfg.empty()) return false;
  r->weights = m.weights ? test::shared_file(m.weights) : test::synthetic_weights(r->cfg);
  return !r->weights.empty();
}

SessionOptions cuda(Precision p) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = p;
  return o;
}

float iou(const Box& a, const Box& b) { return box_iou(a, b); }

std::string describe(const std::vector<Detection>& d) {
  std::string s;
  for (const Detection& x : d)
    s += "  class " + std::to_string(x.class_id) + " p " + std::to_string(x.prob) + " x " + std::to_string(x.box.x) +
         " y " + std::to_string(x.box.y) + "\n";
  return s;
}

class CudaEngineE2E : public ::testing::TestWithParam<Model> {};

TEST_P(CudaEngineE2E, Fp32MatchesCpuAndFp16IsClose) {
  DLR_REQUIRE_GPU();
  Resolved r;
  if (!resolve(GetParam(), &r)) GTEST_SKIP() << "shared data not found: " << GetParam().cfg;
  if (!test_image()) GTEST_SKIP() << "no test image (images/dog.ppm or dog.jpg with OpenCV)";
  const int size = GetParam().size;
  const Outcome cpu = run(r.cfg, r.weights, SessionOptions{}, size);
  const Outcome f32 = run(r.cfg, r.weights, cuda(Precision::kFP32), size);
  const Outcome f16 = run(r.cfg, r.weights, cuda(Precision::kFP16), size);
  const Outcome t32 = run(r.cfg, r.weights, cuda(Precision::kTF32), size);
  ASSERT_TRUE(cpu.ok && f32.ok && f16.ok && t32.ok);
  for (size_t h = 0; h < cpu.heads.size(); ++h) {
    const double e32 = test::rel_error(f32.heads[h], cpu.heads[h]);
    const double e16 = test::rel_error(f16.heads[h], cpu.heads[h]);
    const double et = test::rel_error(t32.heads[h], cpu.heads[h]);
    std::printf("%s @%d head %zu: rel err vs CPU fp32 %.3g, tf32 %.3g, fp16 %.3g\n", GetParam().cfg, size, h, e32, et,
                e16);
    EXPECT_LE(e32, 1e-4) << "head " << h;
  }
  // fp32: the same detections as the CPU.
  ASSERT_EQ(f32.dets.size(), cpu.dets.size()) << "CPU:\n" << describe(cpu.dets) << "CUDA fp32:\n" << describe(f32.dets);
  for (size_t i = 0; i < cpu.dets.size(); ++i) {
    EXPECT_EQ(f32.dets[i].class_id, cpu.dets[i].class_id) << i;
    EXPECT_NEAR(f32.dets[i].prob, cpu.dets[i].prob, 1e-4) << i;
    EXPECT_GE(iou(f32.dets[i].box, cpu.dets[i].box), 0.999f) << i;
  }
  std::printf("  %zu detections (CPU = CUDA fp32), fp16 %zu\n", cpu.dets.size(), f16.dets.size());
  // fp16: every confident detection of one has a match in the other (same class,
  // IoU >= 0.95, prob within 0.03). Detections within 0.03 of the threshold may
  // legitimately appear on one side only.
  auto check_matched = [](const std::vector<Detection>& a, const std::vector<Detection>& b, const char* what) {
    for (const Detection& d : a) {
      if (d.prob < 0.25f + 0.03f) continue;
      const Detection* best = nullptr;
      for (const Detection& e : b)
        if (e.class_id == d.class_id && (!best || box_iou(e.box, d.box) > box_iou(best->box, d.box))) best = &e;
      ASSERT_NE(best, nullptr) << what << ": class " << d.class_id << " p " << d.prob << " has no match";
      EXPECT_GE(box_iou(best->box, d.box), 0.95f) << what << ": class " << d.class_id;
      EXPECT_NEAR(best->prob, d.prob, 0.03f) << what << ": class " << d.class_id;
    }
  };
  // The detection-level fp16 criteria hold for trained weights. Synthetic weights are
  // built to be maximally input-sensitive, so they amplify any rounding: on yolov4 @608
  // fp16 and tf32 (whose products round like fp16) both end 1-5 % away from fp32 at
  // the heads (measured on the H100) and boxes move by more than 5 % IoU. For those
  // models the raw-output error is bounded instead and the agreement is printed.
  if (GetParam().weights) {
    check_matched(f32.dets, f16.dets, "fp32 -> fp16");
    check_matched(f16.dets, f32.dets, "fp16 -> fp32");
  } else {
    for (size_t h = 0; h < cpu.heads.size(); ++h) EXPECT_LE(test::rel_error(f16.heads[h], cpu.heads[h]), 0.1) << h;
    int same = 0;
    for (const Detection& d : f32.dets)
      for (const Detection& e : f16.dets)
        if (e.class_id == d.class_id && box_iou(e.box, d.box) >= 0.5f) {
          ++same;
          break;
        }
    std::printf("  synthetic weights: %d of %zu fp32 detections have an fp16 match (same class, IoU >= 0.5)\n", same,
                f32.dets.size());
  }
}

std::string model_name(const ::testing::TestParamInfo<Model>& info) {
  std::string n = info.param.cfg;
  n = n.substr(n.find_last_of('/') + 1);
  n = n.substr(0, n.find(".cfg"));
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Models, CudaEngineE2E, ::testing::ValuesIn(kModels), model_name);
INSTANTIATE_TEST_SUITE_P(Issue9Models, CudaEngineE2E, ::testing::ValuesIn(kIssue9Models), model_name);

bool bit_identical(const Outcome& a, const Outcome& b, std::string* why) {
  if (a.heads.size() != b.heads.size()) return false;
  for (size_t h = 0; h < a.heads.size(); ++h) {
    if (a.heads[h].size() != b.heads[h].size()) return false;
    for (size_t i = 0; i < a.heads[h].size(); ++i)
      if (std::memcmp(&a.heads[h][i], &b.heads[h][i], 4) != 0) {
        *why = "head " + std::to_string(h) + " element " + std::to_string(i) + ": " + std::to_string(a.heads[h][i]) +
               " vs " + std::to_string(b.heads[h][i]);
        return false;
      }
  }
  return true;
}

// Stream mode runs the same kernels and algorithms on weights that arrive later:
// outputs must be bit-identical to preload for every budget and both pool layouts.
// Under DLR_TEST_SMALL_MODELS (sanitizers) yolov4-tiny fp16 stays in: it is the
// smallest model whose weights exceed the minimal ring, so the ring path is covered.
TEST(StreamMode, BitIdenticalToPreload) {
  DLR_REQUIRE_GPU();
  if (!test_image()) GTEST_SKIP() << "no test image";
  int ran = 0, rings = 0;
  for (Model m : {kModels[0], kModels[1], kModels[3]}) {
    const bool tiny = std::string(m.cfg).find("yolov4-tiny") != std::string::npos;
    if (small_only() && tiny) m.size = 320;
    Resolved r;
    if (!resolve(m, &r, tiny)) continue;
    for (Precision p : {Precision::kFP32, Precision::kFP16}) {
      if (small_only() && (p == Precision::kFP32 || (!tiny && std::string(m.cfg) != kModels[3].cfg))) continue;
      const Outcome pre = run(r.cfg, r.weights, cuda(p), m.size);
      ASSERT_TRUE(pre.ok);
      // Budgets: each layout's minimum, that + the largest blob (lookahead), and all (resident).
      std::map<std::string, int64_t> more;  // pool -> its minimum + the largest blob
      // Pools: slots, the ring with units searched at open (the default) and the ring
      // cut into equal chunks.
      // The searched cut is kept whatever its predicted gain (min_gain 0), so that the
      // explicit-cut path always runs (under sanitizers kernels are slow and the search
      // would rarely gain 1 %). Sanitizer runs (small_only) try equal chunks at min only.
      for (const std::string& which : {std::string("min"), std::string("more"), std::string("all")})
        for (const char* variant : {"slots", "ring", "ring+chunks"}) {
          const std::string pool = std::string(variant).substr(0, std::string(variant).find('+'));
          const bool search = pool == variant;
          if (small_only() && !search && which != "min") continue;
          const std::string budget = which == "more" ? std::to_string(more[pool]) : which;
          SessionOptions o = cuda(p);
          o.mode = WeightMode::kStream;
          o.weight_budget = budget;
          o.weight_pool = pool;
          o.unit_search = search;
          o.unit_search_min_gain = 0;
          const Outcome st = run(r.cfg, r.weights, o, m.size);
          ASSERT_TRUE(st.ok);
          const StreamPlan& sp = st.stream;
          if (budget == "min") more[pool] = (sp.resident ? sp.total_weight_bytes : sp.pool_bytes) + sp.slot_bytes;
          if (!sp.resident) {
            EXPECT_EQ(std::string(pool_layout_name(sp.layout)), pool) << m.cfg << " budget " << budget;
            EXPECT_EQ(sp.units_searched, search && pool == "ring") << m.cfg << " budget " << budget << " " << variant;
            rings += sp.units_searched;
            if (sp.units_searched) EXPECT_LE(sp.searched_ms, sp.chunks_ms);
          }
          std::string why;
          EXPECT_TRUE(bit_identical(st, pre, &why))
              << m.cfg << " " << precision_name(p) << " budget " << budget << " pool " << variant << ": " << why;
        }
      ++ran;
    }
  }
  if (ran == 0) GTEST_SKIP() << "shared data not found";
  EXPECT_GT(rings, 0) << "no streamed ring plan with searched units was exercised";
}

TEST(StreamMode, KernelTimesMeasuredAtOpenAddUpToPreload) {
  // The unit search's kernel times (layers alone, timing events' cost removed) must
  // describe the same network preload runs: one per step, none negative, the weighted
  // layers non-zero, and in all close to preload's latency (which also holds the
  // output downloads and whatever the graph adds between kernels).
  DLR_REQUIRE_GPU();
  Resolved r;
  if (small_only() || !resolve(kModels[0], &r)) GTEST_SKIP() << "yolov4 not available (or sanitizer run)";
  SessionOptions o = cuda(Precision::kFP16);
  o.width = o.height = 608;
  auto pre = Session::open(r.cfg, r.weights, o);
  ASSERT_TRUE(pre.ok()) << pre.status().to_string();
  std::vector<double> runs;
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE((*pre)->engine().run().ok());
    runs.push_back((*pre)->engine().last_run_ms());
  }
  std::sort(runs.begin(), runs.end());
  const double preload_ms = runs[runs.size() / 2];
  pre->reset();
  o.mode = WeightMode::kStream;
  o.weight_budget = "25%";
  auto st = Session::open(r.cfg, r.weights, o);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  const StreamPlan* sp = (*st)->engine().stream_plan();
  ASSERT_NE(sp, nullptr);
  ASSERT_GT(sp->searched_ms, 0.0);
  const ExecutionPlan& plan = (*st)->plan();
  ASSERT_EQ(sp->search_layer_ms.size(), plan.steps.size());
  double sum = 0;
  for (const Step& step : plan.steps) {
    const double t = sp->search_layer_ms[size_t(step.layer)];
    EXPECT_GE(t, 0.0) << "layer " << step.layer;
    if (step.weight >= 0) EXPECT_GT(t, 0.0) << "layer " << step.layer;
    sum += t;
  }
  std::printf("yolov4 fp16 @608: kernel times measured at open %.3f ms in all, preload %.3f ms\n", sum, preload_ms);
  EXPECT_GT(sum, 0.7 * preload_ms);
  EXPECT_LT(sum, 1.1 * preload_ms);
}

TEST(CudaEngine, RepeatedRunsAndGraphAreBitIdentical) {
  DLR_REQUIRE_GPU();
  Resolved r;
  if (!resolve(kModels[1], &r) || !test_image()) GTEST_SKIP() << "shared data not found";
  for (WeightMode mode : {WeightMode::kPreload, WeightMode::kStream}) {
    SessionOptions o = cuda(Precision::kFP16);
    o.mode = mode;
    o.width = o.height = 416;
    auto s = Session::open(r.cfg, r.weights, o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    auto first = (*s)->detect(test_image()->view());
    ASSERT_TRUE(first.ok());
    const int y = (*s)->network().yolo_layers()[0];
    const int64_t n = (*s)->network().layers[size_t(y)].out.count();
    const std::vector<float> ref((*s)->engine().output(y, 0), (*s)->engine().output(y, 0) + n);
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE((*s)->detect(test_image()->view()).ok());
      EXPECT_EQ(0, std::memcmp(ref.data(), (*s)->engine().output(y, 0), size_t(n) * 4)) << "run " << i;
    }
    SessionOptions ng = o;
    ng.cuda_graph = false;
    const Outcome a = run(r.cfg, r.weights, ng, 416);
    ASSERT_TRUE(a.ok);
    EXPECT_EQ(0, std::memcmp(a.heads[0].data(), ref.data(), size_t(n) * 4)) << weight_mode_name(mode);
  }
}

TEST(CudaEngine, BatchOfTwoMatchesSingleImages) {
  DLR_REQUIRE_GPU();
  Resolved r;
  if (!resolve(kModels[3], &r) || !test_image()) GTEST_SKIP() << "shared data not found";
  SessionOptions o = cuda(Precision::kFP32);
  const Outcome single = run(r.cfg, r.weights, o, 320);
  o.batch = 2;
  o.width = o.height = 320;
  auto s = Session::open(r.cfg, r.weights, o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  tools::LoadedImage flipped = *test_image();  // a second, different image: mirrored rows
  for (int y = 0; y < flipped.height / 2; ++y)
    for (int x = 0; x < flipped.width * 3; ++x)
      std::swap(flipped.pixels[size_t(y) * flipped.width * 3 + x],
                flipped.pixels[size_t(flipped.height - 1 - y) * flipped.width * 3 + x]);
  const ImageView views[2] = {test_image()->view(), flipped.view()};
  auto dets = (*s)->detect_batch(views, 2);
  ASSERT_TRUE(dets.ok()) << dets.status().to_string();
  const int y = (*s)->network().yolo_layers()[0];
  const int64_t n = (*s)->network().layers[size_t(y)].out.count();
  const std::vector<float> b0((*s)->engine().output(y, 0), (*s)->engine().output(y, 0) + n);
  EXPECT_LE(test::rel_error(b0, single.heads[0]), 1e-5);
  EXPECT_EQ((*dets)[0].size(), single.dets.size());
  const std::vector<float> b1((*s)->engine().output(y, 1), (*s)->engine().output(y, 1) + n);
  EXPECT_GT(test::rel_error(b1, b0), 1e-3) << "the second image must give other outputs";
}

TEST(CudaEngine, BadOptionsAreErrors) {
  DLR_REQUIRE_GPU();
  Resolved r;
  if (!resolve(kModels[1], &r)) GTEST_SKIP() << "shared data not found";
  SessionOptions o = cuda(Precision::kFP16);
  o.mode = WeightMode::kStream;
  o.weight_budget = "1MiB";
  auto s = Session::open(r.cfg, r.weights, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("below the minimum"), std::string::npos) << s.status().message();
  o.weight_budget = "min";
  o.copy_profile = "no-such-profile";
  s = Session::open(r.cfg, r.weights, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("h100"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace dlr
