// plan_streaming: groups, slots, transfer units, copy waits and the host enqueue
// order of a weight-streaming inference (stream_plan.h has the model,
// docs/streaming.md the diagram and the reasoning). Plain C++.
#include "runtime/streaming/stream_plan.h"

#include "runtime/options.h"  // WeightBudget (parse_weight_budget)

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace dlr {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int64_t kAlign = 256;
// Upper bound of max_copies_ahead derived from a profile. A deep queue (~1020 on the
// H100 machine) is not a reason to enqueue a thousand copies before the layers that
// need them: lookahead is bounded by the K slots anyway (a copy into a slot still
// waits for the slot's previous readers on the GPU), and a measured depth is a
// property of one driver version, so stay far below it.
constexpr int kMaxCopiesAheadCap = 256;
// Copies beyond what the next layer needs that the host enqueues between two layer
// launches. Each copy call costs host time (~2 us) and delays the next launch; where
// the GPU runs ahead of the host (tiny layers) a burst of far-ahead copies (e.g. all K
// groups' units after the first launch) would idle the GPU. The host is otherwise far
// ahead of both engines, so a trickle of 2 per launch keeps the copy queue fed.
constexpr int kAheadPerLaunch = 2;
// How far the minimal ring may exceed two largest blobs (the minimal-mode bound is
// two largest transfer units + 1 MB).
constexpr int64_t kRingSlack = 1000000;

double mib(int64_t b) { return double(b) / double(kMiB); }

std::string mib_text(int64_t b, int decimals = 2) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, mib(b));
  return buf;
}

// The byte ranges of the host store: blob b is [offset[b], offset[b] + bytes[b]).
struct HostLayout {
  std::vector<int64_t> offset;
  std::vector<int64_t> end;
  int64_t total = 0;
};

HostLayout host_layout(const ExecutionPlan& plan) {
  HostLayout h;
  h.offset = blob_host_offsets(plan);
  for (size_t b = 0; b < plan.weights.size(); ++b) h.end.push_back(h.offset[b] + plan.weights[b].bytes);
  h.total = h.end.empty() ? 0 : h.end.back();
  return h;
}

// Appends the unit of host bytes [pos, cut) to `out` (index, group, host range and
// blob range filled; pool_offset and first_layer are left to the caller). *b is the
// blob holding byte pos on entry and the blob holding byte cut on return.
void append_unit(const HostLayout& h, int group, int64_t pos, int64_t cut, int* b, std::vector<TransferUnit>* out) {
  TransferUnit u;
  u.index = int(out->size());
  u.group = group;
  u.host_offset = pos;
  u.bytes = cut - pos;
  u.first_blob = *b;
  int last = *b;
  while (h.end[size_t(last)] < cut) ++last;
  u.last_blob = last;
  out->push_back(u);
  *b = h.end[size_t(last)] == cut ? last + 1 : last;
}

// Cuts the host byte range of whole blobs [first_blob, last_blob] into units and
// appends them to `out` (see append_unit).
// Rule: a unit normally ends `chunk` bytes after its start (`first_chunk` for the first
// unit of the range); when a blob boundary lies in the last quarter of that chunk (and
// the unit keeps at least min_unit bytes), the unit ends at the last such boundary
// instead, so the blob ending there is ready one copy earlier and the next unit starts
// at a blob start.
void cut_units(const HostLayout& h, int first_blob, int last_blob, int group, int64_t chunk, int64_t first_chunk,
               int64_t min_unit, std::vector<TransferUnit>* out) {
  const int64_t begin = h.offset[size_t(first_blob)];
  const int64_t end = h.end[size_t(last_blob)];
  int64_t pos = begin;
  int b = first_blob;  // the blob holding byte `pos`
  while (pos < end) {
    const int64_t c = pos == begin ? first_chunk : chunk;
    const int64_t earliest_cut = std::max(c - c / 4, std::min(min_unit, c));
    const int64_t limit = std::min(pos + c, end);
    int64_t cut = limit;
    if (limit < end) {
      for (int k = b; k <= last_blob && h.end[size_t(k)] <= limit; ++k)
        if (h.end[size_t(k)] >= pos + earliest_cut) cut = h.end[size_t(k)];
    }
    append_unit(h, group, pos, cut, &b, out);
    pos = cut;
  }
}

