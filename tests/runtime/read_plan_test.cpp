// ReadPlan (weights from storage): on random plans, every read lands where its copy
// or kernel expects the bytes (checked byte by byte against a fake file), staging is
// never overwritten while still in use, nothing waits on what comes after it, and the
// host budget is respected or refused with both sizes named.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "runtime/streaming/read_plan.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"
#include "tests/runtime/stream_fixtures.h"

namespace dlr {
namespace {

using test::fake_plan;
using test::h100_like;

// Blob sizes in 4 KiB multiples (storage plans), 4 KiB .. 256 KiB, skewed small.
std::vector<int64_t> storage_sizes(std::mt19937_64* rng, int n) {
  std::uniform_int_distribution<int> pages(1, 64);
  std::vector<int64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(int64_t(pages(*rng)) * pages(*rng) / 8 * kReadAlign + kReadAlign);
  return v;
}

// The byte the fake file holds at offset `i` of blob `b`.
uint8_t file_byte(int b, int64_t i) { return uint8_t((b * 131 + i * 7 + i / 4096) & 0xff); }

// Executes the reads of `r` into a staging array, in unit order, checking each unit's
// placement as it goes; `consume(u, staging)` checks what its consumer sees.
template <class F>
void replay(const ReadPlan& r, const ExecutionPlan& plan, F consume) {
  std::vector<uint8_t> staging(size_t(r.staging_bytes), 0xEE);
  for (const ReadUnit& u : r.units) {
    ASSERT_EQ(u.staging_offset % kReadAlign, 0);
    ASSERT_GE(u.staging_offset, 0);
    ASSERT_LE(u.staging_offset + u.bytes, r.staging_bytes);
    int64_t covered = 0, request = 0;
    for (size_t k = 0; k < u.segments.size(); ++k) {
      const ReadSegment& s = u.segments[k];
      // A request's segments follow each other in the file (blob after blob) and in staging.
      if (s.joins_previous) {
        ASSERT_GT(k, 0u) << "read " << u.index;
        const ReadSegment& a = u.segments[k - 1];
        ASSERT_EQ(s.blob, a.blob + 1) << "read " << u.index << " segment " << k;
        ASSERT_EQ(s.blob_offset, 0);
        ASSERT_EQ(a.blob_offset + a.bytes, plan.weights[size_t(a.blob)].bytes);
        ASSERT_EQ(s.staging_offset, a.staging_offset + a.bytes);
        request += s.bytes;
      } else {
        request = s.bytes;
      }
      ASSERT_LE(request, r.block_bytes) << "read " << u.index << " segment " << k;
      ASSERT_EQ(s.blob_offset % kReadAlign, 0);
      ASSERT_EQ(s.bytes % kReadAlign, 0);
      ASSERT_EQ(s.staging_offset % kReadAlign, 0);
      ASSERT_LE(s.bytes, r.block_bytes);
      ASSERT_LE(s.blob_offset + s.bytes, plan.weights[size_t(s.blob)].bytes);
      ASSERT_GE(s.staging_offset, u.staging_offset);
      ASSERT_LE(s.staging_offset + s.bytes, u.staging_offset + u.bytes);
      for (int64_t i = 0; i < s.bytes; ++i) staging[size_t(s.staging_offset + i)] = file_byte(s.blob, s.blob_offset + i);
      covered += s.bytes;
    }
    ASSERT_EQ(covered, u.bytes) << "read " << u.index << " does not fill its staging range exactly";
    consume(u, staging);
  }
}

TEST(ReadPlan, ThreeStageCopiesSeeTheHostStoreBytesAndStagingIsNeverOverwrittenEarly) {
  std::mt19937_64 rng(20261125);
  int cases = 0;
  for (int iter = 0; iter < 60; ++iter) {
    const ExecutionPlan plan = fake_plan(storage_sizes(&rng, 1 + int(rng() % 40)), &rng);
    StreamOptions so;
    so.ring_granularity = 64 << 10;
    so.chunk_bytes = int64_t(1 + rng() % 8) * 32768 + 256 * int64_t(rng() % 4);  // not 4 KiB-aligned on purpose
    so.min_unit_bytes = 8192;
    so.layout = iter % 3 == 0 ? PoolLayout::kSlots : PoolLayout::kAuto;
    if (iter % 4 == 1) {  // some blobs resident
      so.resident.assign(plan.weights.size(), 0);
      for (char& c : so.resident) c = char(rng() % 3 == 0);
      so.resident[0] = 0;
      so.layout = PoolLayout::kRing;
    }
    Expected<StreamPlan> s = plan_streaming(plan, h100_like(), so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    if (s->resident) continue;
    ReadOptions ro;
    ro.block_bytes = kReadAlign * int64_t(1 + rng() % 16);
    ro.queue_depth = 4;
    for (int64_t extra : {int64_t(0), int64_t(rng() % 5) * 65536}) {
      Expected<ReadPlan> probe = plan_reads_three_stage(plan, *s, ro);
      ASSERT_TRUE(probe.ok()) << probe.status().to_string();
      ro.staging_bytes = extra == 0 ? 0 : probe->min_staging_bytes + extra;
      Expected<ReadPlan> r = plan_reads_three_stage(plan, *s, ro);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      ASSERT_EQ(r->units.size(), s->units.size());
      ASSERT_EQ(r->min_staging_bytes, 2 * r->largest_unit());
      ASSERT_GE(r->staging_bytes, r->min_staging_bytes);
      // The host store bytes of copy unit u, from the fake file.
      auto host_byte = [&](int64_t x) -> int {
        for (size_t b = 0; b < plan.weights.size(); ++b) {
          const int64_t h = s->blob_host_offset[b];
          if (h >= 0 && x >= h && x < h + plan.weights[b].bytes) return file_byte(int(b), x - h);
        }
        return -1;
      };
      replay(*r, plan, [&](const ReadUnit& u, const std::vector<uint8_t>& staging) {
        const TransferUnit& t = s->units[size_t(u.index)];
        const int64_t src = r->copy_src_offset[size_t(u.index)];
        ASSERT_GE(src, u.staging_offset);
        ASSERT_LE(src + t.bytes, u.staging_offset + u.bytes);
        for (int64_t i = 0; i < t.bytes; i += 509)
          ASSERT_EQ(int(staging[size_t(src + i)]), host_byte(t.host_offset + i)) << "unit " << u.index << " byte " << i;
        ASSERT_EQ(int(staging[size_t(src + t.bytes - 1)]), host_byte(t.host_offset + t.bytes - 1));
        // Every earlier read overlapping this one is covered by the copy it waits for.
        ASSERT_LT(u.wait_unit, u.index);
        for (const ReadUnit& v : r->units) {
          if (v.index >= u.index) break;
          const bool overlap = v.staging_offset < u.staging_offset + u.bytes && u.staging_offset < v.staging_offset + v.bytes;
          if (overlap) {
            ASSERT_LE(v.index, u.wait_unit) << "read " << u.index << " overwrites read " << v.index;
          }
        }
      });
      if (HasFatalFailure()) return;
      ++cases;
    }
  }
  EXPECT_GT(cases, 60);
}

TEST(ReadPlan, TwoStageBlobsLieWhereKernelsReadThemUntilTheirLayerIsDone) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 60; ++iter) {
    const ExecutionPlan plan = fake_plan(storage_sizes(&rng, 1 + int(rng() % 40)), &rng);
    ReadOptions ro;
    ro.block_bytes = kReadAlign * int64_t(1 + rng() % 16);
    ro.unit_bytes = int64_t(1 + rng() % 8) * 65536;
    std::vector<char> resident;
    if (iter % 3 == 2) {
      resident.assign(plan.weights.size(), 0);
      for (char& c : resident) c = char(rng() % 4 == 0);
    }
    Expected<ReadPlan> r = plan_reads_two_stage(plan, resident, ro);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_TRUE(r->two_stage);
    // Where each blob's bytes are at the moment its layer runs: layers run in order, a
    // layer runs once its unit has landed, and a unit is read once its wait_layer is done.
    std::vector<uint8_t> staging(size_t(r->staging_bytes), 0xEE);
    size_t next_read = 0;
    int64_t blobs_checked = 0;
    for (const Step& st : plan.steps) {
      const int unit = r->layer_read_unit[size_t(st.layer)];
      if (st.weight < 0 || (!resident.empty() && resident[size_t(st.weight)])) {
        ASSERT_EQ(unit, -1);
        continue;
      }
      ASSERT_GE(unit, 0);
      // Read every unit that may be read before this layer runs: up to `unit`, and any
      // later one whose wait is an earlier layer (the reader runs ahead as far as allowed).
      while (next_read < r->units.size()) {
        const ReadUnit& u = r->units[next_read];
        if (int(next_read) > unit && u.wait_layer >= st.layer) break;
        ASSERT_LT(u.wait_layer, u.first_layer) << "read " << u.index << " waits for a layer that needs it";
        ASSERT_TRUE(int(next_read) <= unit || u.wait_layer < st.layer);
        for (const ReadSegment& s : u.segments)
          for (int64_t i = 0; i < s.bytes; ++i) staging[size_t(s.staging_offset + i)] = file_byte(s.blob, s.blob_offset + i);
        ++next_read;
      }
      const int64_t off = r->blob_staging_offset[size_t(st.weight)];
      ASSERT_GE(off, 0);
      const int64_t n = plan.weights[size_t(st.weight)].bytes;
      ASSERT_LE(off + n, r->staging_bytes);
      for (int64_t i = 0; i < n; i += 127)
        ASSERT_EQ(staging[size_t(off + i)], file_byte(st.weight, i)) << "layer " << st.layer << " byte " << i;
      ASSERT_EQ(staging[size_t(off + n - 1)], file_byte(st.weight, n - 1));
      ++blobs_checked;
    }
    ASSERT_EQ(next_read, r->units.size());
    for (size_t b = 0; b < plan.weights.size(); ++b)
      if (!resident.empty() && resident[b]) {
        EXPECT_EQ(r->blob_staging_offset[b], -1);
      }
    EXPECT_GT(blobs_checked, 0);
  }
}

// Read ahead (ReadPipeline on the CPU backend): the reader goes on with the next
// inference's first units while the current one still computes. Three inferences
// replayed byte by byte, the reader always as far ahead as the plan allows; every
// staging byte is tagged with the inference that read it, so a layer that saw the next
// inference's bytes, or another blob's, fails.
TEST(ReadPlan, TwoStageReadAheadNeverOverwritesWhatThePreviousInferenceStillReads) {
  std::mt19937_64 rng(17);
  int units_ahead = 0;
  for (int iter = 0; iter < 80; ++iter) {
    const ExecutionPlan plan = fake_plan(storage_sizes(&rng, 1 + int(rng() % 40)), &rng);
    ReadOptions ro;
    ro.block_bytes = kReadAlign * int64_t(1 + rng() % 16);
    ro.unit_bytes = int64_t(1 + rng() % 8) * 65536;
    std::vector<char> resident;
    if (iter % 3 == 2) {
      resident.assign(plan.weights.size(), 0);
      for (char& c : resident) c = char(rng() % 4 == 0);
    }
    Expected<ReadPlan> r = plan_reads_two_stage(plan, resident, ro);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    if (iter % 2 == 1) {  // a larger host budget: more units overlap nothing in their inference
      ro.staging_bytes = r->min_staging_bytes * int64_t(1 + rng() % 4) + kReadAlign * int64_t(rng() % 64);
      r = plan_reads_two_stage(plan, resident, ro);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
    }
    const int n = int(r->units.size());
    if (n == 0) continue;
    ASSERT_LE(r->read_ahead_units, n);
    for (int k = 0; k < n; ++k) {
      const ReadUnit& u = r->units[size_t(k)];
      if (k < r->read_ahead_units) {
        ASSERT_EQ(u.wait_layer, -1) << "read " << k;
        if (u.wait_layer_prev >= 0) {
          ASSERT_TRUE(r->layer_releases[size_t(u.wait_layer_prev)]);
        }
      } else {
        ASSERT_EQ(u.wait_layer_prev, -1) << "read " << k;
      }
    }
    if (r->read_ahead_units == 0) continue;
    ASSERT_GE(r->units[0].wait_layer_prev, 0) << "unit 0 overlaps itself in the previous inference";
    const int ahead = r->read_ahead_units;
    std::vector<uint8_t> staging(size_t(r->staging_bytes), 0xEE);
    std::vector<int8_t> owner(size_t(r->staging_bytes), -1);  // the inference that read the byte
    int read_gen = 0, next_read = 0;
    auto read = [&](const ReadUnit& u) {
      for (const ReadSegment& s : u.segments)
        for (int64_t i = 0; i < s.bytes; ++i) {
          staging[size_t(s.staging_offset + i)] = file_byte(s.blob, s.blob_offset + i);
          owner[size_t(s.staging_offset + i)] = int8_t(read_gen);
        }
      if (++next_read == n) {
        ++read_gen;
        next_read = 0;
      }
    };
    for (int g = 0; g < 3; ++g) {
      // Inference g starts once the previous one's reads are done (all of g may be read).
      ASSERT_TRUE(read_gen == g || (read_gen == g + 1 && next_read == 0)) << "inference " << g;
      for (const Step& st : plan.steps) {
        const int unit = r->layer_read_unit[size_t(st.layer)];
        // The reader before this layer: this inference's units as far as their waits allow
        // (layers before st.layer are done), then the next inference's first units.
        for (;;) {
          if (read_gen == g) {
            const ReadUnit& u = r->units[size_t(next_read)];
            if (next_read > unit && u.wait_layer >= st.layer) break;
            read(u);
          } else {  // at most one inference ahead
            const ReadUnit& u = r->units[size_t(next_read)];
            if (read_gen > g + 1 || next_read >= ahead || u.wait_layer_prev >= st.layer) break;
            read(u);
            ++units_ahead;
          }
        }
        if (unit < 0) continue;
        const int64_t off = r->blob_staging_offset[size_t(st.weight)];
        const int64_t bytes = plan.weights[size_t(st.weight)].bytes;
        for (int64_t i = 0; i < bytes; i += 61) {
          ASSERT_EQ(owner[size_t(off + i)], g) << "inference " << g << " layer " << st.layer << " byte " << i;
          ASSERT_EQ(staging[size_t(off + i)], file_byte(st.weight, i)) << "layer " << st.layer << " byte " << i;
        }
        ASSERT_EQ(owner[size_t(off + bytes - 1)], g);
      }
      // After the last layer the reader finishes this inference and reads ahead as far as allowed.
      while (read_gen == g) read(r->units[size_t(next_read)]);
      while (read_gen == g + 1 && next_read < ahead) {
        read(r->units[size_t(next_read)]);
        ++units_ahead;
      }
    }
  }
  EXPECT_GT(units_ahead, 100) << "the random plans hardly read ahead: the test checks little";
}

// Read ahead on three stages (ReadPipeline with the CUDA engine's device waits): the
// next inference's first units are read once the current inference's reads are done and
// the copy each waits for (wait_unit_prev) has ended. Three inferences replayed byte by
// byte, copies ending in order, the reader always as far ahead as the plan allows; every
// staging byte is tagged with the inference that read it, so a copy that would see the
// next inference's bytes, or another unit's, fails.
TEST(ReadPlan, ThreeStageReadAheadNeverOverwritesWhatACopyStillNeeds) {
  std::mt19937_64 rng(29);
  int units_ahead = 0;
  for (int iter = 0; iter < 80; ++iter) {
    const ExecutionPlan plan = fake_plan(storage_sizes(&rng, 1 + int(rng() % 40)), &rng);
    StreamOptions so;
    so.ring_granularity = 64 << 10;
    so.chunk_bytes = int64_t(1 + rng() % 8) * 32768;
    so.min_unit_bytes = 8192;
    so.layout = iter % 3 == 0 ? PoolLayout::kSlots : PoolLayout::kAuto;
    Expected<StreamPlan> sp = plan_streaming(plan, h100_like(), so);
    ASSERT_TRUE(sp.ok()) << sp.status().to_string();
    if (sp->resident) continue;
    ReadOptions ro;
    ro.block_bytes = kReadAlign * int64_t(1 + rng() % 16);
    Expected<ReadPlan> r = plan_reads_three_stage(plan, *sp, ro);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    if (iter % 2 == 1) {  // a larger host budget: more units overlap nothing in their inference
      ro.staging_bytes = r->min_staging_bytes * int64_t(1 + rng() % 4) + kReadAlign * int64_t(rng() % 64);
      r = plan_reads_three_stage(plan, *sp, ro);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
    }
    const int n = int(r->units.size());
    ASSERT_LE(r->read_ahead_units, n);
    for (int k = 0; k < n; ++k) {
      const ReadUnit& u = r->units[size_t(k)];
      if (k < r->read_ahead_units) {
        ASSERT_EQ(u.wait_unit, -1) << "read " << k;
        ASSERT_LT(u.wait_unit_prev, n) << "read " << k;
      } else {
        ASSERT_EQ(u.wait_unit_prev, -1) << "read " << k;
      }
      ASSERT_EQ(u.wait_layer_prev, -1) << "read " << k;
    }
    if (n == 0) continue;
    ASSERT_GE(r->units[0].wait_unit_prev, 0) << "unit 0 overlaps itself in the previous inference";
    const int ahead = r->read_ahead_units;
    // Per 4 KiB staging page (reads are whole pages): the inference and unit that read it.
    std::vector<int8_t> owner(size_t(r->staging_bytes / kReadAlign), -1);
    std::vector<int16_t> unit_of(owner.size(), -1);
    int read_gen = 0, next_read = 0;
    auto read = [&](const ReadUnit& u) {
      for (const ReadSegment& sg : u.segments)
        for (int64_t i = 0; i < sg.bytes; i += kReadAlign) {
          owner[size_t((sg.staging_offset + i) / kReadAlign)] = int8_t(read_gen);
          unit_of[size_t((sg.staging_offset + i) / kReadAlign)] = int16_t(u.index);
        }
      if (++next_read == n) {
        ++read_gen;
        next_read = 0;
      }
    };
    for (int g = 0; g < 3; ++g) {
      for (int c = 0; c < n; ++c) {  // copy c of inference g; copies < c have ended
        for (;;) {  // the reader, as far as the ended copies allow
          const ReadUnit& u = r->units[size_t(next_read)];
          if (read_gen == g) {
            if (next_read > c && u.wait_unit >= c) break;
            ASSERT_LT(u.wait_unit, c) << "read " << u.index << " of inference " << g << " before copy " << c;
            read(u);
          } else {  // at most one inference ahead
            if (read_gen > g + 1 || next_read >= ahead || u.wait_unit_prev >= c) break;
            read(u);
            ++units_ahead;
          }
        }
        const ReadUnit& u = r->units[size_t(c)];
        const int64_t first = u.own_offset / kReadAlign, last = (u.own_offset + u.own_bytes - 1) / kReadAlign;
        for (int64_t page = first; page <= last; ++page) {
          ASSERT_EQ(owner[size_t(page)], g) << "inference " << g << " copy " << c << " page " << page;
          ASSERT_EQ(unit_of[size_t(page)], c) << "inference " << g << " copy " << c << " page " << page;
        }
      }
      // Every copy of inference g has ended: the reader finishes it and reads ahead.
      while (read_gen == g) read(r->units[size_t(next_read)]);
      while (read_gen == g + 1 && next_read < ahead) {
        read(r->units[size_t(next_read)]);
        ++units_ahead;
      }
    }
  }
  EXPECT_GT(units_ahead, 100) << "the random plans hardly read ahead: the test checks little";
}

// Blobs that follow each other are read in requests of a whole block, across blob
// boundaries (a 1 MiB + 4 KiB blob is not read as 1 MiB and then 4 KiB).
// What a read overwrites (latest_overlapping, used by the plans and by ReadPipeline to
// check a unit's bytes before its staging is read into again): against a byte-by-byte
// record of which unit last held each staging byte, on random FIFO rings.
TEST(ReadPlan, LatestOverlappingIsTheLastUnitHoldingAnyOfTheBytes) {
  std::mt19937 rng{7};
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t staging = 4 + int64_t(rng() % 60);
    std::vector<ReadUnit> units(1 + rng() % 30);
    std::vector<int> owner(size_t(staging), -1);
    int64_t cursor = 0;
    for (size_t i = 0; i < units.size(); ++i) {
      ReadUnit& u = units[i];
      u.index = int(i);
      u.bytes = 1 + int64_t(rng() % uint32_t(staging / 2));
      if (cursor + u.bytes > staging) cursor = 0;
      u.staging_offset = cursor;
      cursor += u.bytes;
      int expected = -1;
      for (int64_t b = u.staging_offset; b < u.staging_offset + u.bytes; ++b) expected = std::max(expected, owner[size_t(b)]);
      EXPECT_EQ(latest_overlapping(units, int(i), u), expected) << "trial " << trial << " unit " << i;
      for (int64_t b = u.staging_offset; b < u.staging_offset + u.bytes; ++b) owner[size_t(b)] = int(i);
    }
    EXPECT_EQ(latest_overlapping(units, 0, units.back()), -1);
  }
}

