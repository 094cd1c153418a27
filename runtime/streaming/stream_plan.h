// StreamPlan: how weights reach a bounded device pool during an inference
// (demand layering). Plain data computed before the first inference from the
// ExecutionPlan, a CopyProfile and a budget; printable and testable without a GPU.
// The CUDA stream executor follows it; the simulator checks and times it.
//
// Model (docs/streaming.md section 1 has the diagram):
//  - The host weight store holds every prepared blob back to back in plan.weights
//    order (= execution order), pinned, so any run of consecutive blobs is one
//    contiguous byte range.
//  - Groups: consecutive blobs are packed into groups of at most `slot_bytes`
//    (= the largest blob, rounded up to 256 B). A group is a residency unit.
//  - Two pool layouts:
//    * ring (default where the device has virtual memory management): a ring of
//      P bytes (the budget rounded down to the mapping granularity, >= 2 x the
//      largest blob) mapped twice back to back in the device address space, so
//      host byte x lives at ring offset x % P and every blob is contiguous even
//      where it wraps. Byte x may be overwritten once the reader of byte x - P has
//      finished: lookahead is exactly P bytes, nothing is wasted on wrap or padding.
//    * slots (fallback): K = floor(budget / slot_bytes) >= 2 slots of slot_bytes;
//      group g lives in slot g % K, its blobs back to back from the slot's start.
//      K = 2 is double buffering; a larger K buys lookahead (copies may run up to
//      K-1 groups ahead of compute).
//  - Transfer units are the copies: each group's byte range cut into chunks of
//    at most chunk_bytes. A layer waits only for the unit holding the last byte
//    of its blob (copies on one stream complete in order).
//  - Memory is refilled only after every layer reading what occupied it before has
//    finished (unit_waits: the copy stream waits on the last such layer's event).
//  - Resident: when the budget holds every blob, each blob gets its own region,
//    copied once at open; an inference copies nothing (behaves like preload).
//  - `order` is the host enqueue order of copies and layer launches; a copy is
//    never enqueued before the launches it waits on (so its stream waits see the
//    right event records), and at most `max_copies_ahead` copies are enqueued
//    ahead of the layer being launched, which keeps the host inside the profile's
//    queue (the simulator proves it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"

