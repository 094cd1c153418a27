// ReadPlan: how streamed weights come from storage each inference
// (--weights-from storage; docs/streaming.md section 7). Plain data, computed by the
// compile step from the ExecutionPlan (and the StreamPlan on the three-stage path);
// printable and testable without a file or a GPU. The engines follow it.
//
// The file is a prepared weight file (runtime/storage/prepared_file.h): every blob
// prepared (BN folded, dtype, layout) and starting at a 4096-aligned file offset; in
// storage plans every blob's size is a multiple of 4096 too (PlannerOptions::
// weight_align), so any 4096-aligned range of the streamed blobs maps to
// 4096-aligned file ranges, as O_DIRECT needs.
//
// Reads land in a staging area of `staging_bytes` host bytes, a FIFO ring: read unit u
// takes the next `bytes` at the cursor, or restarts at 0 when they do not fit before
// the end. Before a read may overwrite staging bytes, what occupied them must be done:
//  - three stages (discrete GPU: read -> copy -> kernel): one read per transfer unit
//    of the StreamPlan, covering the unit's host range rounded out to 4096; the
//    staging bytes are free once the copy of the latest earlier unit overlapping
//    them has finished (`wait_unit`; copies finish in order on the copy stream).
//  - two stages (CPU backend; integrated GPU with --zero-copy: read -> kernel): whole
//    blobs grouped into read units; kernels read the weights in the staging area
//    itself (mapped pinned memory on a GPU), so every streamed blob has a fixed
//    staging address (`blob_staging_offset`); the staging bytes are free once the last
//    layer reading any blob of an overlapping earlier unit has finished (`wait_layer`;
//    layers finish in order).
// A read unit is described by `segments`, each within one blob; consecutive segments
// that follow each other both in the file (the end of a blob, then the start of the next
// one: the prepared file holds plan.weights back to back) and in staging are read by one
// request (`joins_previous`) of at most `block_bytes`, up to `queue_depth` requests in
// flight: a run of small blobs is read in block-sized requests, as a plain pass over the
// file would be.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/compile/plan.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

constexpr int64_t kReadAlign = 4096;  // O_DIRECT offset/size/address alignment the plan keeps

struct ReadSegment {
  int blob = 0;                 // plan.weights index
  int64_t blob_offset = 0;      // bytes into the prepared blob (multiple of 4096)
  int64_t bytes = 0;            // multiple of 4096, at most block_bytes
  int64_t staging_offset = 0;   // where it lands (multiple of 4096)
  // Read by the same request as the segment before it in its unit (which ends where
  // this one starts in the file and in staging); a request is at most block_bytes.
  bool joins_previous = false;
};

struct ReadUnit {
  int index = 0;
  int64_t staging_offset = 0;   // [staging_offset, staging_offset + bytes) of the staging area
  int64_t bytes = 0;
  int first_blob = 0;           // blobs [first_blob, last_blob] (plan.weights indices) overlap it
  int last_blob = 0;
  int first_layer = 0;          // the first layer that needs it
  int wait_unit = -1;           // three stages: the copy (StreamPlan unit) that must finish first; -1 none
  int wait_layer = -1;          // two stages: the layer that must finish first; -1 none
  // Units read ahead (index < ReadPlan::read_ahead_units): what of the PREVIOUS inference
  // must be done before this unit of the next inference may be read while that inference
  // still runs. Two stages: the last layer reading the latest unit overlapping this one's
  // staging bytes; three stages: the copy of that unit. -1: no unit overlaps them.
  // Derived by plan_read_ahead(), not stored in the plan JSON.
  int wait_layer_prev = -1;
  int wait_unit_prev = -1;
  // The bytes this unit is read for (no other unit covers them): staging
  // [own_offset, own_offset + own_bytes). Three stages: the transfer unit's range (the
  // read rounds it out to 4096); two stages: everything. Their checksums are checked.
  int64_t own_offset = 0;
  int64_t own_bytes = 0;
  std::vector<ReadSegment> segments;
  int requests() const;  // segments not joining the previous one
};

