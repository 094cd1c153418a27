// The compile step (runtime/compile/compile.h): typed options validated before any file
// work, the compiled model's JSON round trip, measure-then-replan as two compiles,
// and the dependency direction of the headers the issue names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/session.h"
#include "runtime/streaming/simulator.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

Expected<NetworkDesc> tiny() { return parse_network_cfg(test::source_file("models/yolov4-tiny.cfg")); }

Target gpu_target(const std::string& profile = "h100") {
  Target t;
  t.device = DeviceKind::kCUDA;
  t.name = "hand-made H100-like target";
  t.memory_bytes = int64_t(80) << 30;
  t.map_granularity = int64_t(2) << 20;
  t.copy_profile = *CopyProfile::builtin(profile);
  return t;
}

SessionOptions stream_options(const std::string& budget) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.mode = WeightMode::kStream;
  o.weight_budget = *WeightBudget::parse(budget);
  return o;
}

void expect_round_trip(const CompiledModel& m) {
  const std::string json = compiled_model_to_json(m);
  Expected<CompiledModel> back = compiled_model_from_json(json, "round trip");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(compiled_model_to_json(*back), json);
  EXPECT_EQ(back->to_text(), m.to_text());
  // A few fields compared directly, so a serialiser that drops a field on both
  // sides still fails here.
  ASSERT_EQ(back->plan.steps.size(), m.plan.steps.size());
  for (size_t i = 0; i < m.plan.steps.size(); ++i) {
    EXPECT_EQ(back->plan.steps[i].params.index(), m.plan.steps[i].params.index()) << i;
    EXPECT_EQ(back->plan.steps[i].out, m.plan.steps[i].out) << i;
  }
  EXPECT_EQ(back->stream.units.size(), m.stream.units.size());
  EXPECT_EQ(back->stream.unit_waits, m.stream.unit_waits);
  EXPECT_EQ(back->stream.tail_units, m.stream.tail_units);
  EXPECT_EQ(back->stream.tail_waits, m.stream.tail_waits);
  EXPECT_EQ(back->layer_ms, m.layer_ms);
  EXPECT_TRUE(back->options->weight_budget == m.options->weight_budget);
  EXPECT_EQ(back->target.copy_profile.name, m.target.copy_profile.name);
}

// The CPU reads from storage into a staging area; a host budget above its minimum keeps
// the largest blobs in memory instead (read once at open). yolov4 @416 fp32 has six
// 18 MiB blobs (3x3, 512 -> 1024): 100 MiB keeps the three latest (layers 155, 157,
// 159), 130 MiB the five latest; the staging stays at the all-read minimum (2 x 18 MiB,
// although keeping all six would let it halve), both stay within the budget, and the
// choice survives the plan's JSON.
TEST(Compile, CpuStorageHostBudgetKeepsTheLargestBlobs) {
  const std::string cfg = test::required_shared_file("models/yolov4.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  auto net = parse_network_cfg(cfg);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  SessionOptions o;
  o.width = o.height = 416;
  o.weights_from = WeightsFrom::kStorage;
  auto none = compile(*net, cpu_target(), o);
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(none->reads.read_bytes(), none->plan.weight_bytes());
  const int64_t min_none = none->reads.min_staging_bytes;
  std::vector<int> big_layers;
  for (const WeightBlob& w : none->plan.weights)
    if (w.bytes > (16 << 20)) big_layers.push_back(w.layer);
  ASSERT_EQ(big_layers.size(), 6u);
  for (int budget_mib : {100, 130}) {
    SCOPED_TRACE(budget_mib);
    o.host_budget = int64_t(budget_mib) << 20;
    auto m = compile(*net, cpu_target(), o);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    int64_t kept = 0;
    std::vector<int> big;
    for (size_t b = 0; b < m->plan.weights.size(); ++b) {
      const WeightBlob& w = m->plan.weights[b];
      if (m->reads.blob_staging_offset[b] >= 0) continue;
      kept += w.bytes;
      if (w.bytes > (16 << 20)) big.push_back(w.layer);
    }
    if (budget_mib == 100) {
      EXPECT_EQ(big, (std::vector<int>{155, 157, 159}));
    } else {
      EXPECT_EQ(big, std::vector<int>(big_layers.begin() + 1, big_layers.end()));
    }
    EXPECT_EQ(m->reads.min_staging_bytes, min_none);
    EXPECT_GE(m->reads.staging_bytes, min_none) << "the staging went below the all-read minimum";
    EXPECT_LE(kept + m->reads.staging_bytes, o.host_budget);
    EXPECT_GE(m->reads.staging_bytes, m->reads.min_staging_bytes);
    EXPECT_EQ(m->reads.read_bytes() + kept, m->plan.weight_bytes());
    bool noted = false;
    for (const std::string& n : m->notes) noted |= n.find("kept in memory (read once at open)") != std::string::npos;
    EXPECT_TRUE(noted);
    expect_round_trip(*m);
  }
  // Below the minimum staging with nothing worth keeping: refused, both sizes named.
  o.host_budget = int64_t(1) << 20;
  auto small = compile(*net, cpu_target(), o);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("below the minimum for reading from storage"), std::string::npos)
      << small.status().message();
}

