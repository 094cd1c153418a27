// The placement passes (runtime/compile/placement.h), each on its own: what it decides,
// when it defers to kernel times, and that compile() is exactly their pipeline.
// yolov4-tiny (fp16 NHWC) on a hand-made H100-like target; kernel times from FLOPs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/streaming/simulator.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

struct Fixture {
  NetworkDesc net;
  Target target;
  ExecutionPlan plan;
  std::vector<double> ms;
};

SessionOptions stream(const std::string& budget) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.mode = WeightMode::kStream;
  o.weight_budget = *WeightBudget::parse(budget);
  return o;
}

Fixture tiny_fixture() {
  Fixture f;
  f.net = *parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  f.target.device = DeviceKind::kCUDA;
  f.target.name = "hand-made H100-like target";
  f.target.map_granularity = int64_t(2) << 20;
  f.target.copy_profile = *CopyProfile::builtin("h100");
  SessionOptions o = stream("min");
  f.plan = *build_plan(f.net, planner_options(DeviceKind::kCUDA, o));
  f.ms = model_layer_ms(f.net, f.plan, 20000.0, 1500.0, 5.0);
  return f;
}

bool has_note(const PlacementState& s, const std::string& text) {
  return std::any_of(s.notes.begin(), s.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

TEST(PlacementPasses, PreloadKeepsEveryBlobResident) {
  Fixture f = tiny_fixture();
  SessionOptions o = stream("min");
  o.mode = WeightMode::kPreload;
  PlacementState s = placement_state(f.plan, f.target, o, f.ms, nullptr);
  ASSERT_TRUE(plan_placement(s).ok());
  EXPECT_FALSE(s.streaming);
  EXPECT_FALSE(s.from_storage);
  EXPECT_TRUE(has_note(s, "weights: preload"));
}

TEST(PlacementPasses, BudgetPassResolvesTheBudgetAndPlansTheMinimalPool) {
  Fixture f = tiny_fixture();
  const SessionOptions o = stream("min");
  PlacementState s = placement_state(f.plan, f.target, o, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(s).ok());
  EXPECT_TRUE(s.streaming);
  EXPECT_EQ(s.budget_bytes, 0);  // the layout's minimum
  EXPECT_EQ(s.stream.layout, PoolLayout::kRing);
  EXPECT_EQ(s.stream.pool_bytes, s.stream.minimal_pool_bytes);
  // A placement's budget holding every weight without a ring: all resident.
  Placement all;
  all.budget_bytes = f.plan.weight_bytes();
  PlacementState t = placement_state(f.plan, f.target, o, f.ms, &all);
  ASSERT_TRUE(budget_pass(t).ok());
  EXPECT_TRUE(t.stream.resident);
  // Auto needs the ring pool: refused without one, naming why.
  Target no_vmm = f.target;
  no_vmm.map_granularity = 0;
  PlacementState u = placement_state(f.plan, no_vmm, stream("auto"), f.ms, nullptr);
  const Status st = budget_pass(u);
  EXPECT_EQ(st.message(), "weight budget auto needs the ring pool (a GPU with CUDA virtual memory management)");
}

TEST(PlacementPasses, PassesWithoutKernelTimesDeferAndSayWhy) {
  Fixture f = tiny_fixture();
  const std::vector<double> none;
  const SessionOptions o = stream("90%");
  PlacementState s = placement_state(f.plan, f.target, o, none, nullptr);
  ASSERT_TRUE(plan_placement(s).ok());
  EXPECT_TRUE(s.wants_times);
  EXPECT_TRUE(has_note(s, "residency: chosen once kernel times are measured at open"));
  EXPECT_TRUE(has_note(s, "units: equal chunks until kernel times are measured at open"));
  EXPECT_EQ(s.predicted_ms, 0);
  // A budget with nothing to choose (min, equal chunks, no staging) wants none.
  SessionOptions fixed = stream("min");
  fixed.unit_search = false;
  fixed.arena_staging = false;
  PlacementState t = placement_state(f.plan, f.target, fixed, none, nullptr);
  ASSERT_TRUE(plan_placement(t).ok());
  EXPECT_FALSE(t.wants_times);
}

TEST(PlacementPasses, ResidencyKeepsBlobsWithinTheBudget) {
  Fixture f = tiny_fixture();
  const SessionOptions o = stream("90%");
  PlacementState s = placement_state(f.plan, f.target, o, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(s).ok());
  ASSERT_TRUE(residency_pass(s).ok());
  EXPECT_GT(s.stream.resident_bytes, 0);
  EXPECT_LE(s.stream.device_bytes(), s.budget_bytes);
  EXPECT_EQ(s.resident_set.size(), f.plan.weights.size());
  EXPECT_GT(s.predicted_ms, 0);
  // residency none: nothing is kept resident.
  SessionOptions none = o;
  none.residency = Residency::kNone;
  PlacementState t = placement_state(f.plan, f.target, none, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(t).ok());
  ASSERT_TRUE(residency_pass(t).ok());
  EXPECT_EQ(t.stream.resident_bytes, 0);
}

TEST(PlacementPasses, ASharedRingKeepsThePlacementsRingAndSet) {
  Fixture f = tiny_fixture();
  const SessionOptions o = stream("min");
  PlacementState first = placement_state(f.plan, f.target, o, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(first).ok());
  Placement p;
  p.shared_ring_bytes = first.stream.pool_bytes;
  p.budget_bytes = p.shared_ring_bytes + (int64_t(1) << 20);
  PlacementState s = placement_state(f.plan, f.target, o, f.ms, &p);
  ASSERT_TRUE(budget_pass(s).ok());
  ASSERT_TRUE(residency_pass(s).ok());
  EXPECT_EQ(s.stream.pool_bytes, p.shared_ring_bytes);
  EXPECT_LE(s.stream.resident_bytes, int64_t(1) << 20);
  // The joint plan's fixed set is planned as it is.
  p.resident = s.resident_set;
  PlacementState t = placement_state(f.plan, f.target, o, f.ms, &p);
  ASSERT_TRUE(budget_pass(t).ok());
  ASSERT_TRUE(residency_pass(t).ok());
  EXPECT_EQ(t.stream.blob_resident, s.stream.blob_resident);
  EXPECT_TRUE(has_note(t, "residency: the runtime's joint plan"));
}

TEST(PlacementPasses, StagingOnlyWhereItPredictsFaster) {
  Fixture f = tiny_fixture();
  const SessionOptions o = stream("min");
  PlacementState s = placement_state(f.plan, f.target, o, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(s).ok());
  const double before = simulate(f.plan, s.stream, s.profile, f.ms).latency_ms;
  s.predicted_ms = before;
  ASSERT_TRUE(staging_pass(s).ok());
  EXPECT_LE(s.predicted_ms, before);
  if (!s.so.arena_offset.empty()) {
    EXPECT_GT(s.stream.staged_bytes, 0);
  }
  // Off in the options, or weights from storage: the pass leaves the plan alone.
  SessionOptions off = o;
  off.arena_staging = false;
  PlacementState t = placement_state(f.plan, f.target, off, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(t).ok());
  ASSERT_TRUE(staging_pass(t).ok());
  EXPECT_TRUE(t.so.arena_offset.empty());
  EXPECT_TRUE(t.notes.empty());
}

TEST(PlacementPasses, UnitsAreSearchedOrChunkedAsTheOptionsSay) {
  Fixture f = tiny_fixture();
  const SessionOptions o = stream("min");
  PlacementState s = placement_state(f.plan, f.target, o, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(s).ok());
  const int64_t pool = s.stream.pool_bytes;
  ASSERT_TRUE(units_pass(s).ok());
  EXPECT_EQ(s.stream.pool_bytes, pool);  // only the cut changes
  EXPECT_TRUE(has_note(s, "units:"));
  SessionOptions chunks = o;
  chunks.unit_search = false;
  PlacementState t = placement_state(f.plan, f.target, chunks, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(t).ok());
  ASSERT_TRUE(units_pass(t).ok());
  EXPECT_FALSE(t.stream.units_searched);
  EXPECT_TRUE(has_note(t, "equal chunks"));
}

TEST(PlacementPasses, ReadsFromStorageInThreeOrTwoStages) {
  Fixture f = tiny_fixture();
  SessionOptions o = stream("min");
  o.weights_from = WeightsFrom::kStorage;
  o.zero_copy = 0;
  ExecutionPlan plan = *build_plan(f.net, planner_options(DeviceKind::kCUDA, o));  // 4 KiB-aligned blobs
  const std::vector<double> ms = model_layer_ms(f.net, plan, 20000.0, 1500.0, 5.0);
  PlacementState s = placement_state(plan, f.target, o, ms, nullptr);
  ASSERT_TRUE(budget_pass(s).ok());
  ASSERT_TRUE(reads_pass(s).ok());
  EXPECT_TRUE(s.from_storage);
  EXPECT_FALSE(s.reads.two_stage);
  EXPECT_FALSE(s.reads.units.empty());
  o.zero_copy = 1;
  PlacementState t = placement_state(plan, f.target, o, ms, nullptr);
  ASSERT_TRUE(plan_placement(t).ok());
  EXPECT_TRUE(t.reads.two_stage);
  EXPECT_FALSE(t.streaming);
}

TEST(PlacementPasses, TailCopiesWhereTheySimulateFasterAndOnlyInASessionsOwnRing) {
  Fixture f = tiny_fixture();
  int chosen = 0;
  // Copy-bound with slow last layers: the copy engine idles under them.
  std::vector<double> faster = f.ms;
  for (size_t i = 0; i < faster.size(); ++i) faster[i] *= i + 6 >= faster.size() ? 8.0 : 0.125;
  for (const char* budget : {"min", "75%", "85%", "95%"}) {
   for (const std::vector<double>* ms : {&f.ms, &faster}) {
    SCOPED_TRACE(std::string(budget) + (ms == &faster ? " faster kernels" : ""));
    SessionOptions o = stream(budget);
    o.tail_prefetch = true;
    PlacementState s = placement_state(f.plan, f.target, o, *ms, nullptr);
    const Status st = plan_placement(s);
    ASSERT_TRUE(st.ok()) << st.to_string();
    if (!s.streamed_ring()) continue;
    EXPECT_TRUE(has_note(s, "tail: "));
    // The steady state is what is predicted; without the tail the plan is no faster
    // than the chosen one by the units' minimum gain.
    SimOptions steady;
    steady.tail = true;
    EXPECT_DOUBLE_EQ(s.predicted_ms, simulate(f.plan, s.stream, f.target.copy_profile, *ms, steady).latency_ms);
    StreamPlan without = s.stream;
    ASSERT_TRUE(set_tail_units(f.plan, &without, 0).ok());
    const double plain = simulate(f.plan, without, f.target.copy_profile, *ms).latency_ms;
    if (s.stream.tail_units == 0) {
      EXPECT_TRUE(has_note(s, "tail: none"));
      continue;
    }
    ++chosen;
    EXPECT_LE(s.predicted_ms, plain * (1.0 - o.unit_search_min_gain) + 1e-9);
    EXPECT_TRUE(has_note(s, "tail: the next inference's first"));
    EXPECT_NE(s.stream.to_text().find("tail: the next inference's units 0-"), std::string::npos);
   }
  }
  EXPECT_GT(chosen, 0) << "no budget of yolov4-tiny gained from tail copies";
  // Never predicted slower than the same budget without tail copies (plan_placement keeps
  // the faster of the choices made for the steady state and for one inference).
  for (const char* budget : {"min", "75%", "80%", "85%", "90%", "95%"})
    for (const std::vector<double>* ms : {&f.ms, &faster}) {
      SessionOptions o = stream(budget);
      PlacementState without = placement_state(f.plan, f.target, o, *ms, nullptr);
      ASSERT_TRUE(plan_placement(without).ok());
      o.tail_prefetch = true;
      PlacementState with = placement_state(f.plan, f.target, o, *ms, nullptr);
      ASSERT_TRUE(plan_placement(with).ok());
      EXPECT_LE(with.predicted_ms, without.predicted_ms + 1e-9) << budget;
    }
  // Off (the default), in a Runtime's placement, from storage: no tail, no note.
  SessionOptions off = stream("85%");
  PlacementState a = placement_state(f.plan, f.target, off, f.ms, nullptr);
  ASSERT_TRUE(plan_placement(a).ok());
  EXPECT_EQ(a.stream.tail_units, 0);
  EXPECT_FALSE(has_note(a, "tail:"));
  SessionOptions in_runtime = stream("85%");
  in_runtime.tail_prefetch = true;
  in_runtime.prefetch_next = true;
  PlacementState b = placement_state(f.plan, f.target, in_runtime, f.ms, nullptr);
  ASSERT_TRUE(plan_placement(b).ok());
  EXPECT_EQ(b.stream.tail_units, 0);
  SessionOptions storage = stream("85%");
  storage.tail_prefetch = true;
  storage.weights_from = WeightsFrom::kStorage;
  storage.zero_copy = 0;
  ExecutionPlan splan = *build_plan(f.net, planner_options(DeviceKind::kCUDA, storage));
  const std::vector<double> sms = model_layer_ms(f.net, splan, 20000.0, 1500.0, 5.0);
  PlacementState c = placement_state(splan, f.target, storage, sms, nullptr);
  ASSERT_TRUE(plan_placement(c).ok());
  EXPECT_EQ(c.stream.tail_units, 0);
  // Without kernel times the choice waits for them.
  SessionOptions later = stream("85%");
  later.tail_prefetch = true;
  const std::vector<double> none;
  PlacementState d = placement_state(f.plan, f.target, later, none, nullptr);
  ASSERT_TRUE(plan_placement(d).ok());
  EXPECT_TRUE(d.wants_times);
  EXPECT_TRUE(has_note(d, "tail: chosen once kernel times are measured"));
}

TEST(PlacementPasses, PredictionAndBoundFollowTheSimulator) {
  Fixture f = tiny_fixture();
  const SessionOptions o = stream("min");
  PlacementState s = placement_state(f.plan, f.target, o, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(s).ok());
  ASSERT_TRUE(predict_pass(s).ok());
  EXPECT_DOUBLE_EQ(s.predicted_ms, simulate(f.plan, s.stream, f.target.copy_profile, f.ms).latency_ms);
  ASSERT_TRUE(bound_pass(s).ok());
  EXPECT_GT(s.lower_bound_ms, 0);
  EXPECT_LE(s.lower_bound_ms, s.predicted_ms + 1e-9);
}

TEST(PlacementPasses, AutoBudgetIsTheSmallestWithinTheTarget) {
  Fixture f = tiny_fixture();
  SessionOptions o = stream("auto");
  o.max_slowdown = 0.10;
  PlacementState s = placement_state(f.plan, f.target, o, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(s).ok());
  ASSERT_TRUE(auto_budget_pass(s).ok());
  ASSERT_GT(s.auto_preload_ms, 0);
  const double at = *predict_at_budget(s, s.budget_bytes, s.auto_preload_ms);
  EXPECT_LE(at, s.auto_preload_ms * 1.10 + 1e-9);
  // One mapping unit less no longer meets the target (unless the minimum already does).
  if (s.budget_bytes > s.stream.minimal_pool_bytes) {
    const double less = *predict_at_budget(s, s.budget_bytes - f.target.map_granularity, s.auto_preload_ms);
    EXPECT_GT(less, s.auto_preload_ms * 1.10);
  }
}

// A model whose weights are small next to the mapping unit (yolo-fastest-1.1, about
// 0.6 MiB in fp16, against 2 MiB units): budget auto on a VMM GPU plans a valid budget,
// with and without kernel times, rather than refusing for want of a ring pool.
TEST(PlacementPasses, AutoBudgetOnAModelSmallerThanTheRingsMinimum) {
  Fixture f;
  f.net = *parse_network_cfg(test::required_shared_file("weights/yolo-fastest-1.1.cfg"));
  f.target = tiny_fixture().target;
  const SessionOptions o = stream("auto");
  f.plan = *build_plan(f.net, planner_options(DeviceKind::kCUDA, o));
  f.ms = model_layer_ms(f.net, f.plan, 20000.0, 1500.0, 5.0);
  std::vector<double> none;
  for (std::vector<double>* ms : {&f.ms, &none}) {  // kernel times measured, then not yet
    PlacementState s = placement_state(f.plan, f.target, o, *ms, nullptr);
    const Status st = plan_placement(s);
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_TRUE(s.streaming);
    EXPECT_TRUE(s.stream.resident);  // the ring's minimum (one 2 MiB unit) holds every weight
    EXPECT_EQ(s.budget_bytes, f.plan.weight_bytes());
    EXPECT_FALSE(s.wants_times);
    EXPECT_TRUE(has_note(s, "budget auto: every weight resident (0.65 MiB): the ring's minimum of 2.00 MiB"));
    Expected<CompiledModel> m = compile(f.net, f.target, o, *ms);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
  }
  // The slots pool asked for: the reason names the option.
  SessionOptions slots = o;
  slots.weight_pool = PoolLayout::kSlots;
  PlacementState v = placement_state(f.plan, f.target, slots, f.ms, nullptr);
  EXPECT_EQ(budget_pass(v).message(), "weight budget auto needs the ring pool: weight_pool slots was asked for");
  // Without VMM the reason stays the ring pool's.
  Target no_vmm = f.target;
  no_vmm.map_granularity = 0;
  PlacementState u = placement_state(f.plan, no_vmm, o, f.ms, nullptr);
  EXPECT_EQ(budget_pass(u).message(),
            "weight budget auto needs the ring pool (a GPU with CUDA virtual memory management)");
}

// compile() is the pipeline: its placement equals the passes run by hand.
TEST(PlacementPasses, CompileIsThePipeline) {
  Fixture f = tiny_fixture();
  for (const char* budget : {"min", "90%", "auto", "85%+tail"}) {
    SessionOptions o = stream(std::string(budget).substr(0, std::string(budget).find('+')));
    o.tail_prefetch = std::string(budget).find("+tail") != std::string::npos;
    Expected<CompiledModel> m = compile(f.net, f.target, o, f.ms);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    PlacementState s = placement_state(m->plan, f.target, o, f.ms, nullptr);
    ASSERT_TRUE(plan_placement(s).ok());
    EXPECT_EQ(s.stream.units.size(), m->stream.units.size()) << budget;
    EXPECT_EQ(s.stream.resident_bytes, m->stream.resident_bytes) << budget;
    EXPECT_EQ(s.budget_bytes, m->budget_bytes) << budget;
    EXPECT_DOUBLE_EQ(s.predicted_ms, m->predicted_ms) << budget;
    EXPECT_EQ(s.stream.tail_units, m->stream.tail_units) << budget;
  }
}

// A Runtime's candidate evaluated by estimate_placement is what compile() plans for it.
TEST(PlacementPasses, EstimateIsWhatCompilePlansForTheCandidate) {
  Fixture f = tiny_fixture();
  SessionOptions o = stream("min");
  o.weight_pool = PoolLayout::kRing;
  PlacementState first = placement_state(f.plan, f.target, o, f.ms, nullptr);
  ASSERT_TRUE(budget_pass(first).ok());
  Placement p;
  p.shared_ring_bytes = first.stream.pool_bytes;
  p.budget_bytes = p.shared_ring_bytes + (int64_t(2) << 20);
  SimOptions sim;
  const Expected<PlacementEstimate> e =
      estimate_placement({&f.plan, &f.target, &o, &f.ms}, p, sim, PassEffort{}, false);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  CompileInputs in;
  in.layer_ms = f.ms;
  in.placement = &p;
  Expected<CompiledModel> m = compile(f.net, f.target, o, in);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->stream.blob_resident, e->stream.blob_resident);
  EXPECT_EQ(m->stream.pool_bytes, e->stream.pool_bytes);
}

}  // namespace
}  // namespace dlr
