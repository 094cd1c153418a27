// plan_streaming: groups, slots, transfer units, copy waits and the host enqueue
// order of a weight-streaming inference (stream_plan.h has the model,
// docs/streaming.md sections 1 and 2 the diagram and the reasoning). This file
// chooses the pool for the budget and plans the slots; stream_plan_units.cpp cuts
// units and orders the host's actions, stream_plan_apart.cpp handles resident and
// staged blobs. Plain C++.
#include "runtime/streaming/stream_plan.h"

#include "runtime/options.h"  // WeightBudget (parse_weight_budget)

#include <algorithm>
#include <limits>
#include <cstdio>

#include "runtime/streaming/stream_plan_detail.h"

namespace dlr {

using stream_detail::HostLayout;
using stream_detail::kAlign;
using stream_detail::mib_text;

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
// Upper bound of max_copies_ahead derived from a profile. A deep queue is not a reason
// to enqueue hundreds of copies before the layers that need them: lookahead is bounded
// by the pool anyway (a copy into a slot still waits for the slot's previous readers
// on the GPU), and a measured depth is a property of one driver version, so stay far
// below it.
constexpr int kMaxCopiesAheadCap = 256;
// How far the minimal ring may exceed two largest blobs (the minimal-mode bound is
// two largest transfer units + 1 MB).
constexpr int64_t kRingSlack = 1000000;

// Blob sizes (positive multiples of 256) and order (execution order, each referenced
// by its step).
Status check_blobs(const ExecutionPlan& plan) {
  for (int b = 0; b < int(plan.weights.size()); ++b) {
    const WeightBlob& w = plan.weights[size_t(b)];
    if (w.bytes <= 0 || w.bytes % kAlign != 0)
      return invalid_argument("weight blob " + std::to_string(b) + " (layer " + std::to_string(w.layer) + ") has " +
                              std::to_string(w.bytes) + " bytes; expected a positive multiple of 256");
    if (w.step < 0 || w.step >= int(plan.steps.size()) || plan.steps[size_t(w.step)].weight != b ||
        (b > 0 && w.step <= plan.weights[size_t(b) - 1].step))
      return invalid_argument("weight blob " + std::to_string(b) + " (layer " + std::to_string(w.layer) +
                              ") is not in execution order or not referenced by its step");
  }
  return Status();
}

// The blobs kept out of the ring by StreamOptions::resident and ::arena_offset.
struct BlobsApart {
  std::vector<char> resident, apart;  // apart: resident or staged
  int64_t resident_bytes = 0;
  int n_resident = 0;
  int n_staged = 0;
};

BlobsApart blobs_apart(const ExecutionPlan& plan, const StreamOptions& options, int n_staged) {
  const size_t n_blobs = plan.weights.size();
  BlobsApart a;
  a.n_staged = n_staged;
  a.resident.assign(n_blobs, 0);
  a.apart.assign(n_blobs, 0);
  for (size_t b = 0; b < n_blobs; ++b) {
    if (!options.resident.empty() && options.resident[b]) {
      a.resident_bytes += plan.weights[b].bytes;
      ++a.n_resident;
      a.resident[b] = a.apart[b] = 1;
    }
    if (n_staged > 0 && options.arena_offset[b] >= 0) a.apart[b] = 1;
  }
  return a;
}

// The plan of blobs some of which are apart: the ring planned over the others (a
// sub-plan in a budget less the resident bytes), expanded back, the staged ones added.
Expected<StreamPlan> plan_around(const ExecutionPlan& plan, const CopyProfile& profile, const StreamOptions& options,
                                 const BlobsApart& a) {
  const int n_staged = a.n_staged;
  if (a.n_resident + n_staged == int(plan.weights.size()))
    return invalid_argument(n_staged > 0 ? "resident and staged blobs leave none for the ring"
                                         : "resident set holds every blob: use a budget of all the weights");
  if (n_staged > 0 && (options.layout == PoolLayout::kSlots || options.ring_granularity <= 0))
    return invalid_argument("blobs staged in the arena need the ring pool");
  if (options.layout == PoolLayout::kSlots)
    return invalid_argument("resident blobs need the ring pool (the slots pool streams every blob)");
  if (options.ring_granularity <= 0)
    return invalid_argument("resident blobs need the ring pool, which needs CUDA virtual memory management");
  if (options.budget_bytes != 0 && options.budget_bytes <= a.resident_bytes)
    return out_of_memory("weight budget " + mib_text(options.budget_bytes) + " MiB leaves no pool beside " +
                         mib_text(a.resident_bytes) + " MiB of resident weights");
  const StreamedSubplan sp = streamed_subplan(plan, a.apart);
  StreamOptions so = options;
  so.resident.clear();
  so.arena_offset.clear();
  so.arena_wait.clear();
  so.arena_early.clear();
  so.arena_joined.clear();
  so.layout = PoolLayout::kRing;
  so.budget_bytes = options.budget_bytes == 0 ? 0 : options.budget_bytes - a.resident_bytes;
  DLR_ASSIGN_OR_RETURN(StreamPlan sub, plan_streaming(sp.plan, profile, so));
  if (sub.resident && n_staged > 0) return invalid_argument("blobs staged in the arena need a plan that streams");
  StreamPlan s = expand_stream_plan(std::move(sub), plan, sp, a.resident);
  if (a.n_resident == 0) s.blob_resident.assign(plan.weights.size(), 0);
  if (n_staged > 0) {
    stream_detail::add_staged(plan, options, &s);
    DLR_RETURN_IF_ERROR(stream_detail::check_queueable(profile, s));
  }
  return s;
}

// What plan_streaming chose for the budget. The two layouts' minimal pools
// (stream_plan.h). Slots: two of the largest blob. Ring: the largest multiple of the
// mapping granularity within two largest blobs + 1 MB (a ring a little under 2 x the
// largest blob still double-buffers all but the last bytes of two consecutive largest
// blobs), or two blobs rounded up where the granularity is coarse compared with the
// blobs.
struct PoolChoice {
  int64_t gran = 0;       // StreamOptions::ring_granularity; 0: no ring
  int64_t slots_min = 0;  // the minimal pools (bytes)
  int64_t ring_min = 0;
  int64_t budget = 0;     // the budget, the minimal one for budget 0
  int64_t ring = 0;       // the ring a budget gives (a multiple of gran)
  bool streams = false;   // false: resident
  bool use_ring = false;  // when streaming: the ring, else slots
  int64_t minimal = 0;    // StreamPlan::minimal_pool_bytes
};

// Chooses the layout for options.budget_bytes (stream_plan.h); an error when the
// budget is below the chosen layout's minimum. `largest`: the largest blob.
Expected<PoolChoice> choose_pool(const ExecutionPlan& plan, const StreamOptions& options, const HostLayout& h,
                                 int64_t slot_bytes, int largest) {
  PoolChoice p;
  p.gran = options.ring_granularity;
  const int64_t gran = p.gran;
  if (gran < 0 || (gran > 0 && gran % kAlign != 0))
    return invalid_argument("ring granularity " + std::to_string(gran) + " bytes must be a multiple of 256");
  p.slots_min = 2 * slot_bytes;
  if (gran > 0) {
    p.ring_min = (p.slots_min + kRingSlack) / gran * gran;
    if (p.ring_min < slot_bytes + slot_bytes / 2) p.ring_min = align_up(p.slots_min, gran);
  }
  if (options.layout == PoolLayout::kRing && gran == 0)
    return invalid_argument("the ring weight pool needs CUDA virtual memory management, which this device does not "
                            "support; use the slots pool");
  // Minimal (budget 0): the ring where it is available and within the minimal-mode
  // bound (slots minimum + 1 MB), slots otherwise.
  const bool ring_for_min = options.layout == PoolLayout::kRing ||
                            (options.layout == PoolLayout::kAuto && gran > 0 && p.ring_min <= p.slots_min + kRingSlack);
  p.budget = options.budget_bytes != 0 ? options.budget_bytes : (ring_for_min ? p.ring_min : p.slots_min);
  p.ring = gran > 0 ? p.budget / gran * gran : 0;
  // A ring that holds every blob overwrites nothing within an inference: it needs no
  // double buffering (never_resident only; otherwise such a budget is resident).
  const bool ring_fits = gran > 0 && (p.ring >= p.ring_min || (options.never_resident && p.ring >= h.total));
  const bool slots_fit = p.budget >= p.slots_min;
  if (options.never_resident && (gran == 0 || options.layout == PoolLayout::kSlots))
    return invalid_argument("never resident: streaming through a ring that holds every blob needs the ring pool");
  // A budget holding every blob is resident whatever the layout (unless never_resident).
  p.streams = p.budget < h.total || options.never_resident;
  p.use_ring = p.streams && (options.layout == PoolLayout::kRing || options.never_resident ||
                             (options.layout == PoolLayout::kAuto && ring_fits));
  if (p.streams && !(p.use_ring ? ring_fits : slots_fit)) {
    // Name the minimum that applies: the chosen layout's, or for auto the smaller one.
    const bool name_ring = p.use_ring || (options.layout == PoolLayout::kAuto && gran > 0 && p.ring_min < p.slots_min);
    const int64_t need = name_ring ? p.ring_min : p.slots_min;
    const std::string what = name_ring
                                 ? "a ring of two of the largest layer in " + mib_text(gran) + " MiB mapping units"
                                 : "two slots of the largest layer";
    int decimals = 2;  // more digits when 2 would print the same number twice
    if (mib_text(p.budget) == mib_text(need)) decimals = 7;
    return out_of_memory("weight budget " + mib_text(p.budget, decimals) + " MiB is below the minimum of " +
                         mib_text(need, decimals) + " MiB (" + what + ", " + mib_text(slot_bytes) + " MiB, layer " +
                         std::to_string(plan.weights[size_t(largest)].layer) +
                         "); a smaller slot_bytes runs the largest layers in slices");
  }
  p.minimal = (p.streams ? p.use_ring : ring_for_min) ? p.ring_min : p.slots_min;
  return p;
}

// max_copies_ahead: what the queue allows for the unit size with the smallest depth,
// minus one for safety (driver slack; the copy stream also carries the event records
// and waits), at least 1, at most kMaxCopiesAheadCap; options.max_copies_ahead when set.
int copies_ahead(const StreamOptions& options, const CopyProfile& profile, const StreamPlan& s) {
  if (options.max_copies_ahead > 0) return options.max_copies_ahead;
  if (s.units.empty()) return 1;
  int depth = kMaxCopiesAheadCap + 1;
  for (const TransferUnit& u : s.units) depth = std::min(depth, profile.queue_depth(u.bytes));
  return std::max(1, std::min(kMaxCopiesAheadCap, depth - 1));
}

// Resident: every blob at its host offset, copied once at open in chunks.
void plan_resident(const ExecutionPlan& plan, const HostLayout& h, int64_t chunk, int64_t min_unit, StreamPlan* s) {
  const int n_blobs = int(plan.weights.size());
  s->resident = true;
  s->pool_bytes = h.total;
  s->slots = 0;
  if (n_blobs > 0) stream_detail::cut_units(h, 0, n_blobs - 1, 0, chunk, chunk, min_unit, &s->units);
  for (TransferUnit& u : s->units) {
    u.pool_offset = u.host_offset;
    u.first_layer = plan.weights[size_t(u.first_blob)].step;
  }
  s->blob_pool_offset = h.offset;
  s->blob_last_unit.assign(size_t(n_blobs), 0);
  for (const TransferUnit& u : s->units)
    for (int b = u.first_blob; b <= u.last_blob; ++b) s->blob_last_unit[size_t(b)] = u.index;
  s->unit_waits.assign(s->units.size(), {});
  for (size_t l = 0; l < plan.steps.size(); ++l) s->order.push_back({StreamAction::Kind::kLayer, int(l)});
}

// StreamOptions::unit_ends: increasing multiples of 256, each unit within what a ring
// of `ring` bytes allows, the last at the end of the weights.
Status check_unit_ends(const std::vector<int64_t>& unit_ends, int64_t ring, int64_t slot_bytes, int64_t cap,
                       int64_t total) {
  const int64_t max_unit = ring_max_unit(ring, slot_bytes, cap);
  int64_t prev = 0;
  for (size_t i = 0; i < unit_ends.size(); ++i) {
    const int64_t e = unit_ends[i];
    // Built on failure only: the unit search checks thousands of candidate cuts.
    const auto where = [&] { return "transfer unit " + std::to_string(i) + " ends at byte " + std::to_string(e); };
    if (e <= prev || e % kAlign != 0)
      return invalid_argument(where() + "; expected increasing multiples of 256 after " + std::to_string(prev));
    if (e - prev > max_unit)
      return invalid_argument(where() + ": " + std::to_string(e - prev) + " bytes, more than the " +
                              std::to_string(max_unit) + " a ring of " + mib_text(ring) + " MiB allows");
    prev = e;
  }
  if (prev != total)
    return invalid_argument("transfer units end at byte " + std::to_string(prev) + "; expected the last at " +
                            std::to_string(total) + " (all weight bytes)");
  return Status();
}

// Streaming through K = budget / slot_bytes slots: groups packed greedily up to one
// slot, group g in slot g % K; fills groups, units, offsets and waits (not the order).
void plan_slots(const ExecutionPlan& plan, const HostLayout& h, int64_t budget, int64_t chunk, int64_t min_unit,
                StreamPlan* s) {
  const int n_blobs = int(plan.weights.size());
  DLR_ASSERT(s->slot_bytes > 0);
  const int64_t k64 = budget / s->slot_bytes;
  DLR_ASSERT(k64 >= 2);
  for (int b = 0; b < n_blobs;) {
    WeightGroup g;
    g.first_blob = b;
    g.host_offset = h.offset[size_t(b)];
    int last = b;
    while (last + 1 < n_blobs && h.end[size_t(last) + 1] - g.host_offset <= s->slot_bytes) ++last;
    g.last_blob = last;
    g.bytes = h.end[size_t(last)] - g.host_offset;
    g.last_layer = plan.weights[size_t(last)].step;  // blobs are in execution order
    s->groups.push_back(g);
    b = last + 1;
  }
  // Every group fits a slot, so K >= groups would hold everything: that is the resident case.
  DLR_ASSERT(k64 < int64_t(s->groups.size()));
  s->slots = int(k64);
  s->pool_bytes = k64 * s->slot_bytes;
  s->blob_pool_offset.assign(size_t(n_blobs), 0);
  s->blob_last_unit.assign(size_t(n_blobs), -1);
  for (size_t gi = 0; gi < s->groups.size(); ++gi) {
    WeightGroup& g = s->groups[gi];
    g.slot = int(gi % size_t(s->slots));
    const int64_t slot_base = int64_t(g.slot) * s->slot_bytes;
    const size_t first_unit = s->units.size();
    // The inference's first copy overlaps nothing (every layer waits for it), so it is
    // kept to min_unit bytes; every other unit may be a full chunk.
    const int64_t first_chunk = gi == 0 && min_unit > 0 ? std::max(kAlign, std::min(chunk, min_unit) / kAlign * kAlign)
                                                        : chunk;
    stream_detail::cut_units(h, g.first_blob, g.last_blob, int(gi), chunk, first_chunk, min_unit, &s->units);
    for (size_t u = first_unit; u < s->units.size(); ++u) {
      TransferUnit& tu = s->units[u];
      tu.index = int(u);
      tu.pool_offset = slot_base + (tu.host_offset - g.host_offset);
      tu.first_layer = plan.weights[size_t(tu.first_blob)].step;
      // The previous occupant of this slot is group gi - K. Waiting for its LAST reader
      // is enough: layers run in order on one compute stream, so when that layer has
      // finished every earlier reader of the slot has too.
      if (gi >= size_t(s->slots)) {
        s->unit_waits.push_back({s->groups[gi - size_t(s->slots)].last_layer});
      } else {
        s->unit_waits.push_back({});
      }
      for (int b = tu.first_blob; b <= tu.last_blob; ++b) s->blob_last_unit[size_t(b)] = int(u);
    }
    for (int b = g.first_blob; b <= g.last_blob; ++b)
      s->blob_pool_offset[size_t(b)] = slot_base + (h.offset[size_t(b)] - g.host_offset);
  }
}

}  // namespace

