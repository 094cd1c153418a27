// Layers staged whole on a Runtime (runtime/compile/whole_staging.h, docs/streaming.md
// section 8): its models compile with the shared arena, sliced at a 1 MiB slot with the
// layers above it kept whole in idle activation bytes. The joint plan
// (runtime/multi/ring_split.h) then needs a shared ring of two slots, not two of the
// largest blob. Checked without a GPU, as Runtime::open does it: each model compiled
// before its placement (the plan the joint plan reads), the split, then each model
// compiled with its placement: the same blobs in the same arena places, the split's ring,
// a prediction no slower than the split's, the simulator's checks on. Beside it, the same
// models without slices (the ring's floor is twice the largest blob) and sliced
// everywhere, to print the three rounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/compile/whole_staging.h"
#include "runtime/multi/ring_split.h"
#include "runtime/streaming/simulator.h"
#include "tests/common/test_paths.h"
#include "tests/common/weight_fixtures.h"

namespace dlr {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

struct Spec {
  const char* name;
  const char* cfg;
  int size;
};

constexpr Spec kSpecs[] = {{"yolov4@608", "models/yolov4.cfg", 608},
                           {"yolov3@608", "models/yolov3.cfg", 608},
                           {"yolov4-tiny@416", "models/yolov4-tiny.cfg", 416}};

// A model as Runtime::open holds it: its options on the runtime, its plan compiled with
// the shared arena before any placement, kernel times from the cost model.
struct Hosted {
  NetworkDesc net;
  SessionOptions o;
  CompiledModel first;
  std::vector<double> ms;
};

SessionOptions hosted_options(int64_t slot, bool whole) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.mode = WeightMode::kStream;
  o.weight_budget = WeightBudget::min();
  o.weight_pool = PoolLayout::kRing;
  o.prefetch_next = true;
  o.slot_bytes = slot;
  o.stage_whole = whole;
  return o;
}

Status host(const Spec& s, int64_t slot, bool whole, Hosted* h) {
  CfgOptions co;
  co.width = co.height = s.size;
  DLR_ASSIGN_OR_RETURN(h->net, parse_network_cfg(test::required_shared_file(s.cfg), co));
  h->o = hosted_options(slot, whole);
  CompileInputs first;
  first.shared_memory = true;
  DLR_ASSIGN_OR_RETURN(h->first, compile(h->net, test::h100_like_target(), h->o, first));
  h->ms = model_layer_ms(h->net, h->first.plan, 120000.0, 2500.0, 4.0);
  return Status();
}

// The joint plan of the hosted models in `weight_budget`, each model compiled again with
// its placement and checked; returns the split.
// What the joint plan reads of each hosted model (the plans stay in `hosted`).
std::vector<RingModel> ring_models(const std::vector<Hosted>& hosted) {
  std::vector<RingModel> models;
  for (size_t i = 0; i < hosted.size(); ++i) {
    RingModel m;
    m.name = kSpecs[i].name;
    m.plan = &hosted[i].first.plan;
    m.layer_ms = hosted[i].ms;
    m.target = test::h100_like_target();
    m.options = hosted[i].o;
    models.push_back(std::move(m));
  }
  return models;
}

RingSplit split_and_place(std::vector<Hosted>& hosted, int64_t weight_budget) {
  const Expected<RingSplit> s =
      split_shared_ring(ring_models(hosted), weight_budget, test::h100_like_target().map_granularity, SplitObjective::kMaxSlowdown);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return RingSplit();
  for (size_t i = 0; i < hosted.size(); ++i) {
    SCOPED_TRACE(kSpecs[i].name);
    const Placement p = placement_of(*s, i);
    CompileInputs in;
    in.shared_memory = true;
    in.placement = &p;
    in.layer_ms = hosted[i].ms;
    const Expected<CompiledModel> m = compile(hosted[i].net, test::h100_like_target(), hosted[i].o, in);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (!m.ok()) continue;
    const ExecutionPlan& before = hosted[i].first.plan;
    EXPECT_EQ(m->plan.weights.size(), before.weights.size());
    for (size_t b = 0; b < std::min(m->plan.weights.size(), before.weights.size()); ++b) {
      EXPECT_EQ(m->plan.weights[b].bytes, before.weights[b].bytes) << "blob " << b;
      EXPECT_EQ(m->plan.weights[b].arena_offset, before.weights[b].arena_offset) << "blob " << b;
      EXPECT_EQ(m->plan.weights[b].arena_wait, before.weights[b].arena_wait) << "blob " << b;
    }
    if (!s->in_ring[i]) continue;
    EXPECT_EQ(m->stream.pool_bytes, s->ring_bytes);
    EXPECT_LE(m->predicted_ms, s->predicted_ms[i] + 1e-9);
    SimOptions sim;
    sim.prefetched = true;
    sim.prefetch_limit_bytes = p.prefetch_limit_bytes;
    const SimResult r = simulate(m->plan, m->stream, m->target.copy_profile, m->layer_ms, sim);
    EXPECT_TRUE(r.violations.empty()) << r.violations.front();
  }
  return *s;
}

