// What the files of plan_streaming share (stream_plan.cpp: the budget and the pool;
// stream_plan_units.cpp: units, waits and the host order; stream_plan_apart.cpp:
// resident and staged blobs). Private to runtime/streaming.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr::stream_detail {

constexpr int64_t kAlign = 256;  // of every blob, unit, chunk and pool offset (bytes)

// Bytes as MiB with `decimals` decimals (messages and to_text).
std::string mib_text(int64_t b, int decimals = 2);

// The byte ranges of the host store: blob b is [offset[b], offset[b] + bytes[b]).
struct HostLayout {
  std::vector<int64_t> offset;
  std::vector<int64_t> end;
  int64_t total = 0;
};
HostLayout host_layout(const ExecutionPlan& plan);

// Cuts the host byte range of whole blobs [first_blob, last_blob] into units of about
// `chunk` bytes (`first_chunk` for the first one; the rule is in the .cpp) and appends
// them to `out` with index, group, host range and blob range filled (pool_offset and
// first_layer are left to the caller).
void cut_units(const HostLayout& h, int first_blob, int last_blob, int group, int64_t chunk, int64_t first_chunk,
               int64_t min_unit, std::vector<TransferUnit>* out);

// The profile's chunk for a ring of `ring` bytes: at most ring / 8 (at least min_unit).
int64_t ring_chunk(int64_t chunk, int64_t min_unit, int64_t ring);

// Fills `s` (slot_bytes set) as a ring of `ring` bytes: units (ending at unit_ends when
// given, else chunks of at most ring_max_unit(ring, slot_bytes, unit_cap)), pool offsets,
// last units and copy waits; not the order.
void plan_ring(const ExecutionPlan& plan, const HostLayout& h, int64_t ring, int64_t chunk, int64_t min_unit,
               int64_t unit_cap, const std::vector<int64_t>& unit_ends, StreamPlan* s);

// The host enqueue order of `s`'s copies and plan's launches (StreamPlan::order).
std::vector<StreamAction> host_order(const ExecutionPlan& plan, const StreamPlan& s);

// An error when a unit of `s` falls in a size class the profile cannot queue.
Status check_queueable(const CopyProfile& profile, const StreamPlan& s);

// Whether staged blob b is copied in one unit with b - 1 (StreamOptions::arena_joined).
bool joined(const StreamOptions& options, size_t b);

// Checks StreamOptions::arena_offset / arena_wait / arena_joined against the plan;
// *n_staged: the staged blobs.
Status check_staged(const ExecutionPlan& plan, const StreamOptions& options, int* n_staged);

// `options` with the plan's blobs staged whole (WeightBlob::arena_offset) among its staged
// ones, each copied as soon as its bytes are free (a blob `options` makes resident stays
// resident), unless the budget holds every other blob. *added: whether any entry changed.
StreamOptions with_whole_staged(const ExecutionPlan& plan, const StreamOptions& options, bool* added);

// Adds the staged blobs of `options` to `s`, a ring plan of the other blobs, and sets
// its order.
void add_staged(const ExecutionPlan& plan, const StreamOptions& options, StreamPlan* s);

}  // namespace dlr::stream_detail
