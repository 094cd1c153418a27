// Layers staged whole (runtime/compile/whole_staging.h): with slices, a layer above the
// slot whose whole blob finds room in the activation arena's idle bytes before it runs
// stays whole and is copied there every inference. On yolov4 @608 (CUDA's NHWC plan, the
// h100-like target, kernel times from the cost model): the layers kept whole and their
// places, checked against the plan's buffers alone; the ring holds only slot-sized blobs
// within the budget; the stream plan copies each whole blob once into its arena bytes;
// the simulator's checks pass and the lower bound stays below the prediction; the plan
// round-trips through JSON; --stage-whole off slices every such layer. Where the arena has
// no room a layer is sliced, and a budget that leaves no ring slices every layer.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/compile/whole_staging.h"
#include "runtime/streaming/simulator.h"
#include "tests/common/test_paths.h"
#include "tests/common/weight_fixtures.h"
#include "tests/runtime/yolov4_fixture.h"

namespace dlr {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

struct Yolov4 {
  NetworkDesc net;
  SessionOptions o;
};

bool yolov4_608(Precision p, int64_t budget, Yolov4* y) {
  if (!test::yolov4_608_net(&y->net)) return false;
  y->o.device = DeviceKind::kCUDA;
  y->o.precision = p;
  y->o.layout = 1;  // NHWC
  y->o.mode = WeightMode::kStream;
  y->o.weight_budget = WeightBudget::of_bytes(budget);
  return true;
}

// The model compiled, then compiled again with cost-model kernel times for its steps.
Expected<CompiledModel> with_times(const Yolov4& y, const SessionOptions& o) {
  DLR_ASSIGN_OR_RETURN(CompiledModel first, compile(y.net, test::h100_like_target(), o));
  return compile(y.net, test::h100_like_target(), o, model_layer_ms(y.net, first.plan, 60000.0, 2500.0, 4.0));
}

// From the plan's buffers alone: no activation lives in a whole blob's bytes from the
// end of its wait step to the end of its reader, and no two whole blobs share bytes then.
void check_places(const ExecutionPlan& plan) {
  for (size_t b = 0; b < plan.weights.size(); ++b) {
    const WeightBlob& w = plan.weights[b];
    if (w.arena_offset < 0) continue;
    ASSERT_GE(w.arena_wait, 0);
    ASSERT_LT(w.arena_wait, w.step);
    ASSERT_LE(w.arena_offset + w.bytes, plan.arena_bytes);
    auto overlaps = [&](int64_t off, int64_t bytes, int first, int last) {
      return off < w.arena_offset + w.bytes && w.arena_offset < off + bytes && first <= w.step &&
             w.arena_wait + 1 <= last;
    };
    for (const Buffer& buf : plan.buffers)
      EXPECT_FALSE(overlaps(buf.offset, buf.bytes, buf.first_step, buf.last_step))
          << "blob " << b << " and buffer b" << buf.id;
    for (size_t o = 0; o < b; ++o) {
      const WeightBlob& v = plan.weights[o];
      if (v.arena_offset >= 0) {
        EXPECT_FALSE(overlaps(v.arena_offset, v.bytes, v.arena_wait + 1, v.step)) << "blobs " << o << " and " << b;
      }
    }
  }
}

TEST(WholeStaging, Yolov4LayersAboveTheSlotStayWholeInIdleActivationBytes) {
  DLR_REQUIRE_SHARED_DIR();
  Yolov4 y;
  if (!yolov4_608(Precision::kFP32, 8 * kMiB, &y)) GTEST_SKIP() << "yolov4.cfg not found";
  const Expected<CompiledModel> m = with_times(y, y.o);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const int64_t slot = 4 * kMiB;  // the slot 8 MiB gives: the ring holds two
  int whole = 0, sliced = 0;
  std::set<int> layers;
  for (const Step& st : m->plan.steps) {
    if (st.slices > 0) ++sliced;
    if (st.weight < 0) continue;
    const WeightBlob& w = m->plan.weights[size_t(st.weight)];
    if (w.arena_offset >= 0) {
      ++whole;
      layers.insert(st.layer);
      EXPECT_GT(w.bytes, m->stream.slot_bytes) << "layer " << st.layer;
      EXPECT_EQ(w.filters + w.channels, 0) << "a whole layer's blob";
      EXPECT_EQ(m->stream.blob_resident[size_t(st.weight)], 2) << "staged";
    } else {
      EXPECT_LE(w.bytes, slot) << "layer " << st.layer;
    }
  }
  std::printf("yolov4 @608 fp32 in 8 MiB: %d layers kept whole, %d steps still sliced, predicted %.3f ms, bound %.3f\n",
              whole, sliced, m->predicted_ms, m->lower_bound_ms);
  EXPECT_GE(whole, 10) << "the 19x19 layers' 9 and 18 MiB blobs";
  check_places(m->plan);
  EXPECT_LE(m->stream.device_bytes(), 8 * kMiB);
  int copies = 0;
  for (const TransferUnit& u : m->stream.units)
    if (u.in_arena && m->plan.weights[size_t(u.first_blob)].arena_offset >= 0) {
      ++copies;
      EXPECT_EQ(u.first_blob, u.last_blob);
      EXPECT_EQ(u.pool_offset, m->plan.weights[size_t(u.first_blob)].arena_offset);
    }
  EXPECT_EQ(copies, whole) << "one copy per whole blob";
  const SimResult checked = simulate(m->plan, m->stream, m->target.copy_profile, m->layer_ms);
  EXPECT_TRUE(checked.violations.empty()) << checked.violations.front();
  EXPECT_GT(m->lower_bound_ms, 0);
  EXPECT_LE(m->lower_bound_ms, m->predicted_ms + 1e-9);
  bool noted = false;
  for (const std::string& n : m->notes) noted = noted || n.find("kept whole") != std::string::npos;
  EXPECT_TRUE(noted);
  const std::string json = compiled_model_to_json(*m);
  const Expected<CompiledModel> back = compiled_model_from_json(json, "round trip");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(compiled_model_to_json(*back), json);
  EXPECT_NE(m->plan.to_text().find("staged whole @"), std::string::npos);

  SessionOptions off = y.o;
  off.stage_whole = false;
  const Expected<CompiledModel> s = with_times(y, off);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  for (const WeightBlob& w : s->plan.weights) {
    EXPECT_EQ(w.arena_offset, -1);
    EXPECT_LE(w.bytes, slot);
  }
  EXPECT_GT(s->plan.steps.size(), m->plan.steps.size());
  std::printf("  every layer sliced: %zu steps against %zu, predicted %.3f ms\n", s->plan.steps.size(),
              m->plan.steps.size(), s->predicted_ms);
}

// stage_whole() alone: a blob whose bytes some activation holds until its reader finds
// no place and its layer is returned; one with room before its reader is placed where it
// is free earliest.
TEST(WholeStaging, NoRoomBeforeTheReaderLeavesTheLayerToBeSliced) {
  ExecutionPlan plan;
  plan.arena_bytes = 4 * kMiB;
  for (int i = 0; i < 4; ++i) {
    Step st;
    st.index = st.layer = i;
    st.kind = LayerKind::kConv;
    plan.steps.push_back(st);
  }
  auto blob = [&](int step, int64_t bytes) {
    WeightBlob w;
    w.layer = w.step = step;
    w.bytes = bytes;
    plan.steps[size_t(step)].weight = int(plan.weights.size());
    plan.weights.push_back(w);
  };
  blob(1, 3 * kMiB);  // the arena is full through step 1: no room
  blob(3, 2 * kMiB);  // half of it is free after step 1
  Buffer full;
  full.id = 0;
  full.offset = 0;
  full.bytes = 4 * kMiB;
  full.first_step = 0;
  full.last_step = 1;
  Buffer half = full;
  half.id = 1;
  half.bytes = 2 * kMiB;
  half.first_step = 2;
  half.last_step = 3;
  plan.buffers = {full, half};
  const std::set<int> left = stage_whole(&plan, {1, 3});
  EXPECT_EQ(left, std::set<int>{1});
  EXPECT_EQ(plan.weights[0].arena_offset, -1);
  EXPECT_EQ(plan.weights[1].arena_offset, 2 * kMiB);
  EXPECT_EQ(plan.weights[1].arena_wait, 1);
}

// A budget below the ring's 2 MiB mapping unit plans slots, which cannot stage: the
// layers above the slot are sliced, with a note saying why.
TEST(WholeStaging, ABudgetWithoutARingSlicesEveryLayer) {
  DLR_REQUIRE_SHARED_DIR();
  Yolov4 y;
  if (!yolov4_608(Precision::kFP16, kMiB, &y)) GTEST_SKIP() << "yolov4.cfg not found";
  const Expected<CompiledModel> m = compile(y.net, test::h100_like_target(), y.o);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  for (const WeightBlob& w : m->plan.weights) EXPECT_EQ(w.arena_offset, -1);
  bool noted = false;
  for (const std::string& n : m->notes) noted = noted || n.find("no layer kept whole") != std::string::npos;
  EXPECT_TRUE(noted);
}

// Every shared model, three precisions (int8 weights with fp16 compute the third), slots
// and budgets that slice: the plan compiles without and with kernel times, every blob
// kept whole is placed where check_places says, the ring holds only blobs within the
// slot and stays within the budget, the simulator's checks pass and the bound stays
// below the prediction; the same options with stage_whole off compile too.
TEST(WholeStaging, EveryModelPrecisionAndSlotCompilesAndChecks) {
  DLR_REQUIRE_SHARED_DIR();
  int models = 0, kept = 0;
  for (const char* rel : {"models/yolov4.cfg", "models/yolov4-tiny.cfg", "models/yolov4-csp.cfg",
                          "models/yolov4x-mish.cfg", "models/yolov3.cfg", "models/yolov3-tiny.cfg",
                          "models/yolov7-tiny.cfg"}) {
    const std::string cfg = test::required_shared_file(rel);
    if (cfg.empty()) continue;
    CfgOptions co;
    co.width = co.height = 416;
    Expected<NetworkDesc> net = parse_network_cfg(cfg, co);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    ++models;
    for (int prec = 0; prec < 3; ++prec)
      for (const char* setting : {"slot 1MiB", "slot 2MiB", "budget 8MiB", "slot 512KiB, budget 25%"}) {
        Yolov4 y;
        y.net = *net;
        y.o.device = DeviceKind::kCUDA;
        y.o.precision = prec == 0 ? Precision::kFP32 : Precision::kFP16;
        y.o.weight_format = prec == 2 ? WeightFormat::kInt8 : WeightFormat::kFp;
        y.o.mode = WeightMode::kStream;
        const std::string s = setting;
        y.o.slot_bytes = s == "slot 1MiB" ? kMiB : s == "slot 2MiB" ? 2 * kMiB : s == "budget 8MiB" ? 0 : kMiB / 2;
        y.o.weight_budget = s == "budget 8MiB"           ? WeightBudget::of_bytes(8 * kMiB)
                            : s == "slot 512KiB, budget 25%" ? WeightBudget::percent(25)
                                                             : WeightBudget::min();
        const std::string what = std::string(rel) + " " + precision_name(y.o.precision) +
                                 (prec == 2 ? " int8 " : " ") + setting;
        for (bool whole : {true, false}) {
          SessionOptions o = y.o;
          o.stage_whole = whole;
          const Expected<CompiledModel> m = with_times(y, o);
          if (!m.ok() && m.status().message().find("below the minimum") != std::string::npos) continue;  // 8 MiB < a blob
          ASSERT_TRUE(m.ok()) << what << ": " << m.status().to_string();
          check_places(m->plan);
          for (size_t b = 0; b < m->plan.weights.size(); ++b) {
            const WeightBlob& w = m->plan.weights[b];
            kept += w.arena_offset >= 0;
            if (!whole) {
              EXPECT_EQ(w.arena_offset, -1) << what;
            }
            if (m->streaming && m->stream.in_ring(int(b))) {
              EXPECT_LE(w.bytes, m->stream.pool_bytes) << what << " blob " << b;
            }
          }
          const SimResult checked = simulate(m->plan, m->stream, m->target.copy_profile, m->layer_ms);
          EXPECT_TRUE(checked.violations.empty()) << what << ": " << checked.violations.front();
          if (m->lower_bound_ms > 0) {
            EXPECT_LE(m->lower_bound_ms, m->predicted_ms + 1e-9) << what;
          }
        }
      }
  }
  if (models == 0) GTEST_SKIP() << "shared models not found";
  std::printf("%d models: %d blobs kept whole over all settings\n", models, kept);
  EXPECT_GT(kept, 0);
}

}  // namespace
}  // namespace dlr