// Largest copy size X such that every copy of <= X bytes can be queued (depth > 0);
// 0 when even the smallest class cannot.
int64_t largest_queueable_bytes(const CopyProfile& profile) {
  int64_t x = 0;
  for (const QueueClass& q : profile.queue) {
    if (q.depth <= 0) break;
    x = q.max_bytes;
  }
  return x;
}

// The host enqueue order (see stream_plan.h and docs/streaming.md):
//  - before launching layer L, every unit that L needs (units up to need(L), since a
//    layer waits for the unit holding its blob's last byte and the copy stream is
//    FIFO) is enqueued; their waits are always on layers before L (asserted);
//  - right after launching L, further units are enqueued in unit order while their
//    waits are on layers <= L and they stay within max_copies_ahead units beyond
//    what the next layer needs, at most kAheadPerLaunch of them per launch gap.
// This is the rule "before launching L+1, enqueue what is ready up to need(L+1) +
// max_copies_ahead", except that the first launch is not preceded by ahead copies
// and ahead copies trickle instead of coming in bursts, so a far-ahead copy call
// rarely delays a launch. A copy is never enqueued before a layer it waits on
// (cudaStreamWaitEvent on an event that was not recorded yet would be a no-op).
std::vector<StreamAction> host_order(const ExecutionPlan& plan, const StreamPlan& s) {
  const int n_steps = int(plan.steps.size());
  const int n_units = int(s.units.size());
  // need[L]: the highest unit a layer <= L waits for (-1: none).
  std::vector<int> need(size_t(n_steps), -1);
  int running = -1;
  for (int l = 0; l < n_steps; ++l) {
    const int w = plan.steps[size_t(l)].weight;
    if (w >= 0) running = std::max(running, s.blob_last_unit[size_t(w)]);
    need[size_t(l)] = running;
  }
  auto ready = [&](int u, int last_launched) {
    for (int layer : s.unit_waits[size_t(u)])
      if (layer > last_launched) return false;
    return true;
  };
  std::vector<StreamAction> order;
  order.reserve(size_t(n_steps + n_units));
  int next = 0;
  for (int l = 0; l < n_steps; ++l) {
    while (next <= need[size_t(l)]) {
      DLR_ASSERT(ready(next, l - 1));
      order.push_back({StreamAction::Kind::kCopy, next++});
    }
    order.push_back({StreamAction::Kind::kLayer, l});
    if (l + 1 < n_steps) {
      const int needed = need[size_t(l + 1)];
      const int64_t limit = int64_t(needed) + s.max_copies_ahead;
      int ahead_here = 0;
      while (next < n_units && next <= limit && ready(next, l)) {
        if (next > needed) {
          if (ahead_here == kAheadPerLaunch) break;
          ++ahead_here;
        }
        order.push_back({StreamAction::Kind::kCopy, next++});
      }
    }
  }
  DLR_ASSERT(next == n_units);
  return order;
}

// Every unit must be queueable: a depth-0 size class blocks the host inside the call
// until the copy queue drains, which would serialise copies and launches.
Status check_queueable(const CopyProfile& profile, const StreamPlan& s) {
  for (const TransferUnit& u : s.units) {
    if (profile.queue_depth(u.bytes) > 0) continue;
    const int64_t fit = largest_queueable_bytes(profile) / kAlign * kAlign;
    if (fit <= 0)
      return invalid_argument("copy profile '" + profile.name + "' cannot queue copies of any size; weights cannot "
                              "be streamed with it");
    return invalid_argument("copy profile '" + profile.name + "' cannot queue copies of " + mib_text(u.bytes) +
                            " MiB (unit " + std::to_string(u.index) + "); use a chunk size of at most " +
                            std::to_string(fit) + " bytes (" + mib_text(fit) + " MiB)");
  }
  return Status();
}

// The profile's chunk for a ring of `ring` bytes, at most ring / 8 (at least min_unit):
// a unit's copy waits until its whole byte range is free, so in a small ring large
// units hold copies back (simulated on yolov4 fp16 at 18 MiB: 3.18 ms with 8 MiB units,
// 2.98 ms with 4 MiB); in a large ring the profile's efficient size is kept.
int64_t ring_chunk(int64_t chunk, int64_t min_unit, int64_t ring) {
  const int64_t eighth = std::max(min_unit, ring / 8) / kAlign * kAlign;
  return std::max(kAlign, std::min(chunk, eighth));
}