std::string stream_detail::mib_text(int64_t b, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, double(b) / double(kMiB));
  return buf;
}

Expected<StreamPlan> plan_streaming(const ExecutionPlan& plan, const CopyProfile& profile,
                                    const StreamOptions& options) {
  bool whole_added = false;
  const StreamOptions with_whole = stream_detail::with_whole_staged(plan, options, &whole_added);
  if (whole_added) return plan_streaming(plan, profile, with_whole);
  const int n_blobs = int(plan.weights.size());
  DLR_RETURN_IF_ERROR(check_blobs(plan));
  if (options.budget_bytes < 0)
    return invalid_argument("weight budget " + std::to_string(options.budget_bytes) + " bytes is negative");
  int n_staged = 0;
  DLR_RETURN_IF_ERROR(stream_detail::check_staged(plan, options, &n_staged));
  if (!options.resident.empty() || n_staged > 0) {
    if (!options.resident.empty() && options.resident.size() != size_t(n_blobs))
      return invalid_argument("resident set has " + std::to_string(options.resident.size()) + " entries; expected " +
                              std::to_string(n_blobs) + " (one per weight blob)");
    const BlobsApart apart = blobs_apart(plan, options, n_staged);
    if (apart.n_resident + n_staged > 0) return plan_around(plan, profile, options, apart);
  }
  const int64_t chunk = options.chunk_bytes > 0 ? options.chunk_bytes : profile.chunk_bytes;
  const int64_t min_unit = options.min_unit_bytes > 0 ? options.min_unit_bytes : profile.min_unit_bytes;
  if (options.chunk_bytes < 0 || chunk <= 0 || chunk % kAlign != 0)
    return invalid_argument("copy chunk size " + std::to_string(chunk) + " bytes must be a positive multiple of 256");
  if (options.min_unit_bytes < 0 || min_unit < 0)
    return invalid_argument("minimum copy unit " + std::to_string(min_unit) + " bytes is negative");
  if (options.max_copies_ahead < 0)
    return invalid_argument("max copies ahead " + std::to_string(options.max_copies_ahead) + " is negative");

  const HostLayout h = stream_detail::host_layout(plan);
  StreamPlan s;
  s.total_weight_bytes = h.total;
  s.blob_host_offset = h.offset;
  int largest = -1;
  for (int b = 0; b < n_blobs; ++b)
    if (largest < 0 || plan.weights[size_t(b)].bytes > plan.weights[size_t(largest)].bytes) largest = b;
  s.slot_bytes = largest < 0 ? 0 : align_up(plan.weights[size_t(largest)].bytes, kAlign);
  DLR_ASSIGN_OR_RETURN(const PoolChoice pool, choose_pool(plan, options, h, s.slot_bytes, largest));
  s.minimal_pool_bytes = pool.minimal;
  if (!pool.streams) {
    plan_resident(plan, h, chunk, min_unit, &s);
    s.max_copies_ahead = copies_ahead(options, profile, s);
    return s;
  }
  if (!options.unit_ends.empty()) {
    if (!pool.use_ring) return invalid_argument("explicit transfer unit boundaries apply to the ring pool only");
    DLR_RETURN_IF_ERROR(check_unit_ends(options.unit_ends, pool.ring, s.slot_bytes, options.max_unit_bytes, h.total));
  }
  if (pool.use_ring) {
    const int64_t unit_chunk =
        options.chunk_bytes > 0 ? chunk : stream_detail::ring_chunk(chunk, min_unit, pool.ring);
    stream_detail::plan_ring(plan, h, pool.ring, unit_chunk, min_unit, options.max_unit_bytes, options.unit_ends, &s);
  } else {
    plan_slots(plan, h, pool.budget, chunk, min_unit, &s);
  }
  DLR_RETURN_IF_ERROR(stream_detail::check_queueable(profile, s));
  s.max_copies_ahead = copies_ahead(options, profile, s);
  s.order = stream_detail::host_order(plan, s);
  return s;
}

