// Arena staging (runtime/streaming/arena_staging.h): streamed blobs copied into bytes of
// the activation arena no activation holds then. On yolov4 @608 fp16 (CUDA's NHWC plan,
// kernel times from the cost model, the h100 profile) at a shared-ring-like budget and at
// 25 %: blobs are staged, the prediction improves, the simulator's checks pass, and every
// staged blob's arena bytes hold no activation (and no other staged blob) from the step
// its copy waits for to its reader, checked here from the plan's buffers alone. The
// byte accounting of the plan, the unit search with staged blobs, the lower bound with
// the arena's idle bytes below both plans (the ring-only bound above one), copies queued
// as soon as their bytes are free, the unit size chosen with the staged blobs, the refusals of
// bad staging options, each with its message; the simulator flags a blob staged over a
// live activation.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/streaming/arena_staging.h"
#include "runtime/streaming/lower_bound.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/unit_search.h"
#include "tests/common/test_paths.h"
#include "tests/runtime/stream_fixtures.h"
#include "tests/runtime/yolov4_fixture.h"

namespace dlr {
namespace {

using test::kMiB;

struct Net {
  ExecutionPlan plan;
  std::vector<double> ms;
};

bool yolov4_608(Net* out, WeightFormat format = WeightFormat::kFp) {
  test::Yolov4Plan y;
  if (!test::yolov4_608_plan(format, &y)) return false;
  out->plan = std::move(y.plan);
  out->ms = std::move(y.ms);
  return true;
}

// From the plan's buffers alone: nothing else lives in a staged blob's bytes from the
// end of its wait step to the end of its reader.
void check_arena_bytes(const ExecutionPlan& plan, const StreamPlan& s, const StreamOptions& o) {
  for (size_t b = 0; b < plan.weights.size(); ++b) {
    if (!s.is_staged(int(b))) continue;
    const int64_t off = o.arena_offset[b], bytes = plan.weights[b].bytes;
    const int wait = o.arena_wait[b], reader = plan.weights[b].layer;
    EXPECT_EQ(s.blob_pool_offset[b], off);
    EXPECT_GE(wait, 0);
    EXPECT_LT(wait, reader);
    EXPECT_LE(off + bytes, plan.arena_bytes);
    for (const Buffer& buf : plan.buffers) {
      if (buf.offset >= off + bytes || off >= buf.offset + buf.bytes) continue;
      // Live at some step of (wait, reader]: written at or before the reader, read after the wait.
      EXPECT_FALSE(buf.first_step <= reader && buf.last_step > wait)
          << "blob " << b << " (wait " << wait << ", reader " << reader << ") over buffer " << buf.id << " ["
          << buf.first_step << ", " << buf.last_step << "]";
    }
    for (size_t c = 0; c < b; ++c) {
      if (!s.is_staged(int(c))) continue;
      const int64_t oc = o.arena_offset[c];
      if (oc >= off + bytes || off >= oc + plan.weights[c].bytes) continue;
      EXPECT_LE(plan.weights[c].layer, wait) << "staged blobs " << c << " and " << b << " share bytes at once";
    }
  }
}

TEST(ArenaStaging, Yolov4StagesLateBlobsInIdleActivationBytes) {
  DLR_REQUIRE_SHARED_DIR();
  Net n;
  ASSERT_TRUE(yolov4_608(&n));
  ASSERT_NEAR(double(n.plan.arena_bytes) / kMiB, 39.48, 0.01);
  const CopyProfile prof = *CopyProfile::builtin("h100");
  struct Case {
    const char* what;
    int64_t budget;
    bool never_resident;
  };
  const int64_t total = n.plan.weight_bytes();
  for (const Case& c : {Case{"54 MiB shared-ring-like", 54 * kMiB, true}, Case{"25 %", total / 4, false}}) {
    SCOPED_TRACE(c.what);
    StreamOptions so;
    so.layout = PoolLayout::kRing;
    so.budget_bytes = c.budget;
    so.never_resident = c.never_resident;
    ArenaStagingOptions st;
    st.sim.prefetched = true;
    const Expected<ArenaStagingResult> r = plan_arena_staging(n.plan, prof, so, n.ms, st);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    std::printf("%s: %s\n", c.what, r->how.c_str());
    EXPECT_GT(r->staged, 0);
    EXPECT_LT(r->predicted_ms, r->unstaged_ms);
    EXPECT_LE(r->simulations, st.max_simulations + 1);
    const StreamPlan& s = r->plan;
    // Bytes: every streamed byte goes through the ring or the arena, the host store holds the ring's.
    EXPECT_EQ(s.streamed_bytes(), s.ring_streamed_bytes() + s.staged_bytes);
    EXPECT_EQ(s.host_store_bytes() + s.staged_bytes + s.resident_bytes, total);
    EXPECT_EQ(s.device_bytes(), s.pool_bytes + s.resident_bytes) << "staged bytes cost no weight memory";
    int staged_units = 0;
    for (const TransferUnit& u : s.units) {
      if (!u.in_arena) continue;
      ++staged_units;
      EXPECT_EQ(u.first_blob, u.last_blob);
      EXPECT_TRUE(s.is_staged(u.first_blob));
      EXPECT_EQ(s.blob_last_unit[size_t(u.first_blob)], u.index);
      EXPECT_FALSE(s.unit_waits[size_t(u.index)].empty()) << "a staged copy is never prefetched";
    }
    EXPECT_EQ(staged_units, r->staged);
    StreamOptions o = so;
    o.arena_offset = r->offset;
    o.arena_wait = r->wait;
    o.arena_early = r->early;
    check_arena_bytes(n.plan, s, o);
    SimOptions checked = st.sim;
    checked.check = true;
    const SimResult sim = simulate(n.plan, s, prof, n.ms, checked);
    EXPECT_TRUE(sim.violations.empty()) << sim.violations.front();
    EXPECT_NEAR(sim.latency_ms, r->predicted_ms, 1e-9);
    // The unit search keeps the staged blobs and predicts no worse than equal chunks.
    UnitSearchOptions us;
    us.sim = st.sim;
    const Expected<UnitSearchResult> u = search_ring_units(n.plan, prof, o, n.ms, us);
    ASSERT_TRUE(u.ok()) << u.status().to_string();
    EXPECT_EQ(u->plan.staged_bytes, s.staged_bytes);
    EXPECT_LE(u->predicted_ms, u->default_ms + 1e-9);
    const SimResult su = simulate(n.plan, u->plan, prof, n.ms, checked);
    EXPECT_TRUE(su.violations.empty()) << su.violations.front();
    // The lower bound with the arena's idle bytes covers the staged plans; the bound of
    // plans streaming every byte through the ring need not.
    const int64_t budget = s.device_bytes();
    BoundModel model, ring_model;
    model.staging_room = arena_idle_bytes(n.plan);
    model.copies_before = ring_model.copies_before = true;  // st.sim.prefetched
    const Expected<LatencyBound> lb = latency_lower_bound(n.plan, n.ms, prof, budget, so.ring_granularity, model);
    const Expected<LatencyBound> ring_only =
        latency_lower_bound(n.plan, n.ms, prof, budget, so.ring_granularity, ring_model);
    ASSERT_TRUE(lb.ok() && ring_only.ok());
    std::printf("%s: bound %.3f ms with the idle bytes, %.3f ms through the ring only; staged %.3f, searched %.3f\n",
                c.what, lb->ms, ring_only->ms, r->predicted_ms, u->predicted_ms);
    EXPECT_LE(lb->ms, std::min(r->predicted_ms, u->predicted_ms) + 1e-9) << lb->to_text();
    if (c.never_resident) {
      EXPECT_LT(r->predicted_ms, ring_only->ms) << "the ring-only bound covers this plan: no test";
    }
  }
}

// int8 weights at an 8 MiB ring: the front layers' activations fill the arena while the
// ring holds the first units, then most of the arena idles; blobs whose bytes free early
// are copied then (arena_early) instead of behind ring units needed after their readers.
TEST(ArenaStaging, CopiesQueuedAsSoonAsTheirBytesAreFreeWhereTheEngineWouldIdle) {
  DLR_REQUIRE_SHARED_DIR();
  Net n;
  ASSERT_TRUE(yolov4_608(&n, WeightFormat::kInt8));
  const CopyProfile prof = *CopyProfile::builtin("h100");
  StreamOptions so;
  so.layout = PoolLayout::kRing;
  so.budget_bytes = 8 * kMiB;
  so.never_resident = true;
  ArenaStagingOptions st;
  st.sim.prefetched = true;
  const Expected<ArenaStagingResult> r = plan_arena_staging(n.plan, prof, so, n.ms, st);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("%s\n", r->how.c_str());
  EXPECT_GT(r->early_copies, 0);
  EXPECT_NE(r->how.find(std::to_string(r->early_copies) + " of them as soon as their bytes are free"),
            std::string::npos);
  StreamOptions o = so;
  o.arena_offset = r->offset;
  o.arena_wait = r->wait;
  o.arena_early = r->early;
  check_arena_bytes(n.plan, r->plan, o);
  SimOptions checked = st.sim;
  checked.check = true;
  const SimResult sim = simulate(n.plan, r->plan, prof, n.ms, checked);
  EXPECT_TRUE(sim.violations.empty()) << sim.violations.front();
  // An early copy is queued before a ring unit needed before its reader.
  EXPECT_GT(r->plan.staged_copies_ahead(), 0);
  EXPECT_LE(r->plan.staged_copies_ahead(), r->early_copies);
  // The same blobs and bytes, every copy late: predicted slower.
  o.arena_early.clear();
  const Expected<StreamPlan> late = plan_streaming(n.plan, prof, o);
  ASSERT_TRUE(late.ok()) << late.status().to_string();
  const SimResult late_sim = simulate(n.plan, *late, prof, n.ms, checked);
  EXPECT_TRUE(late_sim.violations.empty()) << late_sim.violations.front();
  EXPECT_LT(r->predicted_ms, late_sim.latency_ms - 1e-6);
  // Every copy early: still a valid queue.
  o.arena_early.assign(n.plan.weights.size(), 1);
  const Expected<StreamPlan> early = plan_streaming(n.plan, prof, o);
  ASSERT_TRUE(early.ok()) << early.status().to_string();
  const SimResult early_sim = simulate(n.plan, *early, prof, n.ms, checked);
  EXPECT_TRUE(early_sim.violations.empty()) << early_sim.violations.front();
  // Off (SessionOptions::staging_early): every copy late, and a slower prediction.
  EXPECT_EQ(late->staged_copies_ahead(), 0);
  ArenaStagingOptions off = st;
  off.early = false;
  const Expected<ArenaStagingResult> l = plan_arena_staging(n.plan, prof, so, n.ms, off);
  ASSERT_TRUE(l.ok()) << l.status().to_string();
  EXPECT_EQ(l->early_copies, 0);
  EXPECT_EQ(std::count(l->early.begin(), l->early.end(), 1), 0);
  EXPECT_GT(l->predicted_ms, r->predicted_ms);
}

// yolov4 @608 fp16 with int8 weights streamed in 8 MiB, compiled on a hand-made
// H100-like target with the cost model's kernel times.
struct Int8Compile {
  NetworkDesc net;
  Net n;
  Target t;
  SessionOptions o;
  Expected<CompiledModel> compiled(const SessionOptions& with) const { return compile(net, t, with, n.ms); }
};

bool int8_in_8mib(Int8Compile* c) {
  CfgOptions co;
  co.width = co.height = 608;
  const Expected<NetworkDesc> net = parse_network_cfg(test::required_shared_file("models/yolov4.cfg"), co);
  EXPECT_TRUE(net.ok()) << net.status().to_string();
  if (!net.ok() || !yolov4_608(&c->n, WeightFormat::kInt8)) return false;
  c->net = *net;
  c->t.device = DeviceKind::kCUDA;
  c->t.name = "hand-made H100-like target";
  c->t.map_granularity = 2 * kMiB;
  c->t.copy_profile = *CopyProfile::builtin("h100");
  c->o.device = DeviceKind::kCUDA;
  c->o.precision = Precision::kFP16;
  c->o.weight_format = WeightFormat::kInt8;
  c->o.mode = WeightMode::kStream;
  c->o.width = c->o.height = 608;
  c->o.weight_budget = *WeightBudget::parse("8MiB");
  return true;
}

// The option reaches the staging pass through compile(): on, the minimum pool of int8
// weights queues some staged copies early; off, none. Runs of staged blobs off
// (staging_runs), which gain from the same idle copy engine.
TEST(ArenaStaging, StagingEarlyOptionReachesThePlan) {
  DLR_REQUIRE_SHARED_DIR();
  Int8Compile c;
  ASSERT_TRUE(int8_in_8mib(&c));
  int early_units[2] = {0, 0};
  double predicted[2] = {0, 0};
  for (bool early : {true, false}) {
    SessionOptions o = c.o;
    o.staging_early = early;
    o.staging_runs = false;
    const Expected<CompiledModel> m = c.compiled(o);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    early_units[early] = m->stream.staged_copies_ahead();
    predicted[early] = m->predicted_ms;
  }
  EXPECT_GT(early_units[1], 0);
  EXPECT_EQ(early_units[0], 0);
  EXPECT_LT(predicted[1], predicted[0]);
}

// Staging and the ring's unit size depend on each other: compile() stages and cuts with
// the default equal chunks and with chunks two and four times as large, so its plan is
// predicted no slower than any of those sizes given by hand (no search then), and the
// unit search beside staged blobs is no slower than equal chunks of any size.
TEST(ArenaStaging, UnitSizeChosenWithTheStagedBlobs) {
  DLR_REQUIRE_SHARED_DIR();
  Int8Compile c;
  ASSERT_TRUE(int8_in_8mib(&c));
  const Net& n = c.n;
  const Target& t = c.t;
  const Expected<CompiledModel> chosen = c.compiled(c.o);
  ASSERT_TRUE(chosen.ok()) << chosen.status().to_string();
  ASSERT_GT(chosen->stream.staged_bytes, 0);
  for (int64_t chunk : {kMiB, 2 * kMiB, 4 * kMiB}) {
    SessionOptions fixed = c.o;
    fixed.chunk_bytes = chunk;
    const Expected<CompiledModel> m = c.compiled(fixed);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    std::printf("int8 8 MiB: chunks of %lld KiB %.3f ms; chosen %.3f ms\n", static_cast<long long>(chunk >> 10),
                m->predicted_ms, chosen->predicted_ms);
    EXPECT_LE(chosen->predicted_ms, m->predicted_ms + 1e-9) << "chunks of " << chunk;
  }
  // The search beside staged blobs against equal chunks of every size on the whole plan.
  StreamOptions so;
  so.layout = PoolLayout::kRing;
  so.budget_bytes = 8 * kMiB;
  so.never_resident = true;
  ArenaStagingOptions st;
  const Expected<ArenaStagingResult> r = plan_arena_staging(n.plan, t.copy_profile, so, n.ms, st);
  ASSERT_TRUE(r.ok() && r->staged > 0);
  so.arena_offset = r->offset;
  so.arena_wait = r->wait;
  so.arena_early = r->early;
  UnitSearchOptions us;
  const Expected<UnitSearchResult> u = search_ring_units(n.plan, t.copy_profile, so, n.ms, us);
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  for (int64_t chunk = 512 << 10; chunk <= 4 * kMiB; chunk *= 2) {
    StreamOptions c = so;
    c.chunk_bytes = chunk;
    const Expected<StreamPlan> p = plan_streaming(n.plan, t.copy_profile, c);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    SimOptions quiet;
    quiet.check = false;
    const double ms = simulate(n.plan, *p, t.copy_profile, n.ms, quiet).latency_ms;
    EXPECT_LE(u->predicted_ms, ms + 1e-9) << "equal chunks of " << chunk;
  }
}

TEST(ArenaStaging, BadOptionsAreRefusedAndTheSimulatorFlagsLiveBytes) {
  DLR_REQUIRE_SHARED_DIR();
  Net n;
  ASSERT_TRUE(yolov4_608(&n));
  const CopyProfile prof = *CopyProfile::builtin("h100");
  StreamOptions so;
  so.layout = PoolLayout::kRing;
  so.budget_bytes = 54 * kMiB;
  so.never_resident = true;
  const size_t last = n.plan.weights.size() - 1;
  auto with = [&](int64_t offset, int wait) {
    StreamOptions o = so;
    o.arena_offset.assign(n.plan.weights.size(), -1);
    o.arena_wait.assign(n.plan.weights.size(), -1);
    o.arena_offset[last] = offset;
    o.arena_wait[last] = wait;
    return o;
  };
  const std::string blob = "arena staging: blob " + std::to_string(last) + " (layer " +
                           std::to_string(n.plan.weights[last].layer) + ")";
  Expected<StreamPlan> bad = plan_streaming(n.plan, prof, with(100, 20));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(blob + " at arena offset 100: expected a multiple of 256 within"),
            std::string::npos)
      << bad.status().message();
  bad = plan_streaming(n.plan, prof, with(n.plan.arena_bytes, 20));
  ASSERT_FALSE(bad.ok());
  bad = plan_streaming(n.plan, prof, with(0, n.plan.weights[last].layer));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("waits for step " + std::to_string(n.plan.weights[last].layer) +
                                        ": expected a step in [0, "),
            std::string::npos)
      << bad.status().message();
  StreamOptions both = with(0, 20);
  both.resident.assign(n.plan.weights.size(), 0);
  both.resident[last] = 1;
  both.budget_bytes += n.plan.weights[last].bytes;
  bad = plan_streaming(n.plan, prof, both);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("is both resident and staged"), std::string::npos) << bad.status().message();
  StreamOptions sizes = with(0, 20);
  sizes.arena_wait.pop_back();
  bad = plan_streaming(n.plan, prof, sizes);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("waits and"), std::string::npos) << bad.status().message();
  StreamOptions places = with(0, 20);
  places.arena_early.assign(3, 1);
  bad = plan_streaming(n.plan, prof, places);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(" 3 queue places for "), std::string::npos) << bad.status().message();
  // Staged over an activation that is live at its reader (the network's outputs live to
  // the end): a plan that builds, and a simulation that says why it is wrong.
  int64_t live_offset = -1;
  for (const Buffer& b : n.plan.buffers)
    if (b.last_step >= n.plan.weights[last].layer && b.first_step <= n.plan.weights[last].layer &&
        b.offset % 256 == 0 && b.offset + n.plan.weights[last].bytes <= n.plan.arena_bytes)
      live_offset = b.offset;
  ASSERT_GE(live_offset, 0);
  const Expected<StreamPlan> wrong = plan_streaming(n.plan, prof, with(live_offset, 20));
  ASSERT_TRUE(wrong.ok()) << wrong.status().to_string();
  const SimResult r = simulate(n.plan, *wrong, prof, n.ms);
  ASSERT_FALSE(r.violations.empty());
  bool named = false;
  for (const std::string& v : r.violations) named |= v.find("stages blob " + std::to_string(last)) != std::string::npos;
  EXPECT_TRUE(named) << r.violations.front();
}

}  // namespace
}  // namespace dlr