TEST(Compile, StepsCarryTheOpParameters) {
  auto net = tiny();
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  auto m = compile(*net, cpu_target(), SessionOptions{});
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_EQ(m->plan.steps.size(), net->layers.size());
  for (const LayerDesc& l : net->layers) {
    const Step& s = m->plan.steps[size_t(l.index)];
    EXPECT_EQ(s.kind, l.kind);
    EXPECT_EQ(s.in, l.in);
    EXPECT_EQ(s.out, l.out);
    EXPECT_EQ(s.cfg_line, l.cfg_line);
    EXPECT_EQ(s.params.index(), l.params.index());
    if (l.kind == LayerKind::kConv) {
      EXPECT_EQ(std::get<ConvParams>(s.params).filters, l.conv().filters);
      EXPECT_EQ(std::get<ConvParams>(s.params).activation, l.conv().activation);
    }
    if (l.kind == LayerKind::kYolo) {
      EXPECT_EQ(m->plan.yolo(l.index).anchors, l.yolo().anchors);
    }
  }
  EXPECT_FALSE(m->streaming);
  EXPECT_FALSE(m->needs_layer_times());
  EXPECT_NE(m->to_text().find("weights: preload"), std::string::npos) << m->to_text();
  expect_round_trip(*m);
}

TEST(Compile, StreamModelRoundTripsAndMeasureThenReplan) {
  auto net = tiny();
  ASSERT_TRUE(net.ok());
  const Target t = gpu_target();
  auto first = compile(*net, t, stream_options("min"));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(first->streaming);
  EXPECT_EQ(first->stream.layout, PoolLayout::kRing);
  EXPECT_TRUE(first->needs_layer_times());
  EXPECT_EQ(first->predicted_ms, 0.0);
  expect_round_trip(*first);

  // Second compile with kernel times (modelled here; measured on the device at open).
  const std::vector<double> ms = model_layer_ms(*net, first->plan, 200e3, 2000, 3.0);
  auto second = compile(*net, t, stream_options("min"), ms);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_FALSE(second->needs_layer_times());
  EXPECT_GT(second->predicted_ms, 0.0);
  EXPECT_EQ(second->stream.pool_bytes, first->stream.pool_bytes);  // replan keeps the pool
  EXPECT_EQ(second->stream.search_layer_ms, ms);
  expect_round_trip(*second);

  // Tail copies survive the round trip, and show in the plan's text.
  CompiledModel tailed = *second;
  ASSERT_TRUE(set_tail_units(tailed.plan, &tailed.stream, 1).ok());
  ASSERT_EQ(tailed.stream.tail_units, 1);
  EXPECT_NE(tailed.stream.to_text().find("tail: the next inference's units 0-0"), std::string::npos);
  expect_round_trip(tailed);

  // The same inputs compile to the same model (deterministic).
  auto again = compile(*net, t, stream_options("min"), ms);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(compiled_model_to_json(*again), compiled_model_to_json(*second));

  // Without a ring (no VMM on the target) the slots layout is chosen, no measurement needed.
  Target no_vmm = t;
  no_vmm.map_granularity = 0;
  auto slots = compile(*net, no_vmm, stream_options("90%"));
  ASSERT_TRUE(slots.ok()) << slots.status().to_string();
  EXPECT_EQ(slots->stream.layout, PoolLayout::kSlots);
  EXPECT_FALSE(slots->needs_layer_times());
  auto all = compile(*net, t, stream_options("all"));
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->stream.resident);
  EXPECT_EQ(all->device_weight_bytes(), all->plan.weight_bytes());
}