// A unit starting inside blob B must end within B's start + ring: otherwise it would
// overwrite bytes of B itself and wait for B's reader, which waits for it. Units of at
// most ring - slot_bytes bytes never do (they start less than slot_bytes into B).
int64_t ring_max_unit(int64_t ring, int64_t slot_bytes, int64_t cap) {
  const int64_t ring_limit = (ring - slot_bytes) / kAlign * kAlign;
  return cap > 0 ? std::min(ring_limit, std::max(kAlign, cap / kAlign * kAlign)) : ring_limit;
}

std::vector<int64_t> blob_host_offsets(const ExecutionPlan& plan) {
  std::vector<int64_t> offset;
  int64_t pos = 0;
  for (const WeightBlob& w : plan.weights) {
    offset.push_back(pos);
    pos += w.bytes;
  }
  return offset;
}

int64_t StreamPlan::host_store_bytes() const { return total_weight_bytes - resident_bytes - staged_bytes; }

int StreamPlan::staged_copies_ahead() const {
  int ahead = 0;
  int first_ring_after = std::numeric_limits<int>::max();  // the smallest layer of a ring unit later in the queue
  for (size_t i = units.size(); i-- > 0;) {
    const TransferUnit& u = units[i];
    if (!u.in_arena) first_ring_after = std::min(first_ring_after, u.first_layer);
    else if (first_ring_after < u.first_layer) ++ahead;
  }
  return ahead;
}