struct ReadPlan {
  bool two_stage = false;
  int64_t staging_bytes = 0;      // host bytes of the staging area (the host budget used)
  int64_t min_staging_bytes = 0;  // 2 x the largest read unit: a read can proceed while the previous one is used
  int queue_depth = 0;
  int64_t block_bytes = 0;
  std::vector<ReadUnit> units;
  // Three stages, per StreamPlan unit: the staging offset of its first byte (the copy's source).
  std::vector<int64_t> copy_src_offset;
  // Two stages, per weight blob: its staging offset (-1: not read, i.e. resident) and the read unit bringing it.
  std::vector<int64_t> blob_staging_offset;
  std::vector<int> blob_read_unit;
  // Two stages, per step: the read unit its weights need (-1: none), and whether a read
  // waits for it to finish (wait_layer, or wait_layer_prev of a unit read ahead).
  std::vector<int> layer_read_unit;
  std::vector<char> layer_releases;
  // Units [0, read_ahead_units) overlap no earlier unit of their own inference
  // (wait_layer / wait_unit -1), so they may be read for the NEXT inference once the
  // current one's reads are done and its layer wait_layer_prev (two stages) or copy
  // wait_unit_prev (three stages) has finished (ReadPipeline with read ahead). The
  // staging is the same; only the order across inferences changes. Derived by
  // plan_read_ahead(), not stored in the plan JSON.
  int read_ahead_units = 0;

  int64_t read_bytes() const;     // bytes read from the file per inference
  int64_t largest_unit() const;
  // What a read waits for, by the path: a layer (two stages) or a copy (three stages);
  // -1 none. `wait` in its own inference, `wait_prev` in the previous one (read ahead).
  int wait(const ReadUnit& u) const { return two_stage ? u.wait_layer : u.wait_unit; }
  int wait_prev(const ReadUnit& u) const { return two_stage ? u.wait_layer_prev : u.wait_unit_prev; }
  std::string to_text() const;
};

// The latest of units[0, before) whose staging bytes overlap u's (what a read of u
// overwrites); -1: none.
int latest_overlapping(const std::vector<ReadUnit>& units, int before, const ReadUnit& u);

struct ReadOptions {
  int64_t staging_bytes = 0;   // 0 = min_staging_bytes; less than the minimum is an error naming both
  int queue_depth = 8;         // 1..64
  int64_t block_bytes = int64_t(1) << 20;  // multiple of 4096
  int64_t unit_bytes = int64_t(4) << 20;   // two stages: whole blobs grouped up to this (a larger blob alone)
};

// Three stages: one read unit per transfer unit of `stream` (ring or slots, not
// resident), over the streamed blobs' host store (stream.blob_host_offset). Every
// weight blob's size must be a multiple of 4096 (storage plans).
Expected<ReadPlan> plan_reads_three_stage(const ExecutionPlan& plan, const StreamPlan& stream,
                                          const ReadOptions& options);

// Two stages: every blob not marked in `resident` (per plan.weights; empty = none)
// read into staging, whole blobs grouped into units of at most unit_bytes.
Expected<ReadPlan> plan_reads_two_stage(const ExecutionPlan& plan, const std::vector<char>& resident,
                                        const ReadOptions& options);

// Two stages where the kernels run on the host (CPU backend): which blobs to keep in host
// memory for the whole session (read once at open, never again) within `host_budget`
// bytes of host memory for weights in all (kept blobs + staging). A budget holding every
// blob keeps every blob. Otherwise the staging is at least the minimum for reading every
// blob (2 x the largest read unit with nothing kept) when the budget allows that, and
// the bytes beyond it keep blobs in order, largest first (equal sizes: the later layer
// first): the longest prefix whose bytes plus the staging (that floor, or the minimum
// staging of the blobs still read if larger) fit, then each later blob that still fits;
// the staging gets what is left (plan_reads_two_stage with staging = budget - kept).
// A budget below the floor can only be met by keeping blobs so that the rest needs less
// staging (a model of a few read units).
// Every kept byte is a byte not read per inference, which is what a read costs on a
// host that pays for its disk with its own cores; staging beyond the floor only moves
// reads earlier. host_budget 0 (the minimum) or below the first fit: none kept.
// Returns one flag per plan.weights entry (non-zero = kept).
Expected<std::vector<char>> choose_host_resident(const ExecutionPlan& plan, int64_t host_budget,
                                                 const ReadOptions& options);

// Sets read_ahead_units and every unit's wait_layer_prev (two stages, and the layers
// they release) or wait_unit_prev (three stages). plan_reads_* call it; a plan read from
// JSON gets it again (derived, not stored). A plan whose indices do not fit `plan` gets
// no read ahead.
void plan_read_ahead(const ExecutionPlan& plan, ReadPlan* r);

// The copy profile a three-stage storage plan is chosen with (pool, resident set,
// units): every streamed byte is read and then copied, unit after unit, so at each
// pinned size the bandwidth is the smaller of the copy's and the disk's (direct reads
// of min(size, block_bytes) with queue_depth in flight; the profile's storage, or
// its default). Queue classes, chunk and unit sizes are unchanged; the name gains
// "+storage".
CopyProfile storage_copy_profile(const CopyProfile& profile, int64_t block_bytes, int queue_depth);

}  // namespace dlr