// Every layer kind's parameters survive the JSON round trip: every Darknet cfg that
// loads, compiled for the CPU and streamed for a GPU target.
// A Runtime's shared ring: the pool is exactly the ring, the resident set the one given;
// a set of the wrong size is refused with one line.
TEST(Compile, SharedRingPlansTheGivenRingAndSet) {
  auto net = tiny();
  ASSERT_TRUE(net.ok());
  const Target t = gpu_target();
  auto first = compile(*net, t, stream_options("min"));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const std::vector<double> ms = model_layer_ms(*net, first->plan, 200e3, 2000, 3.0);
  const int64_t ring = first->stream.pool_bytes;
  const SessionOptions o = stream_options("min");
  Placement p;
  p.budget_bytes = ring + (int64_t(1) << 20);
  p.shared_ring_bytes = ring;
  p.resident.assign(first->plan.weights.size(), 0);
  CompileInputs in;
  in.layer_ms = ms;
  in.placement = &p;
  auto shared = compile(*net, t, o, in);
  ASSERT_TRUE(shared.ok()) << shared.status().to_string();
  EXPECT_TRUE(shared->engine.shared_ring);
  EXPECT_EQ(shared->stream.pool_bytes, ring);
  EXPECT_EQ(shared->stream.resident_bytes, 0);
  p.resident.pop_back();
  auto bad = compile(*net, t, o, in);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "shared ring: a resident set of " +
                                        std::to_string(first->plan.weights.size() - 1) + " entries for " +
                                        std::to_string(first->plan.weights.size()) + " weight blobs");
}

TEST(Compile, EveryDarknetCfgRoundTrips) {
  if (test::shared_dir().empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  const std::string dir = test::shared_dir() + "/models/darknet-cfg";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir << " is missing from the shared folder";
  std::set<LayerKind> kinds;
  int models = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".cfg") continue;
    auto net = parse_network_cfg(e.path().string());
    if (!net.ok() || net->output_layers().empty()) continue;
    SCOPED_TRACE(e.path().filename().string());
    auto cpu = compile(*net, cpu_target(), SessionOptions{});
    ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
    expect_round_trip(*cpu);
    auto gpu = compile(*net, gpu_target(), stream_options("min"));
    ASSERT_TRUE(gpu.ok()) << gpu.status().to_string();
    expect_round_trip(*gpu);
    for (const Step& st : cpu->plan.steps) kinds.insert(st.kind);
    ++models;
  }
  EXPECT_GT(models, 40);
  for (LayerKind k : {LayerKind::kReorg, LayerKind::kRegion, LayerKind::kSam, LayerKind::kScaleChannels,
                      LayerKind::kAvgPool, LayerKind::kReorg3d, LayerKind::kGaussianYolo})
    EXPECT_TRUE(kinds.count(k)) << layer_kind_name(k);
}