int64_t StreamPlan::ring_streamed_bytes() const {
  if (resident) return 0;
  int64_t total = 0;
  for (const TransferUnit& u : units)
    if (!u.in_arena) total += u.bytes;
  return total;
}

int StreamPlan::prefetch_units_within(int64_t limit_bytes) const {
  if (resident) return 0;
  const auto within = [](int64_t bytes, int64_t limit) { return limit < 0 || bytes <= limit; };
  int n = 0;
  int64_t bytes = 0;
  while (n < int(units.size()) && size_t(n) < unit_waits.size() && unit_waits[size_t(n)].empty() &&
         within(bytes + units[size_t(n)].bytes, prefetch_limit_bytes) && within(bytes + units[size_t(n)].bytes, limit_bytes))
    bytes += units[size_t(n++)].bytes;
  return n;
}

int64_t StreamPlan::prefetch_bytes() const {
  int64_t b = 0;
  for (int u = 0; u < prefetch_units(); ++u) b += units[size_t(u)].bytes;
  return b;
}

int64_t StreamPlan::streamed_bytes() const {
  if (resident) return 0;
  int64_t total = 0;
  for (const TransferUnit& u : units) total += u.bytes;
  return total;
}

std::vector<int64_t> StreamPlan::unit_ends() const {
  std::vector<int64_t> ends;
  for (const TransferUnit& u : units)
    if (!u.in_arena) ends.push_back(u.host_offset + u.bytes);  // the ring's stream (staged units apart)
  return ends;
}

