// Runs of staged blobs (StreamOptions::arena_joined): consecutive blobs placed together in
// idle activation bytes and copied in one unit. On yolov4 @608 with int8 weights at the
// 8 MiB minimum ring (kernel times from the cost model, the h100 profile, whose small
// copies are slower): the pass with runs makes units of several blobs whose bytes, host
// and arena offsets follow on, passes the simulator's checks and every blob's arena bytes
// hold nothing else while it is live; compile() keeps the faster of staging with and
// without runs and SessionOptions::staging_runs turns runs off. The room for a run is
// free from its copy through its last reader; a run that does not follow on is refused
// with its blob named; the simulator checks each blob of a run on its own bytes. The
// second pass joins neighbouring staged units where the simulator predicts it faster.
#include <gtest/gtest.h>

#include <string>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/streaming/arena_room.h"
#include "runtime/streaming/arena_staging.h"
#include "runtime/streaming/simulator.h"
#include "tests/common/test_paths.h"
#include "tests/runtime/stream_fixtures.h"
#include "tests/runtime/yolov4_fixture.h"

namespace dlr {
namespace {

using test::kMiB;

using Net = test::Yolov4Plan;

bool yolov4_int8(Net* out) { return test::yolov4_608_plan(WeightFormat::kInt8, out); }

StreamOptions min_ring() {
  StreamOptions so;
  so.layout = PoolLayout::kRing;
  so.budget_bytes = 8 * kMiB;
  so.never_resident = true;
  return so;
}

// The staging pass with runs up to 16 MiB in the minimum ring, the h100 profile.
ArenaStagingOptions with_runs() {
  ArenaStagingOptions st;
  st.sim.prefetched = true;
  st.max_run_bytes = 16 * kMiB;
  return st;
}

TEST(StagingRuns, ConsecutiveStagedBlobsShareOneCopy) {
  DLR_REQUIRE_SHARED_DIR();
  Net n;
  ASSERT_TRUE(yolov4_int8(&n));
  const CopyProfile prof = *CopyProfile::builtin("h100");
  const ArenaStagingOptions st = with_runs();
  const Expected<ArenaStagingResult> r = plan_arena_staging(n.plan, prof, min_ring(), n.ms, st);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  std::printf("%s\n", r->how.c_str());
  ASSERT_GT(r->runs, 0);
  EXPECT_NE(r->how.find(std::to_string(r->runs) + " runs of several in one copy"), std::string::npos) << r->how;
  const StreamPlan& s = r->plan;
  int runs = 0;
  for (const TransferUnit& u : s.units) {
    if (!u.in_arena) continue;
    int64_t bytes = 0;
    for (int b = u.first_blob; b <= u.last_blob; ++b) {
      ASSERT_TRUE(s.is_staged(b)) << "blob " << b << " of unit " << u.index;
      EXPECT_EQ(s.blob_last_unit[size_t(b)], u.index);
      EXPECT_EQ(s.blob_host_offset[size_t(b)], u.host_offset + bytes) << "host bytes follow on";
      EXPECT_EQ(s.blob_pool_offset[size_t(b)], u.pool_offset + bytes) << "arena bytes follow on";
      EXPECT_EQ(r->joined[size_t(b)], b > u.first_blob ? 1 : 0);
      EXPECT_EQ(r->wait[size_t(b)], r->wait[size_t(u.first_blob)]);
      bytes += n.plan.weights[size_t(b)].bytes;
    }
    EXPECT_EQ(u.bytes, bytes);
    EXPECT_LE(u.bytes, st.max_run_bytes);
    runs += u.last_blob > u.first_blob;
  }
  EXPECT_EQ(runs, r->runs);
  // Every staged blob's bytes: no activation live from its copy's wait to its reader.
  for (size_t b = 0; b < n.plan.weights.size(); ++b) {
    if (!s.is_staged(int(b))) continue;
    const int64_t off = r->offset[b], bytes = n.plan.weights[b].bytes;
    const int wait = r->wait[b], reader = n.plan.weights[b].step;
    for (const Buffer& buf : n.plan.buffers)
      if (buf.offset < off + bytes && off < buf.offset + buf.bytes) {
        EXPECT_FALSE(buf.first_step <= reader && buf.last_step > wait) << "blob " << b << " over buffer " << buf.id;
      }
  }
  SimOptions checked = st.sim;
  checked.check = true;
  const SimResult sim = simulate(n.plan, s, prof, n.ms, checked);
  EXPECT_TRUE(sim.violations.empty()) << sim.violations.front();
  EXPECT_NEAR(sim.latency_ms, r->predicted_ms, 1e-9);
}

// The second pass: a unit of the joined plan that carries blobs the plan without the pass
// copies in two or more staged units, never predicted slower, with the runs' invariants.
// The cost model's kernels scaled by 0.6 (a faster GPU) make the plan copy-bound, as
// the H100 measured it, where a copy's fixed cost counts.
TEST(StagingRuns, NeighbouringStagedUnitsJoinedWhereFaster) {
  DLR_REQUIRE_SHARED_DIR();
  Net n;
  ASSERT_TRUE(yolov4_int8(&n));
  for (double& ms : n.ms) ms *= 0.6;
  const CopyProfile prof = *CopyProfile::builtin("h100");
  ArenaStagingOptions st = with_runs();
  st.join = false;
  const Expected<ArenaStagingResult> apart = plan_arena_staging(n.plan, prof, min_ring(), n.ms, st);
  st.join = true;
  const Expected<ArenaStagingResult> joined = plan_arena_staging(n.plan, prof, min_ring(), n.ms, st);
  ASSERT_TRUE(apart.ok()) << apart.status().to_string();
  ASSERT_TRUE(joined.ok()) << joined.status().to_string();
  std::printf("%s\n%s\n", apart->how.c_str(), joined->how.c_str());
  EXPECT_EQ(apart->joins, 0);
  EXPECT_NE(joined->how.find("(" + std::to_string(joined->joins) + " joined with a neighbour)"), std::string::npos);
  EXPECT_LE(joined->predicted_ms, apart->predicted_ms + 1e-9);
  ASSERT_GT(joined->joins, 0) << "the cost model's yolov4 joins none: the test needs another case";
  EXPECT_LT(joined->predicted_ms, apart->predicted_ms - 1e-6);
  // Some unit of the joined plan holds blobs that two units of the other plan held.
  int spanning = 0;
  for (const TransferUnit& u : joined->plan.units) {
    if (!u.in_arena) continue;
    const int first_unit = apart->plan.blob_last_unit[size_t(u.first_blob)];
    const int last_unit = apart->plan.blob_last_unit[size_t(u.last_blob)];
    spanning += first_unit != last_unit;
    for (int b = u.first_blob; b <= u.last_blob; ++b) EXPECT_EQ(joined->joined[size_t(b)], b > u.first_blob ? 1 : 0);
  }
  EXPECT_GT(spanning, 0);
  SimOptions checked = st.sim;
  checked.check = true;
  const SimResult sim = simulate(n.plan, joined->plan, prof, n.ms, checked);
  EXPECT_TRUE(sim.violations.empty()) << sim.violations.front();
  EXPECT_NEAR(sim.latency_ms, joined->predicted_ms, 1e-9);
}

TEST(StagingRuns, CompileKeepsTheFasterAndTheOptionTurnsRunsOff) {
  DLR_REQUIRE_SHARED_DIR();
  Net n;
  ASSERT_TRUE(yolov4_int8(&n));
  const Target t = test::h100_cuda_target();
  const SessionOptions o = test::yolov4_608_min_options(WeightFormat::kInt8);
  SessionOptions off = o;
  off.staging_runs = false;
  const Expected<CompiledModel> with = compile(n.net, t, o, n.ms);
  const Expected<CompiledModel> without = compile(n.net, t, off, n.ms);
  ASSERT_TRUE(with.ok()) << with.status().to_string();
  ASSERT_TRUE(without.ok()) << without.status().to_string();
  std::printf("runs on %.3f ms, off %.3f ms\n", with->predicted_ms, without->predicted_ms);
  EXPECT_LE(with->predicted_ms, without->predicted_ms + 1e-9);
  int runs_on = 0, runs_off = 0;
  for (const TransferUnit& u : with->stream.units) runs_on += u.in_arena && u.last_blob > u.first_blob;
  for (const TransferUnit& u : without->stream.units) runs_off += u.in_arena && u.last_blob > u.first_blob;
  EXPECT_EQ(runs_off, 0);
  if (with->predicted_ms < without->predicted_ms - 1e-6) {
    EXPECT_GT(runs_on, 0);
  }
}

TEST(StagingRuns, RoomIsFreeFromTheCopyThroughTheLastReader) {
  // A buffer on bytes [0, 512) from step 5 to step 7.
  const std::vector<ArenaTaken> taken = {{0, 512, 5, 7}};
  int free_after = -1;
  // One blob read at step 4: the buffer starts after it, so offset 0 is free after step 0.
  EXPECT_EQ(place_in_arena(taken, 4096, 512, 4, &free_after), 0);
  EXPECT_EQ(free_after, 0);
  // A run read at steps 4 to 8 holds its bytes through step 8: not over the buffer.
  EXPECT_EQ(place_run_in_arena(taken, 4096, 512, 4, 8, &free_after), 512);
  EXPECT_EQ(free_after, 0);
  // An arena that is the buffer's bytes alone: a run read from step 8 on goes over the
  // buffer once it has been read (after step 7); a run read at steps 4 to 8 finds no room.
  EXPECT_EQ(place_run_in_arena(taken, 512, 512, 8, 9, &free_after), 0);
  EXPECT_EQ(free_after, 7);
  EXPECT_EQ(place_run_in_arena(taken, 512, 512, 4, 8, &free_after), -1);
  EXPECT_EQ(place_in_arena(taken, 512, 512, 4, &free_after), 0) << "alone, read before the buffer starts";
}

TEST(StagingRuns, ARunThatDoesNotFollowOnIsRefusedAndEachBlobIsChecked) {
  DLR_REQUIRE_SHARED_DIR();
  Net n;
  ASSERT_TRUE(yolov4_int8(&n));
  const CopyProfile prof = *CopyProfile::builtin("h100");
  const Expected<ArenaStagingResult> r = plan_arena_staging(n.plan, prof, min_ring(), n.ms, with_runs());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_GT(r->runs, 0);
  size_t second = 0;  // the second blob of the first run
  for (size_t b = 0; b < r->joined.size() && second == 0; ++b)
    if (r->joined[b]) second = b;
  StreamOptions o = min_ring();
  o.arena_offset = r->offset;
  o.arena_wait = r->wait;
  o.arena_early = r->early;
  o.arena_joined = r->joined;
  const std::string blob = "arena staging: blob " + std::to_string(second) + " (layer " +
                           std::to_string(n.plan.weights[second].layer) + ") is copied with the blob before it";
  StreamOptions gap = o;
  gap.arena_offset[second] += 256;
  Expected<StreamPlan> bad = plan_streaming(n.plan, prof, gap);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(blob), std::string::npos) << bad.status().message();
  StreamOptions wait = o;
  wait.arena_wait[second] = wait.arena_wait[second - 1] + 1 < n.plan.weights[second].step
                                ? wait.arena_wait[second - 1] + 1
                                : wait.arena_wait[second - 1] - 1;
  bad = plan_streaming(n.plan, prof, wait);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(blob), std::string::npos) << bad.status().message();
  StreamOptions alone = o;
  alone.arena_offset[second - 1] = -1;
  alone.arena_joined[second - 1] = 0;
  bad = plan_streaming(n.plan, prof, alone);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(blob), std::string::npos) << bad.status().message();
  StreamOptions marks = o;
  marks.arena_joined.assign(2, 0);
  bad = plan_streaming(n.plan, prof, marks);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(" 2 run marks for "), std::string::npos) << bad.status().message();
  // The whole run moved onto an activation live at its second blob's reader: a plan that
  // builds, and a simulation that names that blob.
  const int reader = n.plan.weights[second].step;
  const int64_t before = n.plan.weights[second - 1].bytes;
  int64_t live = -1;
  for (const Buffer& b : n.plan.buffers)
    if (b.first_step <= reader && b.last_step >= reader && b.offset >= before && (b.offset - before) % 256 == 0 &&
        b.offset + n.plan.weights[second].bytes <= n.plan.arena_bytes)
      live = b.offset - before;
  ASSERT_GE(live, 0);
  StreamOptions moved = o;
  int64_t at = live;
  for (size_t b = second - 1; b < moved.arena_offset.size() && (b == second - 1 || moved.arena_joined[b]); ++b) {
    moved.arena_offset[b] = at;
    at += n.plan.weights[b].bytes;
  }
  if (at > n.plan.arena_bytes) GTEST_SKIP() << "the moved run passes the arena's end";
  const Expected<StreamPlan> wrong = plan_streaming(n.plan, prof, moved);
  ASSERT_TRUE(wrong.ok()) << wrong.status().to_string();
  const SimResult sim = simulate(n.plan, *wrong, prof, n.ms);
  bool named = false;
  for (const std::string& v : sim.violations) named |= v.find("stages blob " + std::to_string(second)) != std::string::npos;
  EXPECT_TRUE(named) << (sim.violations.empty() ? "no violation" : sim.violations.front());
}

}  // namespace
}  // namespace dlr