// The ring layout (stream_plan.h): host byte x at ring offset x % ring. Units are the
// whole byte stream cut into chunks (the first one min_unit); a unit covering host
// bytes [a, a + n) overwrites what bytes [a - ring, a + n - ring) held, so its copy
// waits for the reader of byte a + n - 1 - ring (readers run in order, so the last
// one covers every earlier byte).
// Units ending at `ends` (validated by the caller) over the whole byte stream.
void units_from_ends(const HostLayout& h, const std::vector<int64_t>& ends, std::vector<TransferUnit>* out) {
  int64_t pos = 0;
  int b = 0;  // the blob holding byte `pos`
  for (int64_t cut : ends) {
    append_unit(h, -1, pos, cut, &b, out);
    pos = cut;
  }
}

void plan_ring(const ExecutionPlan& plan, const HostLayout& h, int64_t ring, int64_t chunk, int64_t min_unit,
               const std::vector<int64_t>& unit_ends, StreamPlan* s) {
  const int n_blobs = int(plan.weights.size());
  DLR_ASSERT(n_blobs > 0 && ring >= s->slot_bytes);  // ring >= total: StreamOptions::never_resident
  s->layout = PoolLayout::kRing;
  s->pool_bytes = ring;
  s->slots = 0;
  if (!unit_ends.empty()) {
    units_from_ends(h, unit_ends, &s->units);
  } else {
    chunk = std::max(kAlign, std::min(chunk, ring_max_unit(ring, s->slot_bytes)));
    const int64_t first_chunk = min_unit > 0 ? std::max(kAlign, std::min(chunk, min_unit) / kAlign * kAlign) : chunk;
    cut_units(h, 0, n_blobs - 1, -1, chunk, first_chunk, min_unit, &s->units);
  }
  s->blob_pool_offset.assign(size_t(n_blobs), 0);
  s->blob_last_unit.assign(size_t(n_blobs), -1);
  for (int b = 0; b < n_blobs; ++b) s->blob_pool_offset[size_t(b)] = h.offset[size_t(b)] % ring;
  int reader_blob = 0;  // the blob holding byte (unit end - 1 - ring); monotone over units
  for (TransferUnit& u : s->units) {
    u.pool_offset = u.host_offset % ring;
    u.first_layer = plan.weights[size_t(u.first_blob)].layer;
    const int64_t overwritten_end = u.host_offset + u.bytes - ring;  // bytes [.., overwritten_end) held before
    if (overwritten_end > 0) {
      while (h.end[size_t(reader_blob)] < overwritten_end) ++reader_blob;
      s->unit_waits.push_back({plan.weights[size_t(reader_blob)].layer});
    } else {
      s->unit_waits.push_back({});
    }
    for (int b = u.first_blob; b <= u.last_blob; ++b) s->blob_last_unit[size_t(b)] = u.index;
  }
}

}  // namespace


StreamedSubplan streamed_subplan(const ExecutionPlan& plan, const std::vector<char>& resident) {
  StreamedSubplan sp;
  sp.plan.options = plan.options;
  sp.plan.steps.resize(plan.steps.size());
  std::vector<int> sub_of(plan.weights.size(), -1);
  for (size_t b = 0; b < plan.weights.size(); ++b) {
    if (resident[b]) continue;
    sub_of[b] = int(sp.plan.weights.size());
    sp.plan.weights.push_back(plan.weights[b]);
    sp.full_blob.push_back(int(b));
  }
  for (size_t l = 0; l < plan.steps.size(); ++l) {
    const Step& st = plan.steps[l];
    Step& t = sp.plan.steps[l];
    t.layer = st.layer;
    t.kind = st.kind;
    t.no_op = st.no_op;
    if (!st.copies.empty()) t.copies.push_back(st.copies.front());  // simulate() asks only whether there are any
    t.weight = st.weight >= 0 ? sub_of[size_t(st.weight)] : -1;
  }
  return sp;
}