TEST(ReadPlan, RunsOfBlobsAreReadInBlockSizedRequests) {
  const int64_t page = kReadAlign, mib = int64_t(1) << 20;
  const ExecutionPlan plan = fake_plan({page, page, page, 2 * page, mib + page, page}, nullptr);
  ReadOptions ro;
  ro.block_bytes = mib;
  ro.unit_bytes = 4 * mib;
  Expected<ReadPlan> r = plan_reads_two_stage(plan, {}, ro);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->units.size(), 1u);
  EXPECT_EQ(r->units[0].requests(), 2) << r->to_text();  // 1 MiB, then the last 28 KiB
  EXPECT_EQ(r->units[0].segments.size(), 7u);  // blob 4 is cut where the first request ends
  replay(*r, plan, [](const ReadUnit&, const std::vector<uint8_t>&) {});
  // Resident blobs in between break the runs: blobs 0-1 and 3-5 are read apart.
  Expected<ReadPlan> apart = plan_reads_two_stage(plan, {0, 0, 1, 0, 0, 0}, ro);
  ASSERT_TRUE(apart.ok()) << apart.status().to_string();
  ASSERT_EQ(apart->units.size(), 1u);
  EXPECT_EQ(apart->units[0].requests(), 3) << apart->to_text();
  replay(*apart, plan, [](const ReadUnit&, const std::vector<uint8_t>&) {});
}