namespace dlr {

// PoolLayout (where streamed weights live on the device, see the file comment) is
// a session option: runtime/options.h.

struct TransferUnit {
  int index = 0;
  int group = 0;             // slots: residency group (slot = group % slots); ring and resident: -1 / 0
  int64_t host_offset = 0;   // bytes into the host weight store
  int64_t bytes = 0;
  int64_t pool_offset = 0;   // bytes into the device pool
  int first_blob = 0;        // blobs [first_blob, last_blob] (plan.weights indices) overlap this unit
  int last_blob = 0;
  int first_layer = 0;       // first layer that needs this unit
  // Staged in the activation arena (StreamOptions::arena_offset): pool_offset is an offset
  // in the activation arena, host_offset one in the staged store (the staged blobs back to
  // back in execution order), first_blob == last_blob the one blob it brings.
  bool in_arena = false;
};

struct StreamAction {
  enum class Kind : uint8_t { kCopy, kLayer };
  Kind kind = Kind::kCopy;
  int index = 0;  // unit index for kCopy, layer (step) index for kLayer
};

struct StreamOptions {
  int64_t budget_bytes = 0;      // device pool bytes; 0 = the minimal pool of the chosen layout
  int64_t chunk_bytes = 0;       // 0 = the profile's
  int64_t min_unit_bytes = 0;    // 0 = the profile's
  // Ring layout: > 0: no transfer unit larger than this (rounded down to 256), besides the
  // ring's own limit (ring_max_unit). Weights from storage: half the host staging less
  // the reads' 4096-byte rounding, so that the two reads the staging must hold fit.
  int64_t max_unit_bytes = 0;
  int max_copies_ahead = 0;      // 0 = from the profile's queue depth
  PoolLayout layout = PoolLayout::kAuto;  // auto: ring when ring_granularity > 0 and the budget holds a ring
  int64_t ring_granularity = int64_t(2) << 20;  // device mapping granularity; 0 = no ring on this device
  // Ring layout only: explicit unit boundaries instead of chunking (unit_search.h
  // chooses them). Host byte offsets where units end, strictly increasing, multiples
  // of 256, the last one the total weight bytes; each unit at most ring - largest blob.
  // With resident blobs these are offsets into the streamed store (streamed blobs only).
  std::vector<int64_t> unit_ends;
  // Per weight blob (plan.weights order), or empty: 1 = resident (its own region of
  // the device weight memory, uploaded once at open; never copied per inference, never
  // in the host store). budget_bytes then covers the resident bytes AND the pool; the
  // streamed blobs are planned as if they were the whole network (ring pool only).
  // residency.h chooses the set.
  std::vector<char> resident;
  // Ring layout: stream every blob outside `resident` through a ring of budget_bytes minus
  // the resident bytes even when that ring would hold them all (which otherwise makes the
  // plan resident). A Runtime's shared ring (multi/ring_split.h): its bytes are shared with
  // the other models, resident bytes are the model's own, so a small model may stream
  // through a ring larger than its weights. Needs a ring (ring_granularity > 0).
  bool never_resident = false;
  // Per weight blob, or empty: >= 0 = staged in the activation arena at that byte offset:
  // copied every inference, not into the pool but into arena bytes no activation holds
  // from the end of step arena_wait[b] to the end of its reader (arena_staging.h chooses
  // them and checks that). Such a blob is neither resident nor in the ring; its copy
  // waits for step arena_wait[b] (>= 0) and is queued among the ring's units before the
  // first one that waits for a later step. Ring layout only.
  std::vector<int64_t> arena_offset;
  std::vector<int> arena_wait;
  // Per weight blob, or empty (all 0): where a staged blob's copy is queued. 0: before the
  // ring's first unit needed after its reader (never before an earlier such staged copy);
  // 1: as early as its wait allows, after the ring's units needed up to step
  // arena_wait[b] (a copy the engine would otherwise idle before).
  std::vector<char> arena_early;
  // Per weight blob, or empty (all 0): 1 = staged blob b is copied in one unit with
  // blob b - 1 (a run: b - 1 staged, b at the arena offset where b - 1 ends, the same
  // wait and queue place; each blob's bytes must stay free from the copy to its own
  // reader). Fewer, larger copies: a copy costs a fixed time besides its bytes
  // (docs/streaming.md section 6).
  std::vector<char> arena_joined;
};

struct WeightGroup {
  int first_blob = 0;        // blobs [first_blob, last_blob]
  int last_blob = 0;
  int64_t host_offset = 0;
  int64_t bytes = 0;
  int slot = 0;
  int last_layer = 0;        // the last layer reading any of its blobs
};

struct StreamPlan {
  PoolLayout layout = PoolLayout::kSlots;  // kSlots or kRing (resident plans: kSlots)
  int64_t pool_bytes = 0;        // device memory for weights (ring bytes, slots * slot_bytes, or the total when resident)
  int64_t slot_bytes = 0;        // the largest blob, 256-aligned
  int slots = 0;                 // K (0 when resident or ring)
  int64_t minimal_pool_bytes = 0;  // the layout's smallest pool: slots 2 * slot_bytes; ring see plan_streaming
  // Ring layout: pool_offset values lie in [0, pool_bytes); a blob or unit may extend
  // past pool_bytes into the second mapping (offsets up to 2 * pool_bytes).
  int64_t ring_bytes() const { return layout == PoolLayout::kRing ? pool_bytes : 0; }
  int64_t address_span() const { return layout == PoolLayout::kRing ? 2 * pool_bytes : pool_bytes; }
  int64_t total_weight_bytes = 0;
  std::vector<WeightGroup> groups;
  bool resident = false;         // the pool holds every streamed blob: copied once at open, nothing per inference
  // Resident blobs (StreamOptions::resident): their own device region of resident_bytes,
  // separate from the pool, uploaded once at open. blob_pool_offset of a resident blob
  // is its offset in that region; its blob_last_unit is -1 (nothing to wait for).
  std::vector<char> blob_resident;           // per weight blob: 1 = resident, 2 = staged in the arena (empty: none)
  int64_t resident_bytes = 0;
  // Staged blobs (StreamOptions::arena_offset): blob_pool_offset is the arena offset,
  // blob_host_offset the offset in the staged store, blob_last_unit the unit bringing it.
  int64_t staged_bytes = 0;
  // Per weight blob: its offset in the host store, which holds the streamed blobs back
  // to back in execution order (-1 for a resident blob).
  std::vector<int64_t> blob_host_offset;
  bool is_resident(int blob) const { return !blob_resident.empty() && blob_resident[size_t(blob)] == 1; }
  bool is_staged(int blob) const { return !blob_resident.empty() && blob_resident[size_t(blob)] == 2; }
  bool in_ring(int blob) const { return blob_resident.empty() || blob_resident[size_t(blob)] == 0; }
  int64_t host_store_bytes() const;          // bytes of the ring's blobs (the host store; staged ones apart)
  int staged_copies_ahead() const;           // staged units queued before a ring unit needed before their layer
  std::vector<TransferUnit> units;
  std::vector<int64_t> blob_pool_offset;     // per weight blob: its region in the pool
  std::vector<int> blob_last_unit;           // per weight blob: the unit whose completion makes it ready
  std::vector<std::vector<int>> unit_waits;  // per unit: layers that must finish before its copy starts
  std::vector<StreamAction> order;           // host enqueue order (every unit once, every layer once)
  int max_copies_ahead = 0;
  // The bytes the prefetch may copy ahead (SessionOptions::prefetch_limit_bytes: the window
  // a Runtime's joint plan gives the model, so that its prefetch ends with the previous
  // model's run and never queues ahead of that run's successor's input upload); -1: no limit.
  int64_t prefetch_limit_bytes = -1;
  // The next inference's leading units [0, tail_units) copied by this one, after its own
  // units, each once step tail_waits[u] of this inference has ended: the last step reading
  // the ring bytes the unit overwrites (tail_wait_steps). The next inference then copies
  // only the units from tail_units on. A single session's own ring only (placement pass
  // tail_pass, SessionOptions::tail_prefetch); 0: every inference copies all its units.
  int tail_units = 0;
  std::vector<int> tail_waits;
  // Units chosen by search_ring_units (unit_search.h) from kernel times rather than
  // cut into equal chunks. When a search ran (whether or not its cut was kept):
  // the simulated latency of the best searched cut (beside staged blobs: of the whole
  // plan with it, which can exceed the chunks'; the chunks are kept then) and of the
  // equal chunks.
  bool units_searched = false;
  double searched_ms = 0;  // 0: no search ran
  double chunks_ms = 0;
  std::vector<double> search_layer_ms;  // the kernel time of every step the search used (empty: none ran)
  int64_t streamed_bytes() const;            // bytes copied per inference (0 when resident), staged ones included
  int64_t ring_streamed_bytes() const;       // of those, the bytes through the pool (the ring's stream)
  // Prefetch across inferences: the leading units [0, n) that wait for no layer, and
  // within prefetch_limit_bytes when that is >= 0 (cut before the first unit that would
  // pass it). Once the previous inference has finished they can be copied at any moment
  // before the next one starts (nothing reads their pool bytes in between), e.g. while
  // another model computes; the next inference then copies only the units from n on.
  // 0 when resident.
  int prefetch_units() const { return prefetch_units_within(prefetch_limit_bytes); }
  // The same leading no-wait units cut at `limit_bytes` as well when that is >= 0 (the
  // tighter of it and prefetch_limit_bytes applies).
  int prefetch_units_within(int64_t limit_bytes) const;
  int64_t prefetch_bytes() const;            // bytes of those units
  int64_t tail_bytes() const;                // bytes of the tail units
  int64_t device_bytes() const { return pool_bytes + resident_bytes; }  // the weight budget used
  std::vector<int64_t> unit_ends() const;    // host offset where each ring unit ends (StreamOptions::unit_ends' form)
  std::string to_text() const;
  std::string tail_text() const;  // one line on the tail units (tail_units > 0)
};

// The host weight store's layout: blob b (plan.weights order) starts at offset[b];
// blobs are back to back.
std::vector<int64_t> blob_host_offsets(const ExecutionPlan& plan);

// True when pool bytes [a, a + an) and [b, b + bn) share a byte: offsets modulo `ring`
// (any offsets; a range of the ring's size or more overlaps everything), or plain addresses
// when ring <= 0 (slots). Empty ranges overlap nothing.
bool ring_overlap(int64_t a, int64_t an, int64_t b, int64_t bn, int64_t ring);

// The candidates for StreamPlan::tail_units of a ring plan: for each leading unit that
// waits for no step of its own inference and goes through the ring (not the arena), in
// order up to the first that does not, the last step of an inference that reads any of
// the ring bytes the unit covers (-1: none does). Empty for slots or a resident plan.
std::vector<int> tail_wait_steps(const ExecutionPlan& plan, const StreamPlan& s);
// Sets s->tail_units to n and s->tail_waits to the first n of tail_wait_steps.
// n outside [0, candidates]: an internal error.
Status set_tail_units(const ExecutionPlan& plan, StreamPlan* s, int n);

// The largest transfer unit a ring of `ring` bytes allows when the largest blob is
// `slot_bytes` (a larger unit could overwrite the blob it completes), 256-aligned, and
// at most `cap` where cap > 0 (StreamOptions::max_unit_bytes).
int64_t ring_max_unit(int64_t ring, int64_t slot_bytes, int64_t cap);

// The streamed blobs of a plan with resident ones, as a plan of their own: the same
// steps, `weights` reduced to the blobs not resident, each step's `weight`
// renumbered (-1 for a resident blob's layer). Only what plan_streaming, the unit
// search and simulate() read is kept (a step's params, inputs and views are
// dropped), so building one is cheap. plan_streaming and search_ring_units plan the
// sub-plan and expand the result back with expand_stream_plan.
struct StreamedSubplan {
  ExecutionPlan plan;
  std::vector<int> full_blob;  // sub blob index -> plan.weights index
};
StreamedSubplan streamed_subplan(const ExecutionPlan& plan, const std::vector<char>& resident);
// `sub` (planned over sp.plan) in the full plan's blob numbering, the resident blobs
// back to back (execution order) in their own region.
StreamPlan expand_stream_plan(StreamPlan sub, const ExecutionPlan& plan, const StreamedSubplan& sp,
                              const std::vector<char>& resident);

// Fails when the budget is smaller than the minimal pool (error names both sizes)
// or the options are invalid.
Expected<StreamPlan> plan_streaming(const ExecutionPlan& plan, const CopyProfile& profile,
                                    const StreamOptions& options);

// WeightBudget::parse then resolve against total/minimal ("--weight-budget" text
// straight to bytes); a percentage that rounds to zero bytes is an error.
Expected<int64_t> parse_weight_budget(const std::string& text, int64_t total_weight_bytes, int64_t minimal_bytes);

}  // namespace dlr
