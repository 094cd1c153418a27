// The parts of plan_streaming (stream_plan.h) that every layout shares: the host
// weight store's layout, its cut into transfer units, the ring's geometry and copy
// waits, and the host enqueue order of copies and launches. Plain C++.
#include "runtime/streaming/stream_plan_detail.h"

#include <algorithm>

namespace dlr::stream_detail {
namespace {

// Copies beyond what the next layer needs that the host enqueues between two layer
// launches. Each copy call costs host time and delays the next launch; where the GPU
// runs ahead of the host (tiny layers) a burst of far-ahead copies (e.g. all K groups'
// units after the first launch) would idle the GPU. The host is otherwise far ahead
// of both engines, so a trickle of 2 per launch keeps the copy queue fed.
constexpr int kAheadPerLaunch = 2;

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

// Units ending at `ends` (validated by the caller) over the whole byte stream.
void units_from_ends(const HostLayout& h, const std::vector<int64_t>& ends, std::vector<TransferUnit>* out) {
  int64_t pos = 0;
  int b = 0;  // the blob holding byte `pos`
  for (int64_t cut : ends) {
    append_unit(h, -1, pos, cut, &b, out);
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

}  // namespace

HostLayout host_layout(const ExecutionPlan& plan) {
  HostLayout h;
  h.offset = blob_host_offsets(plan);
  for (size_t b = 0; b < plan.weights.size(); ++b) h.end.push_back(h.offset[b] + plan.weights[b].bytes);
  h.total = h.end.empty() ? 0 : h.end.back();
  return h;
}

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

// A unit's copy waits until its whole byte range is free, so in a small ring large
// units hold copies back; in a large ring the profile's efficient size is kept.
int64_t ring_chunk(int64_t chunk, int64_t min_unit, int64_t ring) {
  const int64_t eighth = std::max(min_unit, ring / 8) / kAlign * kAlign;
  return std::max(kAlign, std::min(chunk, eighth));
}

// The ring layout (stream_plan.h): host byte x at ring offset x % ring. Units are the
// whole byte stream cut into chunks (the first one min_unit); a unit covering host
// bytes [a, a + n) overwrites what bytes [a - ring, a + n - ring) held, so its copy
// waits for the reader of byte a + n - 1 - ring (readers run in order, so the last
// one covers every earlier byte).
void plan_ring(const ExecutionPlan& plan, const HostLayout& h, int64_t ring, int64_t chunk, int64_t min_unit,
               int64_t unit_cap, const std::vector<int64_t>& unit_ends, StreamPlan* s) {
  const int n_blobs = int(plan.weights.size());
  DLR_ASSERT(n_blobs > 0 && ring >= s->slot_bytes);  // ring >= total: StreamOptions::never_resident
  s->layout = PoolLayout::kRing;
  s->pool_bytes = ring;
  s->slots = 0;
  if (!unit_ends.empty()) {
    units_from_ends(h, unit_ends, &s->units);
  } else {
    chunk = std::max(kAlign, std::min(chunk, ring_max_unit(ring, s->slot_bytes, unit_cap)));
    const int64_t first_chunk = min_unit > 0 ? std::max(kAlign, std::min(chunk, min_unit) / kAlign * kAlign) : chunk;
    cut_units(h, 0, n_blobs - 1, -1, chunk, first_chunk, min_unit, &s->units);
  }
  s->blob_pool_offset.assign(size_t(n_blobs), 0);
  s->blob_last_unit.assign(size_t(n_blobs), -1);
  for (int b = 0; b < n_blobs; ++b) s->blob_pool_offset[size_t(b)] = h.offset[size_t(b)] % ring;
  int reader_blob = 0;  // the blob holding byte (unit end - 1 - ring); monotone over units
  for (TransferUnit& u : s->units) {
    u.pool_offset = u.host_offset % ring;
    u.first_layer = plan.weights[size_t(u.first_blob)].step;
    const int64_t overwritten_end = u.host_offset + u.bytes - ring;  // bytes [.., overwritten_end) held before
    if (overwritten_end > 0) {
      while (h.end[size_t(reader_blob)] < overwritten_end) ++reader_blob;
      s->unit_waits.push_back({plan.weights[size_t(reader_blob)].step});
    } else {
      s->unit_waits.push_back({});
    }
    for (int b = u.first_blob; b <= u.last_blob; ++b) s->blob_last_unit[size_t(b)] = u.index;
  }
}

// The host enqueue order (see stream_plan.h and docs/streaming.md section 4):
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

}  // namespace dlr::stream_detail