// `sub` (planned over the streamed blobs of `sp`) in the full plan's blob numbering,
// with the resident blobs back to back in their own region.
StreamPlan expand_stream_plan(StreamPlan sub, const ExecutionPlan& plan, const StreamedSubplan& sp,
                              const std::vector<char>& resident) {
  StreamPlan s = std::move(sub);
  const size_t n = plan.weights.size();
  auto full = [&](int b) { return sp.full_blob[size_t(b)]; };
  for (TransferUnit& u : s.units) {
    u.first_blob = full(u.first_blob);
    u.last_blob = full(u.last_blob);
  }
  for (WeightGroup& g : s.groups) {
    g.first_blob = full(g.first_blob);
    g.last_blob = full(g.last_blob);
  }
  std::vector<int64_t> pool_offset(n, 0), host_offset(n, -1);
  std::vector<int> last_unit(n, -1);
  for (size_t i = 0; i < sp.full_blob.size(); ++i) {
    const size_t b = size_t(sp.full_blob[i]);
    pool_offset[b] = s.blob_pool_offset[i];
    last_unit[b] = s.blob_last_unit[i];
    host_offset[b] = s.blob_host_offset[i];
  }
  int64_t res = 0;
  for (size_t b = 0; b < n; ++b) {
    if (!resident[b]) continue;
    pool_offset[b] = res;
    res += plan.weights[b].bytes;
  }
  s.blob_pool_offset = std::move(pool_offset);
  s.blob_last_unit = std::move(last_unit);
  s.blob_host_offset = std::move(host_offset);
  s.blob_resident = resident;
  s.resident_bytes = res;
  s.total_weight_bytes = s.total_weight_bytes + res;
  return s;
}

// A unit starting inside blob B must end within B's start + ring: otherwise it would
// overwrite bytes of B itself and wait for B's reader, which waits for it. Units of at
// most ring - slot_bytes bytes never do (they start less than slot_bytes into B).
int64_t ring_max_unit(int64_t ring, int64_t slot_bytes) { return (ring - slot_bytes) / kAlign * kAlign; }

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

namespace {

// The staged blobs of `options` (StreamOptions::arena_offset) added to `s`, a ring plan
// of the other blobs: one unit each, in the copy queue at the ring's first unit that
// is needed after the blob's reader (execution order), or later where the blob's arena
// bytes are not free yet (before the first ring unit that waits for its wait step or a
// later one), never before an earlier staged unit. Every unit before a staged one waits
// for steps before its reader (ring units needed up to the reader wait for earlier
// steps; so do the earlier staged units), so the queue cannot deadlock.
void add_staged(const ExecutionPlan& plan, const StreamOptions& options, StreamPlan* s) {
  const size_t n = plan.weights.size();
  if (s->blob_resident.size() != n) s->blob_resident.assign(n, 0);
  const std::vector<TransferUnit> ring = std::move(s->units);
  const std::vector<std::vector<int>> ring_waits = std::move(s->unit_waits);
  auto wait_of = [&](size_t i) {
    int w = -1;
    for (int l : ring_waits[i]) w = std::max(w, l);
    return w;
  };
  std::vector<TransferUnit> units;
  std::vector<std::vector<int>> waits;
  std::vector<int> new_index(ring.size(), -1);
  size_t next_ring = 0;
  auto take_ring_until = [&](size_t end) {
    for (; next_ring < end; ++next_ring) {
      new_index[next_ring] = int(units.size());
      units.push_back(ring[next_ring]);
      waits.push_back(ring_waits[next_ring]);
    }
  };
  int64_t at = 0;  // the staged store: staged blobs back to back
  for (size_t b = 0; b < n; ++b) {
    if (options.arena_offset[b] < 0) continue;
    const WeightBlob& w = plan.weights[b];
    const int reader = w.layer, free_after = options.arena_wait[b];
    size_t consume = next_ring, avail = next_ring;
    while (consume < ring.size() && ring[consume].first_layer <= reader) ++consume;
    while (avail < ring.size() && wait_of(avail) < free_after) ++avail;
    take_ring_until(std::max(consume, avail));
    TransferUnit u;
    u.index = int(units.size());
    u.group = -1;
    u.host_offset = at;
    u.bytes = w.bytes;
    u.pool_offset = options.arena_offset[b];
    u.first_blob = u.last_blob = int(b);
    u.first_layer = reader;
    u.in_arena = true;
    units.push_back(u);
    waits.push_back({free_after});
    s->blob_resident[b] = 2;
    s->blob_pool_offset[b] = options.arena_offset[b];
    s->blob_host_offset[b] = at;
    s->blob_last_unit[b] = u.index;
    at += w.bytes;
  }
  take_ring_until(ring.size());
  for (size_t i = 0; i < units.size(); ++i) units[i].index = int(i);
  for (size_t b = 0; b < n; ++b)
    if (s->blob_resident[b] == 0 && s->blob_last_unit[b] >= 0)
      s->blob_last_unit[b] = new_index[size_t(s->blob_last_unit[b])];
  s->units = std::move(units);
  s->unit_waits = std::move(waits);
  s->staged_bytes = at;
  s->total_weight_bytes += at;
  s->order = host_order(plan, *s);
}

// Checks StreamOptions::arena_offset / arena_wait against the plan (sizes, offsets
// inside the arena, waits before the reader); the arena bytes themselves are
// arena_staging.h's to choose (simulate() checks them against the activations).
Status check_staged(const ExecutionPlan& plan, const StreamOptions& options, int* n_staged) {
  *n_staged = 0;
  if (options.arena_offset.empty() && options.arena_wait.empty()) return Status();
  const size_t n = plan.weights.size();
  if (options.arena_offset.size() != n || options.arena_wait.size() != n)
    return invalid_argument("arena staging: " + std::to_string(options.arena_offset.size()) + " offsets and " +
                            std::to_string(options.arena_wait.size()) + " waits for " + std::to_string(n) +
                            " weight blobs");
  for (size_t b = 0; b < n; ++b) {
    const int64_t off = options.arena_offset[b];
    if (off < 0) continue;
    const WeightBlob& w = plan.weights[b];
    const std::string what = "arena staging: blob " + std::to_string(b) + " (layer " + std::to_string(w.layer) + ")";
    if (off % kAlign != 0 || off + w.bytes > plan.arena_bytes)
      return invalid_argument(what + " at arena offset " + std::to_string(off) + ": expected a multiple of 256 within " +
                              std::to_string(plan.arena_bytes) + " arena bytes");
    if (options.arena_wait[b] < 0 || options.arena_wait[b] >= w.layer)
      return invalid_argument(what + " waits for step " + std::to_string(options.arena_wait[b]) +
                              ": expected a step in [0, " + std::to_string(w.layer) + ")");
    if (!options.resident.empty() && options.resident[b])
      return invalid_argument(what + " is both resident and staged");
    ++*n_staged;
  }
  return Status();
}

}  // namespace