std::string StreamPlan::to_text() const {
  std::string out;
  char line[256];
  if (resident) {
    std::snprintf(line, sizeof(line),
                  "stream plan: resident, %s MiB pool holds all %zu blobs (%s MiB), %zu copies at open, "
                  "0 copies per inference\n",
                  mib_text(pool_bytes).c_str(), blob_pool_offset.size(), mib_text(total_weight_bytes).c_str(),
                  units.size());
    out += line;
  } else if (layout == PoolLayout::kRing) {
    std::snprintf(line, sizeof(line),
                  "stream plan: ring of %s MiB mapped twice (minimal %s MiB), %s MiB streamed of %s MiB, "
                  "%zu copies per inference, up to %d copies ahead\n",
                  mib_text(pool_bytes).c_str(), mib_text(minimal_pool_bytes).c_str(), mib_text(streamed_bytes()).c_str(),
                  mib_text(total_weight_bytes).c_str(), units.size(), max_copies_ahead);
    out += line;
    if (staged_bytes > 0) {
      std::snprintf(line, sizeof(line), "staged in the activation arena: %s MiB (copied there, not through the ring)\n",
                    mib_text(staged_bytes).c_str());
      out += line;
    }
    if (tail_units > 0) out += tail_text();
    if (searched_ms > 0) {
      std::snprintf(line, sizeof(line),
                    "units %s: searched cut %.3f ms predicted from measured kernel times, equal chunks %.3f ms\n",
                    units_searched ? "chosen by simulation" : "in equal chunks (the search gained < 1 %)",
                    searched_ms, chunks_ms);
      out += line;
    }
  } else {
    std::snprintf(line, sizeof(line),
                  "stream plan: %d slots x %s MiB = %s MiB pool (minimal %s MiB), %s MiB streamed of %s MiB, "
                  "%zu groups, %zu copies per inference, up to %d copies ahead\n",
                  slots, mib_text(slot_bytes).c_str(), mib_text(pool_bytes).c_str(),
                  mib_text(minimal_pool_bytes).c_str(), mib_text(streamed_bytes()).c_str(),
                  mib_text(total_weight_bytes).c_str(), groups.size(), units.size(), max_copies_ahead);
    out += line;
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    const WeightGroup& gr = groups[g];
    std::snprintf(line, sizeof(line), "group %3zu: slot %2d, blobs %3d-%3d, host %11lld + %9lld (%7s MiB), last layer %d\n",
                  g, gr.slot, gr.first_blob, gr.last_blob, (long long)gr.host_offset, (long long)gr.bytes,
                  mib_text(gr.bytes).c_str(), gr.last_layer);
    out += line;
  }
  for (const TransferUnit& u : units) {
    std::string waits;
    const std::vector<int> none;
    const std::vector<int>& w = size_t(u.index) < unit_waits.size() ? unit_waits[size_t(u.index)] : none;
    for (int layer : w) waits += (waits.empty() ? "" : ",") + std::to_string(layer);
    char where[24] = "ring";  // ring units belong to no group
    if (u.in_arena) std::snprintf(where, sizeof(where), "arena");
    else if (layout != PoolLayout::kRing) std::snprintf(where, sizeof(where), "group %3d", u.group);
    std::snprintf(line, sizeof(line),
                  "unit %4d: %s, host %11lld + %9lld (%7s MiB) -> pool %11lld, blobs %3d-%3d, first layer %3d, "
                  "waits %s\n",
                  u.index, where, (long long)u.host_offset, (long long)u.bytes, mib_text(u.bytes).c_str(),
                  (long long)u.pool_offset, u.first_blob, u.last_blob, u.first_layer,
                  waits.empty() ? "-" : waits.c_str());
    out += line;
  }
  return out;
}