TEST(ReadPlan, HostBudgetBelowTheMinimumNamesBothSizes) {
  const ExecutionPlan plan = fake_plan({4 << 20, 2 << 20, 1 << 20}, nullptr);
  ReadOptions ro;
  ro.unit_bytes = 1 << 20;
  ro.staging_bytes = 5 << 20;
  Expected<ReadPlan> r = plan_reads_two_stage(plan, {}, ro);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "host budget 5.00 MiB is below the minimum for reading from storage, 8.00 MiB (2 x the largest read, "
            "4.00 MiB)");
  ro.staging_bytes = 8 << 20;
  EXPECT_TRUE(plan_reads_two_stage(plan, {}, ro).ok());
}

// Kept bytes of `kept` and host bytes for weights: kept + the staging of the rest.
int64_t kept_bytes(const ExecutionPlan& plan, const std::vector<char>& kept) {
  int64_t n = 0;
  for (size_t b = 0; b < kept.size(); ++b)
    if (kept[b]) n += plan.weights[b].bytes;
  return n;
}

TEST(ReadPlan, HostResidentChoiceFitsTheBudgetAndReadsExactlyTheRest) {
  std::mt19937_64 rng(20261126);
  ReadOptions ro;
  ro.unit_bytes = 64 << 10;
  for (int iter = 0; iter < 40; ++iter) {
    const ExecutionPlan plan = fake_plan(storage_sizes(&rng, 2 + int(rng() % 25)), &rng);
    Expected<ReadPlan> none = plan_reads_two_stage(plan, {}, ro);
    ASSERT_TRUE(none.ok()) << none.status().to_string();
    const int64_t total = plan.weight_bytes();
    for (int64_t budget : {int64_t(0), none->min_staging_bytes / 2, none->min_staging_bytes,
                           none->min_staging_bytes + total / 3, total, total + none->min_staging_bytes}) {
      Expected<std::vector<char>> kept = choose_host_resident(plan, budget, ro);
      ASSERT_TRUE(kept.ok()) << kept.status().to_string();
      ASSERT_EQ(kept->size(), plan.weights.size());
      const int64_t k = kept_bytes(plan, *kept);
      if (budget == 0) {
        EXPECT_EQ(k, 0) << "the minimum keeps nothing";
      }
      if (budget >= total) {
        EXPECT_EQ(k, total) << "a budget holding every blob reads nothing";
      }
      if (k == 0 && budget > 0 && budget < none->min_staging_bytes) continue;  // refused below
      ReadOptions with = ro;
      with.staging_bytes = std::max<int64_t>(budget - k, 0);
      Expected<ReadPlan> r = plan_reads_two_stage(plan, *kept, with);
      if (budget == 0) {
        ASSERT_TRUE(r.ok());
        continue;
      }
      ASSERT_TRUE(r.ok()) << "budget " << budget << " kept " << k << ": " << r.status().to_string();
      EXPECT_LE(k + r->staging_bytes, budget);
      EXPECT_EQ(r->read_bytes() + k, total);
      if (budget >= none->min_staging_bytes && k < total) {
        EXPECT_GE(r->staging_bytes, none->min_staging_bytes) << "the staging went below the all-read minimum";
      }
      for (size_t b = 0; b < kept->size(); ++b) {
        EXPECT_EQ(r->blob_staging_offset[b] < 0, (*kept)[b] != 0) << "blob " << b;
        EXPECT_EQ(r->blob_read_unit[b] < 0, (*kept)[b] != 0) << "blob " << b;
      }
    }
  }
}