// Strict fp32's auto layout follows the target and what the engine will measure: NHWC
// (3xTF32 convs timed against the FMA ones) only for a preload with the kernel cache on,
// cudnnFind off, buffers of its own and a GPU with TF32 tensor cores; NCHW otherwise. A
// given layout and the tensor-core precisions are unaffected; the choice is in the plan
// and in the target's JSON.
TEST(Compile, StrictFp32AutoLayoutFollowsTheTarget) {
  auto net = tiny();
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  Target tc = gpu_target();
  tc.tf32_tensor_cores = true;
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP32;
  o.cache_kernel_times = true;
  const auto layout_of = [&](const Target& t, const SessionOptions& so, bool shared = false) {
    CompileInputs in;
    in.shared_memory = shared;
    Expected<CompiledModel> m = compile(*net, t, so, in);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    return m.ok() ? m->plan.options.layout : Layout::kNCHW;
  };
  EXPECT_EQ(layout_of(tc, o), Layout::kNHWC);
  EXPECT_EQ(layout_of(gpu_target(), o), Layout::kNCHW);  // no TF32 tensor cores
  EXPECT_EQ(layout_of(tc, o, true), Layout::kNCHW);      // a Runtime's model
  SessionOptions v = o;
  v.cache_kernel_times = false;
  EXPECT_EQ(layout_of(tc, v), Layout::kNCHW);
  v = o;
  v.find_algorithms = true;
  EXPECT_EQ(layout_of(tc, v), Layout::kNCHW);
  v = o;
  v.mode = WeightMode::kStream;
  EXPECT_EQ(layout_of(tc, v), Layout::kNCHW);
  v = o;
  v.layout = 0;
  EXPECT_EQ(layout_of(tc, v), Layout::kNCHW);
  v.layout = 1;
  EXPECT_EQ(layout_of(gpu_target(), v), Layout::kNHWC);
  v = o;
  v.precision = Precision::kTF32;
  EXPECT_EQ(layout_of(gpu_target(), v), Layout::kNHWC);
  // The prepared file's plan is made without a target: storage runs stream, so NCHW.
  v = o;
  v.mode = WeightMode::kStream;
  v.weights_from = WeightsFrom::kStorage;
  Expected<ExecutionPlan> prepared = plan_for_prepare(*net, v);
  ASSERT_TRUE(prepared.ok()) << prepared.status().to_string();
  EXPECT_EQ(prepared->options.layout, Layout::kNCHW);
  Expected<CompiledModel> m = compile(*net, tc, o);
  ASSERT_TRUE(m.ok());
  Expected<CompiledModel> back = compiled_model_from_json(compiled_model_to_json(*m), "round trip");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_TRUE(back->target.tf32_tensor_cores);
  EXPECT_EQ(back->plan.options.layout, Layout::kNHWC);
  // The plan's text says why.
  EXPECT_NE(m->to_text().find("note: layout: NHWC, so that strict fp32's convs may run as 3xTF32"), std::string::npos);
  v = o;
  v.mode = WeightMode::kStream;
  Expected<CompiledModel> streamed = compile(*net, tc, v);
  ASSERT_TRUE(streamed.ok()) << streamed.status().to_string();
  EXPECT_NE(streamed->to_text().find("note: layout: NCHW for strict fp32 with FMA convs: the weights stream"),
            std::string::npos);
  Expected<CompiledModel> older = compile(*net, gpu_target(), o);
  ASSERT_TRUE(older.ok());
  EXPECT_NE(older->to_text().find("the GPU has no TF32 tensor cores"), std::string::npos);
}

TEST(Compile, Errors) {
  auto net = tiny();
  ASSERT_TRUE(net.ok());
  SessionOptions cuda = stream_options("min");
  EXPECT_EQ(compile(*net, cpu_target(), cuda).status().message(),
            "compile: options ask for device cuda but the target is cpu");
  auto first = compile(*net, gpu_target(), cuda);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(compile(*net, gpu_target(), cuda, {1.0, 2.0}).status().message(),
            "compile: 2 kernel times for " + std::to_string(first->plan.steps.size()) + " steps");
  auto tinybudget = compile(*net, gpu_target(), stream_options("1KiB"));
  ASSERT_FALSE(tinybudget.ok());
  EXPECT_NE(tinybudget.status().message().find("below the minimum"), std::string::npos) << tinybudget.status().message();
}

// A budget below the smallest pool of whole layers slices the largest layers to fit
// (runtime/compile/slot_choice.h), says so in a note, and compiles the same plan again
// with kernel times; an explicit slot slices whatever the budget; a sliced model
// round-trips through JSON.
TEST(Compile, BudgetBelowTheWholeLayersMinimumSlices) {
  auto net = tiny();
  ASSERT_TRUE(net.ok());
  auto whole = compile(*net, gpu_target(), stream_options("min"));
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  const int64_t whole_min = whole->stream.minimal_pool_bytes;
  for (const char* budget : {"2MiB", "3MiB", "2%"}) {
    auto m = compile(*net, gpu_target(), stream_options(budget));
    ASSERT_TRUE(m.ok()) << budget << ": " << m.status().to_string();
    EXPECT_GT(m->plan.steps.size(), whole->plan.steps.size()) << budget;
    EXPECT_LT(m->stream.pool_bytes, whole_min) << budget;
    const int64_t cap = WeightBudget::parse(budget)->resolve(m->plan.weight_bytes(), 0);
    EXPECT_LE(m->stream.device_bytes(), cap) << budget;
    bool noted = false;
    for (const std::string& n : m->notes) noted = noted || n.rfind("slices: ", 0) == 0;
    EXPECT_TRUE(noted) << budget;
    const std::vector<double> ms(m->plan.steps.size(), 0.01);
    auto again = compile(*net, gpu_target(), stream_options(budget), ms);
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    EXPECT_EQ(again->plan.to_text(), m->plan.to_text());
    expect_round_trip(*m);
  }
  SessionOptions o = stream_options("50%");
  o.slot_bytes = 256 << 10;
  o.stage_whole = false;  // every layer above the slot sliced (whole_staging_test.cpp keeps some whole)
  auto sliced = compile(*net, gpu_target(), o);
  ASSERT_TRUE(sliced.ok()) << sliced.status().to_string();
  for (const WeightBlob& w : sliced->plan.weights) EXPECT_LE(w.bytes, o.slot_bytes);
  EXPECT_LE(sliced->stream.slot_bytes, o.slot_bytes);
}