int64_t StreamPlan::tail_bytes() const {
  int64_t bytes = 0;
  for (int u = 0; u < tail_units && size_t(u) < units.size(); ++u) bytes += units[size_t(u)].bytes;
  return bytes;
}

bool ring_overlap(int64_t a, int64_t an, int64_t b, int64_t bn, int64_t ring) {
  if (an <= 0 || bn <= 0) return false;
  if (ring <= 0) return a < b + bn && b < a + an;
  if (an >= ring || bn >= ring) return true;
  auto mod = [ring](int64_t x) { return ((x % ring) + ring) % ring; };
  return mod(b - a) < an || mod(a - b) < bn;
}

std::string StreamPlan::tail_text() const {
  const int64_t bytes = tail_bytes();
  std::string waits;
  for (int w : tail_waits) waits += (waits.empty() ? "" : ",") + std::to_string(w);
  return "tail: the next inference's units 0-" + std::to_string(tail_units - 1) + " (" + mib_text(bytes) +
         " MiB) copied after this one's, waiting for steps " + waits + "\n";
}

// ---- parse_weight_budget ----------------------------------------------------

Expected<int64_t> parse_weight_budget(const std::string& text, int64_t total_weight_bytes, int64_t minimal_bytes) {
  DLR_ASSIGN_OR_RETURN(WeightBudget b, WeightBudget::parse(text));
  const int64_t bytes = b.resolve(total_weight_bytes, minimal_bytes);
  if (b.kind == WeightBudget::Kind::kFraction && bytes < 1)
    return invalid_argument("weight budget \"" + text + "\": rounds to zero bytes");
  return bytes;
}

}  // namespace dlr