TEST(ReadPlan, RefusesBlobsThatAreNotWholePages) {
  const ExecutionPlan plan = fake_plan({4096, 4096 + 256}, nullptr);
  Expected<ReadPlan> r = plan_reads_two_stage(plan, {}, ReadOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("multiples of 4096"), std::string::npos) << r.status().message();
}

TEST(ReadPlan, StoragePlansHavePageSizedBlobs) {
  const ExecutionPlan plan = fake_plan({12288, 4096}, nullptr);
  ReadOptions ro;
  ro.queue_depth = 0;
  EXPECT_FALSE(plan_reads_two_stage(plan, {}, ro).ok());
  ro.queue_depth = 4;
  ro.block_bytes = 1000;
  EXPECT_FALSE(plan_reads_two_stage(plan, {}, ro).ok());
}

TEST(ReadPlan, SimulatedReadsBoundTheLatencyAndVanishWhenFree) {
  std::mt19937_64 rng(3);
  for (int iter = 0; iter < 30; ++iter) {
    const ExecutionPlan plan = fake_plan(storage_sizes(&rng, 2 + int(rng() % 30)), &rng);
    const std::vector<double> ms = test::random_times(plan, &rng, 0.01, 0.5);
    StreamOptions so;
    so.ring_granularity = 64 << 10;
    so.min_unit_bytes = 8192;
    Expected<StreamPlan> s = plan_streaming(plan, h100_like(), so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    if (s->resident) continue;
    // Staging for every read at once: no read waits for a copy, so free reads change nothing.
    ReadOptions ro;
    ro.staging_bytes = 2 * plan.weight_bytes() + (64 << 20);
    Expected<ReadPlan> r = plan_reads_three_stage(plan, *s, ro);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    for (const ReadUnit& u : r->units) ASSERT_EQ(u.wait_unit, -1);
    const SimResult plain = simulate(plan, *s, h100_like(), ms);
    SimOptions free_reads;
    free_reads.reads = &*r;
    free_reads.read_ms = [](int64_t) { return 0.0; };
    const SimResult free = simulate(plan, *s, h100_like(), ms, free_reads);
    EXPECT_TRUE(free.violations.empty()) << free.violations[0];
    EXPECT_NEAR(free.latency_ms, plain.latency_ms, 1e-9);
    // A slow disk (1 GB/s) and the minimal staging: reads are serial, so the latency is at
    // least all of them, and a read waits for the copy that last used its staging.
    Expected<ReadPlan> tight = plan_reads_three_stage(plan, *s, ReadOptions());
    ASSERT_TRUE(tight.ok()) << tight.status().to_string();
    r = tight;
    SimOptions slow = free_reads;
    slow.reads = &*r;
    slow.read_ms = [](int64_t b) { return double(b) / 1e6; };
    const SimResult disk = simulate(plan, *s, h100_like(), ms, slow);
    EXPECT_TRUE(disk.violations.empty()) << disk.violations[0];
    EXPECT_GE(disk.latency_ms + 1e-9, double(r->read_bytes()) / 1e6);
    for (size_t u = 0; u < r->units.size(); ++u) {
      EXPECT_GE(disk.copy_start_ms[u] + 1e-9, disk.read_end_ms[u]) << "copy " << u << " before its read landed";
      const int w = r->units[u].wait_unit;
      if (w >= 0) {
        EXPECT_GE(disk.read_start_ms[u] + 1e-9, disk.copy_end_ms[size_t(w)]) << "read " << u;
      }
    }
    // Two stages: at least every read, at least every kernel, each layer after its read.
    Expected<ReadPlan> two = plan_reads_two_stage(plan, {}, ReadOptions());
    ASSERT_TRUE(two.ok());
    const SimResult t = simulate_two_stage(plan, *two, ms, slow.read_ms);
    double compute = 0;
    for (double x : ms) compute += x;
    EXPECT_GE(t.latency_ms + 1e-9, std::max(compute, double(two->read_bytes()) / 1e6));
    for (const Step& st : plan.steps) {
      const int u = two->layer_read_unit[size_t(st.layer)];
      if (u >= 0) {
        EXPECT_GE(t.layer_start_ms[size_t(st.layer)] + 1e-9, t.read_end_ms[size_t(u)]);
      }
    }
  }
}

}  // namespace
}  // namespace dlr
