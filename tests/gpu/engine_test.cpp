// End-to-end CUDA engine tests against the CPU reference, and the stream-mode
// guarantees: outputs bit-identical to preload, repeatable runs, graph = no graph.
// Data comes from the shared folder (DLR_SHARED_DIR): cfgs, the real
// yolo-fastest weights, and images/dog.ppm (or dog.jpg with OpenCV).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "runtime/compile/compile.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"
#include "tools/common/tool_support.h"

namespace dlr {
namespace {

// End-to-end tolerances: relative L2 error of every yolo head against the CPU fp32
// reference (dog.jpg). Measured on the H100 (docs/results/h100-2026-11-21-search/final/
// gpu_tests*.log, largest head over the runs logged; tf32 varies with the algorithms
// cuDNN picks): fp32 <= 5.0e-5 (yolov4 head 2) for every model; tf32 yolov4 0.0442,
// tiny 0.00099, yolov3 0.0158, fastest 0.00184; fp16 yolov4 0.0518, tiny 0.00263,
// yolov3 0.0168, fastest 0.00385. Bounds: about 2x the largest measurement. Synthetic
// weights are built to be input-sensitive, which is why yolov4's deep mish stack
// amplifies tf32/fp16 rounding to a few percent (real weights: fastest, 0.2-0.4 %).
struct Model {
  const char* cfg;
  const char* weights;  // nullptr: synthetic
  int size;
  double tf32_tol;
  double fp16_tol;
  // Detection threshold: the synthetic yolov4-tiny finds nothing on dog.jpg at 0.25;
  // at 0.1 the CPU finds 8 (lowest 0.1012, clear of the threshold by 100x the fp32
  // CPU/CUDA difference), measured with dlrun here.
  float thresh;
};

constexpr double kFp32Tol = 1e-4;  // 2x the largest fp32 head error measured (5.04e-5)

const Model kModels[] = {
    {"models/yolov4.cfg", nullptr, 608, 0.09, 0.1, 0.25f},
    {"models/yolov4-tiny.cfg", nullptr, 416, 0.002, 0.006, 0.1f},
    {"models/yolov3.cfg", nullptr, 416, 0.03, 0.035, 0.25f},
    {"weights/yolo-fastest-1.1.cfg", "weights/yolo-fastest-1.1.weights", 320, 0.004, 0.008, 0.25f},
};

// Cfgs of Darknet's own folder with the layers added for issue 9 ([region] after [reorg],
// [avgpool] + [scale_channels], [reorg3d] + [sam], [Gaussian_yolo], shortcuts of other
// channel counts), synthetic weights.
// Tolerances: about 2x the head errors measured on the H100 (2026-11-24: yolov2 tf32 0.0223 /
// fp16 0.023; enet-coco 2.05e-4 / 3.5e-4; Gaussian_yolov3_BDD 0.022 / 0.0229). Threshold 0:
// every box with a positive score is compared (hundreds to thousands per image), which the
// fp32 check passes exactly. yolov4-sam-mish-csp-reorg-bfm and yolov3-tiny-prn have no
// measurement yet (the first was refused by cuDNN before the planner fix): bounds like their
// nearest measured relatives (yolov4, yolov4-tiny). csresnext50-panet-spp is not here: with
// synthetic weights its ~100 grouped-conv layers amplify rounding (H100: fp32 vs CPU 1.4e-4 to
// 4.0e-4, tf32/fp16 0.37 to 0.55), so a head bound says nothing; CfgWalkGpu still runs it and
// yolov3-tiny-prn covers shortcuts of different channel counts.
const Model kIssue9Models[] = {
    {"models/darknet-cfg/yolov2.cfg", nullptr, 416, 0.045, 0.05, 0.0f},
    {"models/darknet-cfg/enet-coco.cfg", nullptr, 416, 5e-4, 8e-4, 0.0f},
    {"models/darknet-cfg/yolov4-sam-mish-csp-reorg-bfm.cfg", nullptr, 256, 0.09, 0.1, 0.0f},
    {"models/darknet-cfg/Gaussian_yolov3_BDD.cfg", nullptr, 416, 0.045, 0.05, 0.0f},
    {"models/darknet-cfg/yolov3-tiny-prn.cfg", nullptr, 416, 0.01, 0.02, 0.0f},
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

// No shared folder: skip. A shared folder without a loadable dog image: fail.
#define REQUIRE_TEST_IMAGE()                                                                            \
  if (!test_image()) {                                                                                  \
    if (test::shared_dir().empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";      \
    FAIL() << "the shared folder has no loadable images/dog.ppm (or dog.jpg with OpenCV)";            \
  }

// Three different inputs: the dog, the dog upside down, the dog with inverted colours.
std::vector<tools::LoadedImage> dog_variants() {
  std::vector<tools::LoadedImage> images(3, *test_image());
  tools::LoadedImage& flipped = images[1];
  const size_t row = size_t(flipped.width) * 3;
  for (int y = 0; y < flipped.height / 2; ++y)
    std::swap_ranges(flipped.pixels.begin() + std::ptrdiff_t(size_t(y) * row),
                     flipped.pixels.begin() + std::ptrdiff_t(size_t(y + 1) * row),
                     flipped.pixels.begin() + std::ptrdiff_t(size_t(flipped.height - 1 - y) * row));
  for (uint8_t& v : images[2].pixels) v = uint8_t(255 - v);
  return images;
}

// The network outputs of the session's last inference, image 0.
std::vector<std::vector<float>> heads_of(Session& s) {
  std::vector<std::vector<float>> heads;
  for (int y : s.network().output_layers()) {
    const int64_t n = s.network().layers[size_t(y)].out.count();
    const float* p = s.engine().output(y, 0);
    heads.emplace_back(p, p + n);
  }
  return heads;
}

Outcome run(const std::string& cfg, const std::string& weights, SessionOptions o, int size) {
  Outcome out;
  std::printf("[session] %s %s %s %s budget %s pool %s%s @%d\n", cfg.substr(cfg.find_last_of('/') + 1).c_str(),
              device_name(o.device), precision_name(o.precision), weight_mode_name(o.mode), o.weight_budget.to_string().c_str(),
              pool_layout_name(o.weight_pool), o.unit_search ? "" : " (equal chunks)", size);
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
  out.heads = heads_of(**s);
  if ((*s)->model().streaming) out.stream = (*s)->model().stream;
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
// A file missing from a present shared folder is a test failure (not a silent skip).
bool resolve(const Model& m, Resolved* r, bool any_size = false) {
  if (small_only() && m.size > 320 && !any_size) return false;
  r->cfg = test::required_shared_file(m.cfg);
  if (r->cfg.empty()) return false;
  r->weights = m.weights ? test::required_shared_file(m.weights) : test::synthetic_weights(r->cfg);
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
  REQUIRE_TEST_IMAGE();
  const Model& model = GetParam();
  const int size = model.size;
  auto with_thresh = [&](SessionOptions o) {
    o.thresh = model.thresh;
    return o;
  };
  const Outcome cpu = run(r.cfg, r.weights, with_thresh(SessionOptions{}), size);
  const Outcome f32 = run(r.cfg, r.weights, with_thresh(cuda(Precision::kFP32)), size);
  const Outcome f16 = run(r.cfg, r.weights, with_thresh(cuda(Precision::kFP16)), size);
  const Outcome t32 = run(r.cfg, r.weights, with_thresh(cuda(Precision::kTF32)), size);
  ASSERT_TRUE(cpu.ok && f32.ok && f16.ok && t32.ok);
  ASSERT_FALSE(cpu.heads.empty());
  ASSERT_EQ(f32.heads.size(), cpu.heads.size());
  ASSERT_EQ(f16.heads.size(), cpu.heads.size());
  ASSERT_EQ(t32.heads.size(), cpu.heads.size());
  for (size_t h = 0; h < cpu.heads.size(); ++h) {
    const double e32 = test::rel_error(f32.heads[h], cpu.heads[h]);
    const double e16 = test::rel_error(f16.heads[h], cpu.heads[h]);
    const double et = test::rel_error(t32.heads[h], cpu.heads[h]);
    std::printf("%s @%d head %zu: rel err vs CPU fp32 %.3g, tf32 %.3g, fp16 %.3g\n", model.cfg, size, h, e32, et,
                e16);
    EXPECT_LE(e32, kFp32Tol) << "head " << h;
    EXPECT_LE(et, model.tf32_tol) << "tf32 head " << h;
    EXPECT_LE(e16, model.fp16_tol) << "fp16 head " << h;
  }
  // fp32: the same detections as the CPU, and there are some to compare (the
  // thresholds above give each model detections on dog.jpg).
  ASSERT_FALSE(cpu.dets.empty()) << "no CPU detections: nothing to compare";
  ASSERT_EQ(f32.dets.size(), cpu.dets.size()) << "CPU:\n" << describe(cpu.dets) << "CUDA fp32:\n" << describe(f32.dets);
  // One-to-one: every CPU detection has its own CUDA fp32 twin (same class, prob within
  // 1e-4, IoU >= 0.999). Matched, not compared index by index: with thousands of
  // detections (threshold 0) two whose sort keys differ by less than the fp32 error may
  // swap places (H100: yolov3-tiny-prn, Gaussian_yolov3_BDD).
  std::vector<char> used(f32.dets.size(), 0);
  for (size_t i = 0; i < cpu.dets.size(); ++i) {
    const Detection& c = cpu.dets[i];
    size_t found = f32.dets.size();
    for (size_t j = 0; j < f32.dets.size() && found == f32.dets.size(); ++j)
      if (!used[j] && f32.dets[j].class_id == c.class_id && std::fabs(f32.dets[j].prob - c.prob) <= 1e-4f &&
          iou(f32.dets[j].box, c.box) >= 0.999f)
        found = j;
    EXPECT_LT(found, f32.dets.size()) << "CPU detection " << i << " (class " << c.class_id << ", p " << c.prob
                                      << ") has no CUDA fp32 twin";
    if (found < f32.dets.size()) used[found] = 1;
  }
  std::printf("  %zu detections (CPU = CUDA fp32), fp16 %zu\n", cpu.dets.size(), f16.dets.size());
  // fp16: every confident detection of one has a match in the other (same class,
  // IoU >= 0.95, prob within 0.03). Detections within 0.03 of the threshold may
  // legitimately appear on one side only.
  auto check_matched = [&](const std::vector<Detection>& a, const std::vector<Detection>& b, const char* what) {
    for (const Detection& d : a) {
      if (d.prob < model.thresh + 0.03f) continue;
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
  // models the raw-output error is bounded above and the detections must agree
  // loosely: at least 90 % of the fp32 detections (and of the fp16/tf32 ones) have a
  // partner of the same class with IoU >= 0.5 in the other list (H100, fp16: yolov4
  // 55 of 57, yolov3 38 of 40). yolov4 is the mish model checked at detection level.
  if (model.weights) {
    check_matched(f32.dets, f16.dets, "fp32 -> fp16");
    check_matched(f16.dets, f32.dets, "fp16 -> fp32");
    check_matched(f32.dets, t32.dets, "fp32 -> tf32");
    check_matched(t32.dets, f32.dets, "tf32 -> fp32");
  } else {
    auto loosely_matched = [](const std::vector<Detection>& a, const std::vector<Detection>& b) {
      int same = 0;
      for (const Detection& d : a)
        for (const Detection& e : b)
          if (e.class_id == d.class_id && box_iou(e.box, d.box) >= 0.5f) {
            ++same;
            break;
          }
      return same;
    };
    for (const auto& [name, other] : {std::make_pair("fp16", &f16), std::make_pair("tf32", &t32)}) {
      const int fwd = loosely_matched(f32.dets, other->dets), back = loosely_matched(other->dets, f32.dets);
      std::printf("  synthetic weights: %d of %zu fp32 detections have a %s match, %d of %zu the other way "
                  "(same class, IoU >= 0.5)\n",
                  fwd, f32.dets.size(), name, back, other->dets.size());
      EXPECT_FALSE(other->dets.empty()) << name;
      EXPECT_GE(fwd, 0.9 * double(f32.dets.size())) << name;
      EXPECT_GE(back, 0.9 * double(other->dets.size())) << name;
    }
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
  REQUIRE_TEST_IMAGE();
  int ran = 0, rings = 0, staged = 0, ahead = 0;
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
          o.weight_budget = *WeightBudget::parse(budget);
          EXPECT_TRUE(parse_pool_layout(pool, &o.weight_pool)) << pool;
          o.unit_search = search;
          o.unit_search_min_gain = 0;
          const Outcome st = run(r.cfg, r.weights, o, m.size);
          ASSERT_TRUE(st.ok);
          const StreamPlan& sp = st.stream;
          if (budget == "min") more[pool] = (sp.resident ? sp.total_weight_bytes : sp.pool_bytes) + sp.slot_bytes;
          if (!sp.resident) {
            EXPECT_EQ(std::string(pool_layout_name(sp.layout)), pool) << m.cfg << " budget " << budget;
            // With blobs staged in the arena a searched cut is kept only where the whole plan gains.
            if (sp.staged_bytes == 0) {
              EXPECT_EQ(sp.units_searched, search && pool == "ring") << m.cfg << " budget " << budget << " " << variant;
            }
            rings += sp.units_searched;
            staged += sp.staged_bytes > 0;
            ahead += sp.staged_copies_ahead() > 0;
            if (sp.units_searched) {
              EXPECT_LE(sp.searched_ms, sp.chunks_ms);
            }
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
  if (!small_only()) {
    EXPECT_GT(staged, 0) << "no plan staged blobs in the activation arena";
  }
  std::printf("stream plans with blobs staged in the arena: %d (%d with copies queued early)\n", staged, ahead);
}

// Tail copies (SessionOptions::tail_prefetch): each inference copies the next one's leading
// units under its last layers and the next one skips them. Three different images in turn,
// twice over, with and without a graph and with per-layer events: every inference's heads
// bit-identical to preload's on that image (a tail copy landing too early, or a skipped
// unit the ring does not hold, changes them). unit_search_min_gain 0 keeps any tail the
// planner predicts faster at all, so that the path runs wherever the copies leave room.
TEST(StreamMode, TailCopiesKeepEveryInferenceBitIdenticalToPreload) {
  DLR_REQUIRE_GPU();
  REQUIRE_TEST_IMAGE();
  const std::vector<tools::LoadedImage> images = dog_variants();
  int tails = 0, ran = 0;
  for (Model m : {kModels[1], kModels[0]}) {
    if (small_only()) m.size = 320;
    Resolved r;
    if (!resolve(m, &r, true)) continue;
    SessionOptions pre = cuda(Precision::kFP16);
    pre.width = pre.height = m.size;
    auto ps = Session::open(r.cfg, r.weights, pre);
    ASSERT_TRUE(ps.ok()) << ps.status().to_string();
    std::vector<std::vector<std::vector<float>>> want;  // [image][head]
    for (const tools::LoadedImage& img : images) {
      ASSERT_TRUE((*ps)->detect(img.view()).ok());
      want.push_back(heads_of(**ps));
    }
    const bool tiny = std::string(m.cfg).find("tiny") != std::string::npos;  // its minimum is 69 % of it
    for (const char* budget : tiny ? std::vector<const char*>{"min", "85%"} : std::vector<const char*>{"min", "50%", "75%"})
      for (int variant = 0; variant < 3; ++variant) {  // graph, no graph, graph with per-layer events
        if (small_only() && variant > 0) continue;
        SessionOptions o = pre;
        o.mode = WeightMode::kStream;
        o.weight_budget = *WeightBudget::parse(budget);
        o.tail_prefetch = true;
        o.unit_search_min_gain = 0;
        o.cuda_graph = variant != 1;
        o.profile_layers = variant == 2;
        auto ss = Session::open(r.cfg, r.weights, o);
        ASSERT_TRUE(ss.ok()) << ss.status().to_string();
        const StreamPlan& sp = (*ss)->model().stream;
        std::printf("[tail] %s budget %s variant %d: %d tail units\n", m.cfg, budget, variant, sp.tail_units);
        tails += sp.tail_units > 0;
        for (int k = 0; k < 6; ++k) {
          ASSERT_TRUE((*ss)->detect(images[size_t(k % 3)].view()).ok());
          const std::vector<std::vector<float>> got = heads_of(**ss);
          ASSERT_EQ(got.size(), want[size_t(k % 3)].size());
          for (size_t h = 0; h < got.size(); ++h)
            EXPECT_EQ(0, std::memcmp(got[h].data(), want[size_t(k % 3)][h].data(), got[h].size() * 4))
                << m.cfg << " budget " << budget << " variant " << variant << " inference " << k << " head " << h;
          if (variant != 2) continue;
          // The report: every tail copy once, marked; from the second inference on, the
          // inference's own copies start at unit tail_units.
          int tail_copies = 0, own_leading = 0;
          for (const CopyTiming& c : (*ss)->engine().copy_timings()) {
            tail_copies += c.next_inference;
            own_leading += !c.next_inference && c.unit < sp.tail_units;
            EXPECT_GE(c.end_ms, c.start_ms);
          }
          EXPECT_EQ(tail_copies, sp.tail_units) << "inference " << k;
          EXPECT_EQ(own_leading, k == 0 ? sp.tail_units : 0) << "inference " << k;
        }
        ++ran;
      }
  }
  if (ran == 0) GTEST_SKIP() << "shared data not found";
  EXPECT_GT(tails, 0) << "no plan copied units under its tail";
}

TEST(StreamMode, KernelTimesMeasuredAtOpenDescribeThePlan) {
  // The unit search's kernel times (layers alone, timing events' cost removed) must
  // describe the network that runs: one per step, finite, none negative, every
  // weighted layer non-zero, and the plan kept the searched cut only where it was
  // predicted faster than equal chunks (a cut searched beside blobs staged in the arena
  // can come out slower once the staged copies join it: the chunks stay then). How close
  // their sum is to preload's wall-clock latency is a timing
  // question: the benchmark StreamBench.KernelTimesVsPreloadLatency
  // (engine_bench_test.cpp, DLR_GPU_BENCH=1) reports it.
  DLR_REQUIRE_GPU();
  Resolved r;
  if (small_only()) GTEST_SKIP() << "sanitizer run: yolov4 is too slow";
  DLR_REQUIRE_SHARED_DIR();
  ASSERT_TRUE(resolve(kModels[0], &r));
  SessionOptions o = cuda(Precision::kFP16);
  o.width = o.height = 608;
  o.mode = WeightMode::kStream;
  o.weight_budget = WeightBudget::percent(25);
  auto st = Session::open(r.cfg, r.weights, o);
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  ASSERT_TRUE((*st)->model().streaming);
  const StreamPlan* sp = &(*st)->model().stream;
  ASSERT_FALSE(sp->resident);
  ASSERT_GT(sp->searched_ms, 0.0);
  if (sp->units_searched) {
    EXPECT_LE(sp->searched_ms, sp->chunks_ms);
  }
  const ExecutionPlan& plan = (*st)->plan();
  ASSERT_EQ(sp->search_layer_ms.size(), plan.steps.size());
  double sum = 0;
  for (const Step& step : plan.steps) {
    const double t = sp->search_layer_ms[size_t(step.layer)];
    EXPECT_TRUE(std::isfinite(t)) << "layer " << step.layer;
    EXPECT_GE(t, 0.0) << "layer " << step.layer;
    if (step.weight >= 0) {
      EXPECT_GT(t, 0.0) << "layer " << step.layer;
    }
    sum += t;
  }
  EXPECT_GT(sum, 0.0);
  std::printf("yolov4 fp16 @608: kernel times measured at open %.3f ms in all\n", sum);
}

// Copy calibration at open (SessionOptions::calibrate_copies, docs/streaming.md section
// 6): a streamed plan is compiled again with the copy cost timed in an inference; the
// bound stays the probed profile's with the calibrated one beside it; the outputs are
// those of the probed plan (the placement moves, not the math); the calibrated profile
// is kept with the kernel times and read back by the next open; off, nothing changes.
TEST(StreamMode, CopyProfileCalibratedAtOpenAndKept) {
  DLR_REQUIRE_GPU();
  Resolved r;
  REQUIRE_TEST_IMAGE();
  if (!resolve(kModels[1], &r)) GTEST_SKIP() << "shared data not found";
  ASSERT_EQ(setenv("DLR_CACHE_DIR", (test::temp_dir() + "/calibration-cache").c_str(), 1), 0);
  SessionOptions o = cuda(Precision::kFP16);
  o.width = o.height = 416;
  o.mode = WeightMode::kStream;  // the minimal ring: every weight copied every inference
  o.cache_kernel_times = true;
  auto a = Session::open(r.cfg, r.weights, o);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  const CompiledModel& m = (*a)->model();
  ASSERT_FALSE(m.stream.resident);
  ASSERT_TRUE(m.target.copy_calibrated()) << "calibration refused (see the warning above)";
  EXPECT_EQ(m.target.copy_profile.name, m.target.probed_copy_profile.name + "+calibrated");
  EXPECT_GT(m.lower_bound_ms, 0.0);
  EXPECT_GE(m.lower_bound_calibrated_ms, m.lower_bound_ms);
  EXPECT_GE(m.predicted_ms + 1e-9, m.lower_bound_calibrated_ms);
  for (int64_t b = int64_t(64) << 10; b <= int64_t(64) << 20; b *= 2)
    EXPECT_GE(m.target.copy_profile.copy_ms(b), m.target.probed_copy_profile.copy_ms(b) * (1 - 1e-9)) << b;
  std::printf("yolov4-tiny fp16 @416 min: %s at 1 MiB %.1f GB/s probed, %.1f GB/s calibrated; predicted %.3f ms, "
              "bound %.3f ms (calibrated %.3f ms)\n",
              m.target.copy_profile.name.c_str(), double(1 << 20) / (m.target.probed_copy_profile.copy_ms(1 << 20) * 1e6),
              double(1 << 20) / (m.target.copy_profile.copy_ms(1 << 20) * 1e6), m.predicted_ms, m.lower_bound_ms,
              m.lower_bound_calibrated_ms);
  auto da = (*a)->detect(test_image()->view());
  ASSERT_TRUE(da.ok()) << da.status().to_string();
  const int y = (*a)->network().yolo_layers()[0];
  const int64_t n = (*a)->network().layers[size_t(y)].out.count();

  SessionOptions off = o;
  off.calibrate_copies = false;
  auto b = Session::open(r.cfg, r.weights, off);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_FALSE((*b)->model().target.copy_calibrated());
  EXPECT_EQ((*b)->model().lower_bound_calibrated_ms, 0.0);
  ASSERT_TRUE((*b)->detect(test_image()->view()).ok());
  EXPECT_EQ(0, std::memcmp((*a)->engine().output(y, 0), (*b)->engine().output(y, 0), size_t(n) * 4));

  auto c = Session::open(r.cfg, r.weights, o);  // kernel times and calibration from the cache
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_TRUE((*c)->model().target.copy_calibrated());
  EXPECT_EQ((*c)->model().target.copy_profile.to_json_text(), m.target.copy_profile.to_json_text());
  unsetenv("DLR_CACHE_DIR");
}

// Kernel times kept by an earlier open: the next open compiles with them on a thread
// beside the engine's set-up instead of after it, settles on the same placement, and
// computes the same outputs bit for bit.
TEST(StreamMode, KeptKernelTimesCompileBesideTheEngine) {
  DLR_REQUIRE_GPU();
  Resolved r;
  REQUIRE_TEST_IMAGE();
  if (!resolve(kModels[1], &r)) GTEST_SKIP() << "shared data not found";
  const std::string cache = test::temp_dir() + "/early-compile-cache";
  std::filesystem::remove_all(cache);
  ASSERT_EQ(setenv("DLR_CACHE_DIR", cache.c_str(), 1), 0);
  SessionOptions o = cuda(Precision::kFP16);
  o.width = o.height = 416;
  o.mode = WeightMode::kStream;  // the minimal ring: the units are cut by the kernel times
  o.cache_kernel_times = true;
  auto a = Session::open(r.cfg, r.weights, o);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  auto b = Session::open(r.cfg, r.weights, o);
  unsetenv("DLR_CACHE_DIR");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_FALSE((*a)->open_timing().compiled_beside_engine) << "the first open measures its kernel times";
  EXPECT_TRUE((*b)->open_timing().compiled_beside_engine) << "the second open has them from the cache";
  const StreamPlan& sa = (*a)->model().stream;
  const StreamPlan& sb = (*b)->model().stream;
  EXPECT_EQ(sa.pool_bytes, sb.pool_bytes);
  ASSERT_EQ(sa.units.size(), sb.units.size());
  for (size_t u = 0; u < sa.units.size(); ++u) {
    EXPECT_EQ(sa.units[u].host_offset, sb.units[u].host_offset) << "unit " << u;
    EXPECT_EQ(sa.units[u].bytes, sb.units[u].bytes) << "unit " << u;
  }
  EXPECT_EQ((*a)->model().target.copy_profile.name, (*b)->model().target.copy_profile.name);
  ASSERT_TRUE((*a)->detect(test_image()->view()).ok());
  ASSERT_TRUE((*b)->detect(test_image()->view()).ok());
  for (int y : (*a)->network().yolo_layers()) {
    const int64_t n = (*a)->network().layers[size_t(y)].out.count();
    EXPECT_EQ(0, std::memcmp((*a)->engine().output(y, 0), (*b)->engine().output(y, 0), size_t(n) * 4)) << "layer " << y;
  }
}

TEST(CudaEngine, RepeatedRunsAndGraphAreBitIdentical) {
  DLR_REQUIRE_GPU();
  Resolved r;
  REQUIRE_TEST_IMAGE();
  if (!resolve(kModels[1], &r)) GTEST_SKIP() << "shared data not found";
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

// Batch correctness: three different images in one batch (dog, dog upside down, dog
// with inverted colours), preload and stream, fp32 and fp16: every yolo head of every
// batch image against a single-image run of that image, and the detections too.
// A wrong offset for image 1 or 2 anywhere in the network (input staging, a conv's
// batch stride, a route copy, the output download) changes that image's heads.
//
// Bounds: a batch-3 convolution may run another cuDNN algorithm than batch 1 (the
// algorithm cache key includes n), so the runs are not bit-identical in general.
// Each run is within the fp32 CPU error of the CPU reference (fastest, H100:
// <= 3.0e-7 fp32, <= 3.9e-3 fp16), so two runs are within twice that; bounds
// 2e-6 (fp32) and 1e-2 (fp16) leave about 3x. Stream mode runs the same kernels as
// preload on the same batch, so stream vs preload must be bit-identical.
TEST(CudaEngine, BatchMatchesSingleImagesEveryHead) {
  DLR_REQUIRE_GPU();
  Resolved r;
  DLR_REQUIRE_SHARED_DIR();
  ASSERT_TRUE(resolve(kModels[3], &r));
  REQUIRE_TEST_IMAGE();
  constexpr int kBatch = 3;
  const std::vector<tools::LoadedImage> images = dog_variants();
  static_assert(kBatch == 3, "one batch of the three dog variants");
  ImageView views[kBatch];
  for (int i = 0; i < kBatch; ++i) views[i] = images[size_t(i)].view();

  for (Precision p : {Precision::kFP32, Precision::kFP16}) {
    const double tol = p == Precision::kFP32 ? 2e-6 : 1e-2;
    // Single-image references, every head.
    SessionOptions one = cuda(p);
    one.width = one.height = 320;
    auto s1 = Session::open(r.cfg, r.weights, one);
    ASSERT_TRUE(s1.ok()) << s1.status().to_string();
    const std::vector<int> yolos = (*s1)->network().yolo_layers();
    ASSERT_FALSE(yolos.empty());
    std::vector<std::vector<std::vector<float>>> single(kBatch);  // [image][head]
    std::vector<std::vector<Detection>> single_dets(kBatch);
    for (int i = 0; i < kBatch; ++i) {
      auto d = (*s1)->detect(views[i]);
      ASSERT_TRUE(d.ok()) << d.status().to_string();
      single_dets[size_t(i)] = *d;
      for (int y : yolos) {
        const int64_t n = (*s1)->network().layers[size_t(y)].out.count();
        single[size_t(i)].emplace_back((*s1)->engine().output(y, 0), (*s1)->engine().output(y, 0) + n);
      }
    }
    // The images differ, so a batch image answering with another image's outputs fails.
    ASSERT_GT(test::rel_error(single[1][0], single[0][0]), 1e-2);
    ASSERT_GT(test::rel_error(single[2][0], single[0][0]), 1e-2);
    ASSERT_FALSE(single_dets[0].empty()) << "no detections on dog.jpg";

    std::vector<std::vector<std::vector<float>>> preload_batch;  // [image][head], preload
    for (WeightMode mode : {WeightMode::kPreload, WeightMode::kStream}) {
      SessionOptions o = one;
      o.batch = kBatch;
      o.mode = mode;
      auto s = Session::open(r.cfg, r.weights, o);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      auto dets = (*s)->detect_batch(views, kBatch);
      ASSERT_TRUE(dets.ok()) << dets.status().to_string();
      ASSERT_EQ(dets->size(), size_t(kBatch));
      std::vector<std::vector<std::vector<float>>> got(kBatch);
      for (int i = 0; i < kBatch; ++i) {
        const std::string what = std::string(precision_name(p)) + " " + weight_mode_name(mode) + " image " +
                                 std::to_string(i);
        for (size_t h = 0; h < yolos.size(); ++h) {
          const int64_t n = (*s)->network().layers[size_t(yolos[h])].out.count();
          const float* out = (*s)->engine().output(yolos[h], i);
          got[size_t(i)].emplace_back(out, out + n);
          const double err = test::rel_error(got[size_t(i)][h], single[size_t(i)][h]);
          std::printf("batch %s head %zu: rel err vs single image %.3g\n", what.c_str(), h, err);
          EXPECT_LE(err, tol) << what << " head " << h;
        }
        // Detections: same count, class, and (fp32) prob/box; fp16 within its noise.
        const std::vector<Detection>& a = (*dets)[size_t(i)];
        const std::vector<Detection>& b = single_dets[size_t(i)];
        if (p == Precision::kFP32) {
          ASSERT_EQ(a.size(), b.size()) << what << "\nbatch:\n" << describe(a) << "single:\n" << describe(b);
          for (size_t k = 0; k < a.size(); ++k) {
            EXPECT_EQ(a[k].class_id, b[k].class_id) << what << " det " << k;
            EXPECT_NEAR(a[k].prob, b[k].prob, 1e-5) << what << " det " << k;
            EXPECT_GE(iou(a[k].box, b[k].box), 0.9999f) << what << " det " << k;
          }
        }
      }
      if (mode == WeightMode::kPreload) {
        preload_batch = got;
      } else {
        for (int i = 0; i < kBatch; ++i)
          for (size_t h = 0; h < yolos.size(); ++h)
            EXPECT_EQ(0, std::memcmp(got[size_t(i)][h].data(), preload_batch[size_t(i)][h].data(),
                                     got[size_t(i)][h].size() * 4))
                << precision_name(p) << " stream vs preload, image " << i << " head " << h;
      }
    }
  }
}

TEST(CudaEngine, BadOptionsAreErrors) {
  DLR_REQUIRE_GPU();
  Resolved r;
  if (!resolve(kModels[1], &r)) GTEST_SKIP() << "shared data not found";
  SessionOptions o = cuda(Precision::kFP16);
  o.mode = WeightMode::kStream;
  o.weight_budget = WeightBudget::of_bytes(1024);
  auto s = Session::open(r.cfg, r.weights, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("below the minimum"), std::string::npos) << s.status().message();
  o.weight_budget = WeightBudget::min();
  o.copy_profile = "no-such-profile";
  s = Session::open(r.cfg, r.weights, o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("h100"), std::string::npos) << s.status().message();
}

// ---- weights from storage (docs/streaming.md section 7) ----

// A stream-mode session reading its streamed weights from a prepared file each inference.
SessionOptions storage(Precision p, const std::string& prepared, const std::string& budget, int zero_copy) {
  SessionOptions o = cuda(p);
  o.mode = WeightMode::kStream;
  o.weights_from = WeightsFrom::kStorage;
  o.prepared_path = prepared;
  o.weight_budget = *WeightBudget::parse(budget);
  o.zero_copy = zero_copy;
  return o;
}

TEST(StorageMode, BitIdenticalToPreload) {
  DLR_REQUIRE_GPU();
  REQUIRE_TEST_IMAGE();
  const std::string dir = test::temp_dir();
  int ran = 0, zero_copy = 0, resident = 0, read_ahead = 0;
  for (const Model& m : {kModels[1], kModels[3], kModels[0]}) {
    Resolved r;
    if (!resolve(m, &r)) continue;
    const bool big = std::string(m.cfg).find("yolov4.cfg") != std::string::npos;
    for (Precision p : {Precision::kFP32, Precision::kFP16}) {
      if (big && p == Precision::kFP32) continue;  // yolov4 fp16 only: the fp32 path is the same code
      const Outcome pre = run(r.cfg, r.weights, cuda(p), m.size);
      ASSERT_TRUE(pre.ok);
      const std::string prepared = dir + "/" + std::string(m.cfg).substr(std::string(m.cfg).find('/') + 1) + "." +
                                   precision_name(p) + ".dlrw";
      // Three stages at the smallest pool and at half the weights (resident + streamed),
      // a larger host budget and the thread reader, and two stages (zero copy); a replay
      // of the graph (device waits for the reads) and, without one, the thread enqueueing.
      struct Variant {
        const char* name;
        const char* budget;
        int zero_copy;
        int64_t host_budget;
        ReaderKind reader;
        bool graph;
      };
      // "more": the minimal pool plus the largest blob (room for resident blobs).
      const Variant variants[] = {{"copy@min", "min", 0, 0, ReaderKind::kAuto, true},
                                  {"copy@min, no graph", "min", 0, 0, ReaderKind::kAuto, false},
                                  {"copy@more", "more", 0, 0, ReaderKind::kAuto, true},
                                  {"copy@min, 3x host, threads", "min", 0, -3, ReaderKind::kThreads, true},
                                  {"zero copy", "min", 1, 0, ReaderKind::kAuto, true},
                                  {"zero copy, no graph", "min", 1, 0, ReaderKind::kAuto, false}};
      int64_t min_staging = 0;
      std::string more = "all";
      for (const Variant& v : variants) {
        SessionOptions o = storage(p, prepared, std::string(v.budget) == "more" ? more : v.budget, v.zero_copy);
        o.reader = v.reader;
        o.cuda_graph = v.graph;
        if (v.host_budget < 0) o.host_budget = -v.host_budget * min_staging;
        auto s = Session::open(r.cfg, r.weights, [&] { SessionOptions q = o; q.width = q.height = m.size; return q; }());
        ASSERT_TRUE(s.ok()) << v.name << ": " << s.status().to_string();
        const CompiledModel& cm = (*s)->model();
        ASSERT_TRUE(cm.from_storage) << v.name;
        EXPECT_EQ(cm.reads.two_stage, v.zero_copy == 1) << v.name;
        EXPECT_EQ(cm.engine.cuda_graph, v.graph) << v.name;
        if (v.graph) {
          EXPECT_GT((*s)->engine().open_timing().graph_ms, 0.0) << v.name << ": no graph captured";
        }
        if (!v.zero_copy && v.host_budget == 0 && std::string(v.budget) == "min" && v.graph) {
          min_staging = cm.reads.staging_bytes;
          more = std::to_string(cm.stream.device_bytes() + cm.stream.slot_bytes);
        }
        resident += cm.stream.resident_bytes > 0;
        zero_copy += cm.reads.two_stage;
        const MemoryReport mem = (*s)->engine().memory();
        EXPECT_EQ(mem.host_weights, cm.reads.staging_bytes) << v.name << ": host memory for weights is the staging";
        if (v.zero_copy) {
          EXPECT_EQ(mem.weights, 0) << "zero copy keeps no weights on the device";
        }
        const Outcome st = run(r.cfg, r.weights, o, m.size);
        ASSERT_TRUE(st.ok) << v.name;
        std::string why;
        EXPECT_TRUE(bit_identical(st, pre, &why)) << m.cfg << " " << precision_name(p) << " " << v.name << ": " << why;
        // More inferences on the same session read everything again and give the same
        // outputs: back to back, and after a pause in which the next inference's first
        // units are read ahead (its timings then end before its start; checked on plans of
        // two reads or more).
        const int n_reads = int(cm.reads.units.size());
        const bool reads_ahead = std::min(cm.reads.read_ahead_units, n_reads - 1) > 0;
        if (n_reads > 1) {
          EXPECT_GT(cm.reads.read_ahead_units, 0) << v.name;
        }
        for (int k = 0; k < 4; ++k) {
          if (k >= 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
          auto again = (*s)->detect(test_image()->view());
          ASSERT_TRUE(again.ok()) << v.name << " inference " << k << ": " << again.status().to_string();
          Outcome o2;
          o2.heads = heads_of(**s);
          EXPECT_TRUE(bit_identical(o2, pre, &why)) << m.cfg << " " << v.name << " inference " << k << ": " << why;
          const std::vector<ReadTiming> t = (*s)->engine().read_timings();
          ASSERT_EQ(t.size(), cm.reads.units.size());
          if (k >= 2 && reads_ahead) {
            ++read_ahead;
            EXPECT_LT(t[0].end_ms, 0.0) << v.name << " inference " << k << ": read 0 was not read ahead";
          }
        }
      }
      ++ran;
    }
  }
  if (ran == 0) GTEST_SKIP() << "shared data not found";
  EXPECT_GT(zero_copy, 0);
  EXPECT_GT(read_ahead, 0) << "no plan read ahead";
  // (yolo-fastest alone, as under the sanitizers, keeps nothing resident at "more")
  if (!small_only()) {
    EXPECT_GT(resident, 0) << "no storage plan kept blobs resident";
  }
}

// A read that fails (the prepared file truncated under a running session) fails that
// detect with one line naming the file; once the file is whole again, the same session
// detects as before.
TEST(StorageMode, ReadErrorFailsOneDetectAndTheSessionRecovers) {
  DLR_REQUIRE_GPU();
  REQUIRE_TEST_IMAGE();
  Resolved r;
  if (!resolve(kModels[3], &r)) GTEST_SKIP() << "shared data not found";
  for (int zero_copy : {0, 1})
    for (bool graph : {true, false}) {
      const std::string what = std::string(zero_copy ? "zero copy" : "three stages") + (graph ? ", graph" : ", no graph");
      const std::string prepared = test::temp_dir() + "/fastest-recover.dlrw";
      SessionOptions o = storage(Precision::kFP16, prepared, "min", zero_copy);
      o.width = o.height = 320;
      o.cuda_graph = graph;
      auto s = Session::open(r.cfg, r.weights, o);
      ASSERT_TRUE(s.ok()) << what << ": " << s.status().to_string();
      auto first = (*s)->detect(test_image()->view());
      ASSERT_TRUE(first.ok()) << what << ": " << first.status().to_string();
      const std::string bytes = test::read_bytes(prepared);
      ASSERT_FALSE(bytes.empty());
      ASSERT_EQ(0, truncate(prepared.c_str(), off_t(bytes.size() / 2)));
      // The detect after the truncation may have been read wholly ahead, before it
      // (yolo-fastest's blobs fit in one read); the one after it is read after it.
      auto bad = (*s)->detect(test_image()->view());
      if (bad.ok()) bad = (*s)->detect(test_image()->view());
      ASSERT_FALSE(bad.ok()) << what;
      EXPECT_NE(bad.status().message().find(prepared), std::string::npos) << what << ": " << bad.status().message();
      EXPECT_EQ(bad.status().message().find('\n'), std::string::npos) << bad.status().message();
      ASSERT_TRUE(test::write_bytes_in_place(prepared, bytes));
      auto good = (*s)->detect(test_image()->view());
      ASSERT_TRUE(good.ok()) << what << ": " << good.status().to_string();
      ASSERT_EQ(good->size(), first->size()) << what;
      for (size_t i = 0; i < good->size(); ++i) EXPECT_EQ((*good)[i].prob, (*first)[i].prob) << what;
      s->reset();
      std::remove(prepared.c_str());
    }
}

}  // namespace
}  // namespace dlr