TEST(CompiledModelJson, BadInputsGiveOneLineErrors) {
  auto net = tiny();
  ASSERT_TRUE(net.ok());
  auto m = compile(*net, cpu_target(), SessionOptions{});
  ASSERT_TRUE(m.ok());
  const std::string good = compiled_model_to_json(*m);
  auto err = [](const std::string& text) { return compiled_model_from_json(text, "p.json").status().message(); };
  EXPECT_EQ(err("{}"), "p.json: not a dlrun compiled model (no \"format\": \"dlrun-compiled-model\")");
  EXPECT_EQ(err("[1]"), "p.json: not a dlrun compiled model (no \"format\": \"dlrun-compiled-model\")");
  std::string other = good;
  const std::string current = std::to_string(CompiledModel{}.format_version);  // one digit
  other.replace(other.find("\"format_version\": " + current), 19, "\"format_version\": 7");
  EXPECT_EQ(err(other), "p.json: compiled model format version 7, this dlrun reads " + current);
  std::string missing = good;
  missing.replace(missing.find("\"arena_bytes\""), 13, "\"arena_bytez\"");
  EXPECT_NE(err(missing).find("p.json: "), std::string::npos);
  EXPECT_NE(err(missing).find("arena_bytes"), std::string::npos) << err(missing);
  EXPECT_NE(err("{\"format\": \"dlrun-compiled-model\"").find("p.json: "), std::string::npos);
  std::string kind = good;
  kind.replace(kind.find("\"kind\": \"conv\""), 14, "\"kind\": \"conx\"");
  EXPECT_FALSE(compiled_model_from_json(kind, "p.json").ok());
  for (const std::string& e : {err("{}"), err(other), err(missing)}) EXPECT_EQ(e.find('\n'), std::string::npos);
  // The parser's message echoes the input: a DEL byte (which the JSON library does not
  // escape, unlike bytes below 0x20) comes out as \x7f (found by the plan_json fuzzer).
  const std::string ctl = err(std::string("{\"format\": fal\x7f\x7f}"));
  EXPECT_NE(ctl.find("fal\\x7f"), std::string::npos) << ctl;
  for (char c : ctl) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << ctl;
  EXPECT_EQ(printable(std::string("a\0b\x7f\n", 5)), "a\\x00b\\x7f\\x0a");
  // A float too large for the int field it lands in is refused before any conversion
  // (the conversion would be undefined; found by the plan_json fuzzer).
  std::string huge = good;
  huge.replace(huge.find("\"batch\": 1"), 10, "\"batch\": 5.6e103");
  EXPECT_EQ(err(huge),
            "p.json: number 5.6e+103 is out of range (fractions must lie within +-2147483648; sizes are integers)");
}

TEST(SessionOptions, TypedBudgetParsesAndPrints) {
  for (const char* text : {"min", "all", "25%", "12.5%", "64MiB", "1.5GB", "123456"}) {
    auto b = WeightBudget::parse(text);
    ASSERT_TRUE(b.ok()) << text << ": " << b.status().to_string();
    auto again = WeightBudget::parse(b->to_string());
    ASSERT_TRUE(again.ok()) << b->to_string();
    EXPECT_TRUE(*again == *b) << text << " -> " << b->to_string();
  }
  EXPECT_EQ(WeightBudget::parse("25%")->resolve(1000, 7), 250);
  EXPECT_EQ(WeightBudget::parse("min")->resolve(1000, 7), 7);
  EXPECT_EQ(WeightBudget::parse("all")->resolve(1000, 7), 1000);
  EXPECT_EQ(WeightBudget::parse("foo").status().message(),
            "weight budget \"foo\": expected min, all, auto, a percentage (25%) or a size (64MiB, 1.5GB, bytes)");
}

