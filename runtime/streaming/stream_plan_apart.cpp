// Blobs apart from the ring (stream_plan.h): resident ones, in a region of their own,
// and ones staged in the activation arena. plan_streaming plans the ring over the
// other blobs (a sub-plan) and adds these back. Plain C++.
#include "runtime/streaming/stream_plan_detail.h"

#include <algorithm>

namespace dlr {

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
    t.index = st.index;
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

namespace stream_detail {

bool joined(const StreamOptions& options, size_t b) {
  return !options.arena_joined.empty() && options.arena_joined[b] != 0;
}

namespace {

// Blob b copied in one unit with b - 1: both staged, b where b - 1 ends in the arena,
// the same wait and queue place.
Status check_joined(const ExecutionPlan& plan, const StreamOptions& options, size_t b, const std::string& what) {
  const bool ok = b > 0 && options.arena_offset[b] >= 0 && options.arena_offset[b - 1] >= 0 &&
                  options.arena_offset[b] == options.arena_offset[b - 1] + plan.weights[b - 1].bytes &&
                  options.arena_wait[b] == options.arena_wait[b - 1] &&
                  (options.arena_early.empty() || options.arena_early[b] == options.arena_early[b - 1]);
  if (ok) return Status();
  return invalid_argument(what + " is copied with the blob before it: expected both staged, at arena offsets that "
                          "follow each other, with the same wait and queue place");
}

}  // namespace

// The staged blobs of `options` (StreamOptions::arena_offset) added to `s`, a ring plan
// of the other blobs: one unit each, in the copy queue before ring unit `pos`, never
// before a ring unit that waits for an earlier step than the blob's wait (avail), and
//  - late (arena_early 0): at the ring's first unit needed after the blob's reader
//    (consume), never before an earlier late staged unit;
//  - early (1): after the ring's units needed up to its wait step (need).
// Staged units at one ring position go in reader order. No deadlock: a unit Y queued
// before X whose wait step reads X (X's reader <= Y's wait) would need pos_Y < pos_X, but
// Y's need covers X's consume, and Y's avail X's avail (ring waits grow along the ring).
// A run (StreamOptions::arena_joined) is one unit, placed by its first blob's reader.
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
  // Each staged blob's place in the queue: before ring unit `pos`.
  struct Staged {
    size_t pos;
    int reader;
    size_t blob;
  };
  std::vector<Staged> staged;
  size_t last_late = 0;
  for (size_t b = 0; b < n; ++b) {
    if (options.arena_offset[b] < 0 || joined(options, b)) continue;
    const int reader = plan.weights[b].step, free_after = options.arena_wait[b];
    size_t consume = 0, avail = 0, need = 0;
    while (consume < ring.size() && ring[consume].first_layer <= reader) ++consume;
    while (need < ring.size() && ring[need].first_layer <= free_after) ++need;
    while (avail < ring.size() && wait_of(avail) < free_after) ++avail;
    const bool early = !options.arena_early.empty() && options.arena_early[b];
    const size_t pos = early ? std::max(need, avail) : std::max({consume, avail, last_late});
    if (!early) last_late = pos;
    staged.push_back({pos, reader, b});
  }
  std::stable_sort(staged.begin(), staged.end(),
                   [](const Staged& a, const Staged& b) { return a.pos != b.pos ? a.pos < b.pos : a.reader < b.reader; });
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
  // The staged store: staged blobs back to back in execution order.
  std::vector<int64_t> store(n, -1);
  int64_t at = 0;
  for (size_t b = 0; b < n; ++b)
    if (options.arena_offset[b] >= 0) store[b] = at, at += plan.weights[b].bytes;
  for (const Staged& st : staged) {
    const size_t b = st.blob;
    size_t e = b;
    while (e + 1 < n && joined(options, e + 1)) ++e;
    take_ring_until(st.pos);
    TransferUnit u;
    u.index = int(units.size());
    u.group = -1;
    u.host_offset = store[b];
    u.bytes = store[e] + plan.weights[e].bytes - store[b];
    u.pool_offset = options.arena_offset[b];
    u.first_blob = int(b);
    u.last_blob = int(e);
    u.first_layer = st.reader;
    u.in_arena = true;
    units.push_back(u);
    waits.push_back({options.arena_wait[b]});
    for (size_t k = b; k <= e; ++k) {
      s->blob_resident[k] = 2;
      s->blob_pool_offset[k] = options.arena_offset[k];
      s->blob_host_offset[k] = store[k];
      s->blob_last_unit[k] = u.index;
    }
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

StreamOptions with_whole_staged(const ExecutionPlan& plan, const StreamOptions& options, bool* added) {
  *added = false;
  StreamOptions o = options;
  const size_t n = plan.weights.size();
  // A budget that holds every other blob plans no ring to stage beside: the blobs staged
  // whole then go with the others (resident, or through a ring the budget makes).
  int64_t others = 0;
  for (const WeightBlob& w : plan.weights) others += w.arena_offset < 0 ? w.bytes : 0;
  if (options.budget_bytes > 0 && options.budget_bytes >= others) return o;
  for (size_t b = 0; b < n; ++b) {
    const WeightBlob& w = plan.weights[b];
    if (w.arena_offset < 0 || (!options.resident.empty() && options.resident[b])) continue;
    if (o.arena_offset.size() != n) o.arena_offset.assign(n, -1);
    if (o.arena_wait.size() != n) o.arena_wait.assign(n, -1);
    if (o.arena_early.size() != n) o.arena_early.assign(n, 0);
    if (o.arena_offset[b] == w.arena_offset && o.arena_wait[b] == w.arena_wait && o.arena_early[b]) continue;
    o.arena_offset[b] = w.arena_offset;
    o.arena_wait[b] = w.arena_wait;
    o.arena_early[b] = 1;
    if (!o.arena_joined.empty()) {  // copied alone: in no run
      o.arena_joined[b] = 0;
      if (b + 1 < n) o.arena_joined[b + 1] = 0;
    }
    *added = true;
  }
  return o;
}

// Sizes, offsets inside the arena (multiples of 256), waits before the reader; the
// arena bytes themselves are arena_staging.h's to choose (simulate() checks them
// against the activations).
Status check_staged(const ExecutionPlan& plan, const StreamOptions& options, int* n_staged) {
  *n_staged = 0;
  if (options.arena_offset.empty() && options.arena_wait.empty()) return Status();
  const size_t n = plan.weights.size();
  if (options.arena_offset.size() != n || options.arena_wait.size() != n ||
      (!options.arena_early.empty() && options.arena_early.size() != n))
    return invalid_argument("arena staging: " + std::to_string(options.arena_offset.size()) + " offsets, " +
                            std::to_string(options.arena_wait.size()) + " waits and " +
                            std::to_string(options.arena_early.size()) + " queue places for " + std::to_string(n) +
                            " weight blobs");
  if (!options.arena_joined.empty() && options.arena_joined.size() != n)
    return invalid_argument("arena staging: " + std::to_string(options.arena_joined.size()) + " run marks for " +
                            std::to_string(n) + " weight blobs");
  for (size_t b = 0; b < n; ++b) {
    const int64_t off = options.arena_offset[b];
    if (off < 0 && !joined(options, b)) continue;
    const WeightBlob& w = plan.weights[b];
    const std::string what = "arena staging: blob " + std::to_string(b) + " (layer " + std::to_string(w.layer) + ")";
    if (joined(options, b)) DLR_RETURN_IF_ERROR(check_joined(plan, options, b, what));
    if (off % kAlign != 0 || off + w.bytes > plan.arena_bytes)
      return invalid_argument(what + " at arena offset " + std::to_string(off) + ": expected a multiple of 256 within " +
                              std::to_string(plan.arena_bytes) + " arena bytes");
    if (options.arena_wait[b] < 0 || options.arena_wait[b] >= w.step)
      return invalid_argument(what + " waits for step " + std::to_string(options.arena_wait[b]) +
                              ": expected a step in [0, " + std::to_string(w.step) + ")");
    if (!options.resident.empty() && options.resident[b])
      return invalid_argument(what + " is both resident and staged");
    ++*n_staged;
  }
  return Status();
}

}  // namespace stream_detail
}  // namespace dlr