double round_ms(const RingSplit& s) {
  double sum = 0;
  for (double ms : s.predicted_ms) sum += ms;
  return sum;
}

int64_t largest_blob(const ExecutionPlan& plan) {
  int64_t largest = 0;
  for (const WeightBlob& w : plan.weights) largest = std::max(largest, w.bytes);
  return largest;
}

struct Variant {
  const char* name;
  int64_t slot;
  bool whole;
};

constexpr Variant kVariants[] = {{"1 MiB slots, layers kept whole", kMiB, true},
                                 {"whole layers (no slot)", 0, false},
                                 {"1 MiB slots, every layer sliced", kMiB, false}};

std::vector<Hosted> host_all(const Variant& v) {
  std::vector<Hosted> hosted(std::size(kSpecs));
  for (size_t i = 0; i < hosted.size(); ++i) {
    const Status st = host(kSpecs[i], v.slot, v.whole, &hosted[i]);
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  return hosted;
}

// About what 30 % of the four detectors' separate sessions leaves for weights: each
// variant's joint plan, its models compiled alike before and after their placement.
TEST(RuntimeWholeStaging, ModelsCompileAlikeBeforeAndAfterTheJointPlan) {
  DLR_REQUIRE_SHARED_DIR();
  std::vector<std::vector<Hosted>> all;
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(v.name);
    std::vector<Hosted> hosted = host_all(v);
    const RingSplit s = split_and_place(hosted, 58 * kMiB);
    std::printf("--- %s: ring %.2f MiB, predicted round %.3f ms\n%s\n", v.name, double(s.ring_bytes) / kMiB,
                round_ms(s), s.how.c_str());
    all.push_back(std::move(hosted));
  }
  // Kept whole: yolov4's and yolov3's largest layers, in the shared arena's idle bytes;
  // nothing above the slot in the ring.
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(kSpecs[i].name);
    const ExecutionPlan& plan = all[0][i].first.plan;
    EXPECT_GT(staged_whole_bytes(plan), 0);
    for (const WeightBlob& w : plan.weights) {
      if (w.arena_offset < 0) {
        EXPECT_LE(w.bytes, kMiB);
      }
    }
    EXPECT_EQ(largest_blob(plan), largest_blob(all[1][i].first.plan)) << "the largest layer stays whole";
  }
}

// 8 MiB for every model's weights, below the smallest ring of whole layers (about twice
// yolov4's 9 MiB blob): refused with one line without slices; with 1 MiB slots the ring
// fits, and keeping the large layers whole is predicted faster than slicing them.
TEST(RuntimeWholeStaging, SlicesLetTheRuntimeRunBelowTheRingOfWholeLayers) {
  DLR_REQUIRE_SHARED_DIR();
  const std::vector<Hosted> whole_layers = host_all(kVariants[1]);
  const Expected<RingSplit> refused = split_shared_ring(ring_models(whole_layers), 8 * kMiB, 2 * kMiB, SplitObjective::kMaxSlowdown);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kOutOfMemory);
  EXPECT_EQ(refused.status().message().find('\n'), std::string::npos);
  EXPECT_NE(refused.status().message().find("slot_bytes on yolov4@608, yolov3@608, yolov4-tiny@416"), std::string::npos)
      << "names the models without a slot";
  std::printf("whole layers in 8 MiB: %s\n", refused.status().message().c_str());
  double rounds[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    const Variant& v = kVariants[k == 0 ? 0 : 2];
    SCOPED_TRACE(v.name);
    std::vector<Hosted> hosted = host_all(v);
    const RingSplit s = split_and_place(hosted, 8 * kMiB);
    ASSERT_FALSE(s.predicted_ms.empty());
    EXPECT_GT(s.ring_bytes, 0);
    EXPECT_LE(s.ring_bytes, 8 * kMiB);
    rounds[k] = round_ms(s);
    std::printf("--- %s in 8 MiB: ring %.2f MiB, predicted round %.3f ms\n%s\n", v.name, double(s.ring_bytes) / kMiB,
                rounds[k], s.how.c_str());
  }
  EXPECT_LT(rounds[0], rounds[1]);
}

}  // namespace
}  // namespace dlr