Expected<StreamPlan> plan_streaming(const ExecutionPlan& plan, const CopyProfile& profile,
                                    const StreamOptions& options) {
  const int n_blobs = int(plan.weights.size());
  for (int b = 0; b < n_blobs; ++b) {
    const WeightBlob& w = plan.weights[size_t(b)];
    if (w.bytes <= 0 || w.bytes % kAlign != 0)
      return invalid_argument("weight blob " + std::to_string(b) + " (layer " + std::to_string(w.layer) + ") has " +
                              std::to_string(w.bytes) + " bytes; expected a positive multiple of 256");
    if (w.layer < 0 || w.layer >= int(plan.steps.size()) || plan.steps[size_t(w.layer)].weight != b ||
        (b > 0 && w.layer <= plan.weights[size_t(b) - 1].layer))
      return invalid_argument("weight blob " + std::to_string(b) + " (layer " + std::to_string(w.layer) +
                              ") is not in execution order or not referenced by its step");
  }
  if (options.budget_bytes < 0)
    return invalid_argument("weight budget " + std::to_string(options.budget_bytes) + " bytes is negative");
  int n_staged = 0;
  DLR_RETURN_IF_ERROR(check_staged(plan, options, &n_staged));
  if (!options.resident.empty() || n_staged > 0) {
    if (!options.resident.empty() && options.resident.size() != size_t(n_blobs))
      return invalid_argument("resident set has " + std::to_string(options.resident.size()) + " entries; expected " +
                              std::to_string(n_blobs) + " (one per weight blob)");
    int64_t res = 0;
    int n_res = 0;
    std::vector<char> resident(size_t(n_blobs), 0), apart(size_t(n_blobs), 0);  // apart: resident or staged
    for (int b = 0; b < n_blobs; ++b) {
      if (!options.resident.empty() && options.resident[size_t(b)]) {
        res += plan.weights[size_t(b)].bytes;
        ++n_res;
        resident[size_t(b)] = apart[size_t(b)] = 1;
      }
      if (n_staged > 0 && options.arena_offset[size_t(b)] >= 0) apart[size_t(b)] = 1;
    }
    if (n_res + n_staged > 0) {
      if (n_res + n_staged == n_blobs)
        return invalid_argument(n_staged > 0 ? "resident and staged blobs leave none for the ring"
                                             : "resident set holds every blob: use a budget of all the weights");
      if (n_staged > 0 && (options.layout == PoolLayout::kSlots || options.ring_granularity <= 0))
        return invalid_argument("blobs staged in the arena need the ring pool");
      if (options.layout == PoolLayout::kSlots)
        return invalid_argument("resident blobs need the ring pool (the slots pool streams every blob)");
      if (options.ring_granularity <= 0)
        return invalid_argument("resident blobs need the ring pool, which needs CUDA virtual memory management");
      if (options.budget_bytes != 0 && options.budget_bytes <= res)
        return out_of_memory("weight budget " + mib_text(options.budget_bytes) + " MiB leaves no pool beside " +
                             mib_text(res) + " MiB of resident weights");
      const StreamedSubplan sp = streamed_subplan(plan, apart);
      StreamOptions so = options;
      so.resident.clear();
      so.arena_offset.clear();
      so.arena_wait.clear();
      so.layout = PoolLayout::kRing;
      so.budget_bytes = options.budget_bytes == 0 ? 0 : options.budget_bytes - res;
      DLR_ASSIGN_OR_RETURN(StreamPlan sub, plan_streaming(sp.plan, profile, so));
      if (sub.resident && n_staged > 0) return invalid_argument("blobs staged in the arena need a plan that streams");
      StreamPlan s = expand_stream_plan(std::move(sub), plan, sp, resident);
      if (n_res == 0) s.blob_resident.assign(size_t(n_blobs), 0);
      if (n_staged > 0) {
        add_staged(plan, options, &s);
        DLR_RETURN_IF_ERROR(check_queueable(profile, s));
      }
      return s;
    }
  }
  const int64_t chunk = options.chunk_bytes > 0 ? options.chunk_bytes : profile.chunk_bytes;
  const int64_t min_unit = options.min_unit_bytes > 0 ? options.min_unit_bytes : profile.min_unit_bytes;
  if (options.chunk_bytes < 0 || chunk <= 0 || chunk % kAlign != 0)
    return invalid_argument("copy chunk size " + std::to_string(chunk) + " bytes must be a positive multiple of 256");
  if (options.min_unit_bytes < 0 || min_unit < 0)
    return invalid_argument("minimum copy unit " + std::to_string(min_unit) + " bytes is negative");
  if (options.max_copies_ahead < 0)
    return invalid_argument("max copies ahead " + std::to_string(options.max_copies_ahead) + " is negative");

  const HostLayout h = host_layout(plan);
  StreamPlan s;
  s.total_weight_bytes = h.total;
  s.blob_host_offset = h.offset;
  int largest = -1;
  for (int b = 0; b < n_blobs; ++b)
    if (largest < 0 || plan.weights[size_t(b)].bytes > plan.weights[size_t(largest)].bytes) largest = b;
  s.slot_bytes = largest < 0 ? 0 : align_up(plan.weights[size_t(largest)].bytes, kAlign);
  // The two layouts' minimal pools (stream_plan.h). Slots: two of the largest blob.
  // Ring: the largest multiple of the mapping granularity within two largest blobs +
  // 1 MB (a ring a little under 2 x the largest blob still double-buffers all but the
  // last bytes of two consecutive largest blobs), or two blobs rounded up where the
  // granularity is coarse compared with the blobs.
  const int64_t gran = options.ring_granularity;
  if (gran < 0 || (gran > 0 && gran % kAlign != 0))
    return invalid_argument("ring granularity " + std::to_string(gran) + " bytes must be a multiple of 256");
  const int64_t slots_min = 2 * s.slot_bytes;
  int64_t ring_min = 0;
  if (gran > 0) {
    ring_min = (slots_min + kRingSlack) / gran * gran;
    if (ring_min < s.slot_bytes + s.slot_bytes / 2) ring_min = align_up(slots_min, gran);
  }
  if (options.layout == PoolLayout::kRing && gran == 0)
    return invalid_argument("the ring weight pool needs CUDA virtual memory management, which this device does not "
                            "support; use the slots pool");
  // Minimal (budget 0): the ring where it is available and within the minimal-mode
  // bound (slots minimum + 1 MB), slots otherwise.
  const bool ring_for_min = options.layout == PoolLayout::kRing ||
                            (options.layout == PoolLayout::kAuto && gran > 0 && ring_min <= slots_min + kRingSlack);
  const int64_t budget =
      options.budget_bytes != 0 ? options.budget_bytes : (ring_for_min ? ring_min : slots_min);
  const int64_t ring = gran > 0 ? budget / gran * gran : 0;
  // A ring that holds every blob overwrites nothing within an inference: it needs no
  // double buffering (never_resident only; otherwise such a budget is resident).
  const bool ring_fits = gran > 0 && (ring >= ring_min || (options.never_resident && ring >= h.total));
  const bool slots_fit = budget >= slots_min;
  if (options.never_resident && (gran == 0 || options.layout == PoolLayout::kSlots))
    return invalid_argument("never resident: streaming through a ring that holds every blob needs the ring pool");
  // A budget holding every blob is resident whatever the layout (unless never_resident).
  const bool streams = budget < h.total || options.never_resident;
  const bool use_ring =
      streams && (options.layout == PoolLayout::kRing || options.never_resident ||
                  (options.layout == PoolLayout::kAuto && ring_fits));
  if (streams && !(use_ring ? ring_fits : slots_fit)) {
    // Name the minimum that applies: the chosen layout's, or for auto the smaller one.
    const bool name_ring = use_ring || (options.layout == PoolLayout::kAuto && gran > 0 && ring_min < slots_min);
    const int64_t need = name_ring ? ring_min : slots_min;
    const std::string what = name_ring
                                 ? "a ring of two of the largest layer in " + mib_text(gran) + " MiB mapping units"
                                 : "two slots of the largest layer";
    int decimals = 2;  // more digits when 2 would print the same number twice
    if (mib_text(budget) == mib_text(need)) decimals = 7;
    return out_of_memory("weight budget " + mib_text(budget, decimals) + " MiB is below the minimum of " +
                         mib_text(need, decimals) + " MiB (" + what + ", " + mib_text(s.slot_bytes) + " MiB, layer " +
                         std::to_string(plan.weights[size_t(largest)].layer) + ")");
  }
  s.minimal_pool_bytes = (streams ? use_ring : ring_for_min) ? ring_min : slots_min;

  // max_copies_ahead: what the queue allows for the unit size with the smallest depth,
  // minus one for safety (driver slack; the copy stream also carries the event
  // records and waits), at least 1, at most kMaxCopiesAheadCap.
  auto copies_ahead = [&]() {
    if (options.max_copies_ahead > 0) return options.max_copies_ahead;
    if (s.units.empty()) return 1;
    int depth = kMaxCopiesAheadCap + 1;
    for (const TransferUnit& u : s.units) depth = std::min(depth, profile.queue_depth(u.bytes));
    return std::max(1, std::min(kMaxCopiesAheadCap, depth - 1));
  };

  if (!streams) {
    // Resident: every blob at its host offset, copied once at open in chunks.
    s.resident = true;
    s.pool_bytes = h.total;
    s.slots = 0;
    if (n_blobs > 0) cut_units(h, 0, n_blobs - 1, 0, chunk, chunk, min_unit, &s.units);
    for (TransferUnit& u : s.units) {
      u.pool_offset = u.host_offset;
      u.first_layer = plan.weights[size_t(u.first_blob)].layer;
    }
    s.blob_pool_offset = h.offset;
    s.blob_last_unit.assign(size_t(n_blobs), 0);
    for (const TransferUnit& u : s.units)
      for (int b = u.first_blob; b <= u.last_blob; ++b) s.blob_last_unit[size_t(b)] = u.index;
    s.unit_waits.assign(s.units.size(), {});
    for (size_t l = 0; l < plan.steps.size(); ++l) s.order.push_back({StreamAction::Kind::kLayer, int(l)});
    s.max_copies_ahead = copies_ahead();
    return s;
  }

  if (!options.unit_ends.empty()) {
    if (!use_ring) return invalid_argument("explicit transfer unit boundaries apply to the ring pool only");
    const int64_t max_unit = ring_max_unit(ring, s.slot_bytes);
    int64_t prev = 0;
    for (size_t i = 0; i < options.unit_ends.size(); ++i) {
      const int64_t e = options.unit_ends[i];
      const std::string where = "transfer unit " + std::to_string(i) + " ends at byte " + std::to_string(e);
      if (e <= prev || e % kAlign != 0)
        return invalid_argument(where + "; expected increasing multiples of 256 after " + std::to_string(prev));
      if (e - prev > max_unit)
        return invalid_argument(where + ": " + std::to_string(e - prev) + " bytes, more than the " +
                                std::to_string(max_unit) + " a ring of " + mib_text(ring) + " MiB allows");
      prev = e;
    }
    if (prev != h.total)
      return invalid_argument("transfer units end at byte " + std::to_string(prev) + "; expected the last at " +
                              std::to_string(h.total) + " (all weight bytes)");
  }
  if (use_ring) {
    plan_ring(plan, h, ring, options.chunk_bytes > 0 ? chunk : ring_chunk(chunk, min_unit, ring), min_unit,
              options.unit_ends, &s);
    DLR_RETURN_IF_ERROR(check_queueable(profile, s));
    s.max_copies_ahead = copies_ahead();
    s.order = host_order(plan, s);
    return s;
  }

  // Streaming: K slots, groups packed greedily up to one slot.
  DLR_ASSERT(s.slot_bytes > 0);
  const int64_t k64 = budget / s.slot_bytes;
  DLR_ASSERT(k64 >= 2);
  for (int b = 0; b < n_blobs;) {
    WeightGroup g;
    g.first_blob = b;
    g.host_offset = h.offset[size_t(b)];
    int last = b;
    while (last + 1 < n_blobs && h.end[size_t(last) + 1] - g.host_offset <= s.slot_bytes) ++last;
    g.last_blob = last;
    g.bytes = h.end[size_t(last)] - g.host_offset;
    g.last_layer = plan.weights[size_t(last)].layer;  // blobs are in execution order
    s.groups.push_back(g);
    b = last + 1;
  }
  // Every group fits a slot, so K >= groups would hold everything: that is the resident case.
  DLR_ASSERT(k64 < int64_t(s.groups.size()));
  s.slots = int(k64);
  s.pool_bytes = k64 * s.slot_bytes;

  s.blob_pool_offset.assign(size_t(n_blobs), 0);
  s.blob_last_unit.assign(size_t(n_blobs), -1);
  for (size_t gi = 0; gi < s.groups.size(); ++gi) {
    WeightGroup& g = s.groups[gi];
    g.slot = int(gi % size_t(s.slots));
    const int64_t slot_base = int64_t(g.slot) * s.slot_bytes;
    const size_t first_unit = s.units.size();
    // The inference's first copy overlaps nothing (every layer waits for it), so it is
    // kept to min_unit bytes; every other unit may be a full chunk.
    const int64_t first_chunk = gi == 0 && min_unit > 0 ? std::max(kAlign, std::min(chunk, min_unit) / kAlign * kAlign)
                                                        : chunk;
    cut_units(h, g.first_blob, g.last_blob, int(gi), chunk, first_chunk, min_unit, &s.units);
    for (size_t u = first_unit; u < s.units.size(); ++u) {
      TransferUnit& tu = s.units[u];
      tu.index = int(u);
      tu.pool_offset = slot_base + (tu.host_offset - g.host_offset);
      tu.first_layer = plan.weights[size_t(tu.first_blob)].layer;
      // The previous occupant of this slot is group gi - K. Waiting for its LAST reader
      // is enough: layers run in order on one compute stream, so when that layer has
      // finished every earlier reader of the slot has too.
      if (gi >= size_t(s.slots)) {
        s.unit_waits.push_back({s.groups[gi - size_t(s.slots)].last_layer});
      } else {
        s.unit_waits.push_back({});
      }
      for (int b = tu.first_blob; b <= tu.last_blob; ++b) s.blob_last_unit[size_t(b)] = int(u);
    }
    for (int b = g.first_blob; b <= g.last_blob; ++b)
      s.blob_pool_offset[size_t(b)] = slot_base + (h.offset[size_t(b)] - g.host_offset);
  }

  DLR_RETURN_IF_ERROR(check_queueable(profile, s));
  s.max_copies_ahead = copies_ahead();
  s.order = host_order(plan, s);
  return s;
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