TEST(SessionOptions, BadValuesFailBeforeAnyFileWork) {
  // The cfg and weights do not exist: each error must be the option's, not the file's.
  struct Case {
    std::function<void(SessionOptions*)> set;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](SessionOptions* o) { o->batch = 0; }, "batch 0 is out of range (1..64)"},
      {[](SessionOptions* o) { o->thresh = 1.5f; }, "thresh must be in [0, 1)"},
      {[](SessionOptions* o) { o->nms = 0; }, "nms must be in (0, 1]"},
      {[](SessionOptions* o) { o->unit_search_min_gain = 2; }, "unit search minimum gain 2.000000 must be in [0, 1)"},
      {[](SessionOptions* o) { o->chunk_bytes = -1; }, "chunk size must be >= 0 bytes (0: the copy profile's)"},
      {[](SessionOptions* o) { o->layout = 3; }, "layout must be -1 (auto), 0 (NCHW) or 1 (NHWC)"},
      {[](SessionOptions* o) { o->copy_profile.clear(); },
       "copy profile: empty; expected auto, a built-in name or a JSON file"},
      {[](SessionOptions* o) { o->copy_profile = "h10"; },
       "copy profile 'h10' is neither auto, a file nor a built-in profile (discrete, h100, jetson-xavier; a file is a path "
       "with '/' or ending in .json)"},
      {[](SessionOptions* o) { o->weight_budget = WeightBudget::percent(150); },
       "weight budget: a percentage must be in (0, 100]"},
      {[](SessionOptions* o) { o->mode = WeightMode::kStream; },
       "the CPU backend keeps every weight in host memory (mode stream needs device cuda)"},
      {[](SessionOptions* o) { o->precision = Precision::kFP16; }, "the CPU backend runs fp32 only (asked for fp16)"},
      {[](SessionOptions* o) {
         o->device = DeviceKind::kCUDA;
         o->cuda_device = -1;
       },
       "CUDA device index must be >= 0"},
      {[](SessionOptions* o) {
         o->weights_from = WeightsFrom::kStorage;
         o->host_budget = -1;
       },
       "host budget must be >= 0 bytes (0: the minimum)"},
      {[](SessionOptions* o) { o->zero_copy = 2; }, "zero copy must be -1 (auto), 0 or 1"},
      {[](SessionOptions* o) { o->read_depth = 0; }, "read depth 0 is out of range (1..64)"},
      {[](SessionOptions* o) { o->read_block_bytes = 1000; },
       "read block 1000 bytes: expected a multiple of 4096 from 4 KiB to 64 MiB"},
      {[](SessionOptions* o) { o->zero_copy = 1; },
       "zero_copy, host_budget and prepared_path need weights_from storage"},
      {[](SessionOptions* o) {
         o->device = DeviceKind::kCUDA;
         o->weights_from = WeightsFrom::kStorage;
       },
       "weights_from storage on the GPU streams weights: it needs mode stream"},
      {[](SessionOptions* o) {
         o->weights_from = WeightsFrom::kStorage;
         o->zero_copy = 0;
       },
       "the CPU backend reads weights where it computes from them: zero copy cannot be off"},
      {[](SessionOptions* o) { o->tail_prefetch = true; },
       "tail_prefetch copies streamed weights: it needs device cuda and mode stream"},
      {[](SessionOptions* o) {
         o->device = DeviceKind::kCUDA;
         o->mode = WeightMode::kStream;
         o->weights_from = WeightsFrom::kStorage;
         o->tail_prefetch = true;
       },
       "tail_prefetch copies the next inference's first weights from the host store: it needs weights_from host "
       "(from storage, prefetch_reads reads them ahead)"},
      {[](SessionOptions* o) {
         o->device = DeviceKind::kCUDA;
         o->mode = WeightMode::kStream;
         o->prefetch_next = true;
         o->tail_prefetch = true;
       },
       "tail_prefetch is for a session alone: a Runtime's models prefetch across models (prefetch_next)"},
  };
  for (const Case& c : cases) {
    SessionOptions o;
    c.set(&o);
    EXPECT_EQ(validate_options(o).message(), c.message);
    auto s = Session::open("/nonexistent/x.cfg", "/nonexistent/x.weights", o);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().message(), c.message);
  }
  EXPECT_TRUE(validate_options(SessionOptions{}).ok());
}

}  // namespace
}  // namespace dlr
