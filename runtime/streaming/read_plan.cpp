#include "runtime/streaming/read_plan.h"
#include "runtime/core/units.h"

#include <algorithm>
#include <cstdio>

namespace dlr {
namespace {

int64_t align_down(int64_t x) { return x / kReadAlign * kReadAlign; }
int64_t align_up(int64_t x) { return (x + kReadAlign - 1) / kReadAlign * kReadAlign; }

Status check_options(const ExecutionPlan& plan, const ReadOptions& o) {
  if (o.queue_depth < 1 || o.queue_depth > 64)
    return invalid_argument("read plan: queue depth " + std::to_string(o.queue_depth) + " is out of range (1..64)");
  if (o.block_bytes < kReadAlign || o.block_bytes % kReadAlign != 0)
    return invalid_argument("read plan: read block " + std::to_string(o.block_bytes) +
                            " bytes must be a positive multiple of 4096");
  if (o.staging_bytes < 0) return invalid_argument("read plan: host budget must be >= 0 bytes");
  for (size_t b = 0; b < plan.weights.size(); ++b)
    if (plan.weights[b].bytes <= 0 || plan.weights[b].bytes % kReadAlign != 0)
      return invalid_argument("read plan: weight blob " + std::to_string(b) + " (layer " +
                              std::to_string(plan.weights[b].layer) + ") has " +
                              std::to_string(plan.weights[b].bytes) +
                              " bytes; storage plans need multiples of 4096 (PlannerOptions::weight_align)");
  return Status();
}

// Whether piece b follows piece a in the prepared file (a ends its blob, b starts the
// next one; storage blobs are multiples of 4096, back to back) and in staging.
bool follows(const ReadSegment& a, const ReadSegment& b, const ExecutionPlan& plan) {
  return b.blob == a.blob + 1 && b.blob_offset == 0 && a.blob_offset + a.bytes == plan.weights[size_t(a.blob)].bytes &&
         b.staging_offset == a.staging_offset + a.bytes;
}

// Turns a unit's pieces (one per blob, in order) into its segments: every run of pieces
// that follow each other is read in requests of at most block bytes from the run's start,
// each request cut into segments at blob boundaries.
void cut_requests(ReadUnit* u, const std::vector<ReadSegment>& pieces, const ExecutionPlan& plan, int64_t block) {
  int64_t run_done = 0;  // bytes of the current run before the current piece
  for (size_t i = 0; i < pieces.size(); ++i) {
    const ReadSegment& p = pieces[i];
    if (i == 0 || !follows(pieces[i - 1], p, plan)) run_done = 0;
    for (int64_t done = 0; done < p.bytes;) {
      const int64_t in_request = (run_done + done) % block;  // bytes of the request already read
      ReadSegment s;
      s.blob = p.blob;
      s.blob_offset = p.blob_offset + done;
      s.bytes = std::min(block - in_request, p.bytes - done);
      s.staging_offset = p.staging_offset + done;
      s.joins_previous = in_request != 0;
      u->segments.push_back(s);
      done += s.bytes;
    }
    run_done += p.bytes;
  }
}

// Places units FIFO in a ring of `staging` bytes (restart at 0 when a unit does not fit
// before the end); returns, per unit, the latest earlier unit whose region it overlaps.
std::vector<int> place_fifo(std::vector<ReadUnit>* units, int64_t staging) {
  std::vector<int> latest(units->size(), -1);
  int64_t cursor = 0;
  for (size_t i = 0; i < units->size(); ++i) {
    ReadUnit& u = (*units)[i];
    if (cursor + u.bytes > staging) cursor = 0;
    u.staging_offset = cursor;
    cursor += u.bytes;
    latest[i] = latest_overlapping(*units, int(i), u);
  }
  return latest;
}

Status resolve_staging(ReadPlan* r, const ReadOptions& o) {
  r->min_staging_bytes = 2 * r->largest_unit();
  if (r->units.empty()) {  // every blob kept in memory: nothing is read
    r->staging_bytes = 0;
    return Status();
  }
  r->staging_bytes = o.staging_bytes == 0 ? r->min_staging_bytes : align_down(o.staging_bytes);
  if (r->staging_bytes < r->min_staging_bytes) {
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "host budget %.2f MiB is below the minimum for reading from storage, %.2f MiB (2 x the largest "
                  "read, %.2f MiB)",
                  mib(o.staging_bytes), mib(r->min_staging_bytes), mib(r->largest_unit()));
    return invalid_argument(buf);
  }
  return Status();
}

}  // namespace

int ReadUnit::requests() const {
  int n = 0;
  for (const ReadSegment& s : segments) n += s.joins_previous ? 0 : 1;
  return n;
}

int64_t ReadPlan::read_bytes() const {
  int64_t n = 0;
  for (const ReadUnit& u : units) n += u.bytes;
  return n;
}

int64_t ReadPlan::largest_unit() const {
  int64_t m = 0;
  for (const ReadUnit& u : units) m = std::max(m, u.bytes);
  return m;
}

Expected<ReadPlan> plan_reads_three_stage(const ExecutionPlan& plan, const StreamPlan& stream,
                                          const ReadOptions& options) {
  DLR_RETURN_IF_ERROR(check_options(plan, options));
  if (stream.resident) return invalid_argument("read plan: the stream plan copies nothing per inference");
  ReadPlan r;
  r.queue_depth = options.queue_depth;
  r.block_bytes = options.block_bytes;
  // The streamed host store: blob b at stream.blob_host_offset[b] (-1: resident), back to back.
  std::vector<int> streamed;
  for (size_t b = 0; b < plan.weights.size(); ++b)
    if (!stream.is_resident(int(b))) streamed.push_back(int(b));
  for (const TransferUnit& t : stream.units) {
    ReadUnit u;
    u.index = int(r.units.size());
    const int64_t lo = align_down(t.host_offset), hi = align_up(t.host_offset + t.bytes);
    u.bytes = hi - lo;
    u.first_blob = t.first_blob;
    u.last_blob = t.last_blob;
    u.first_layer = t.first_layer;
    std::vector<ReadSegment> pieces;
    for (int b : streamed) {
      const int64_t h = stream.blob_host_offset[size_t(b)], n = plan.weights[size_t(b)].bytes;
      const int64_t s = std::max(lo, h), e = std::min(hi, h + n);
      if (s < e) pieces.push_back(ReadSegment{b, s - h, e - s, s - lo, false});
    }
    cut_requests(&u, pieces, plan, options.block_bytes);
    if (u.segments.empty()) return internal_error("read plan: transfer unit " + std::to_string(t.index) + " reads nothing");
    r.units.push_back(std::move(u));
  }
  DLR_RETURN_IF_ERROR(resolve_staging(&r, options));
  const std::vector<int> latest = place_fifo(&r.units, r.staging_bytes);
  for (size_t i = 0; i < r.units.size(); ++i) {
    ReadUnit& u = r.units[i];
    u.wait_unit = latest[i];  // copy unit index == read unit index
    for (ReadSegment& s : u.segments) s.staging_offset += u.staging_offset;
    r.copy_src_offset.push_back(u.staging_offset + (stream.units[i].host_offset - align_down(stream.units[i].host_offset)));
    u.own_offset = r.copy_src_offset.back();
    u.own_bytes = stream.units[i].bytes;
  }
  plan_read_ahead(plan, &r);
  return r;
}

Expected<ReadPlan> plan_reads_two_stage(const ExecutionPlan& plan, const std::vector<char>& resident,
                                        const ReadOptions& options) {
  DLR_RETURN_IF_ERROR(check_options(plan, options));
  if (!resident.empty() && resident.size() != plan.weights.size())
    return invalid_argument("read plan: resident flags for " + std::to_string(resident.size()) + " of " +
                            std::to_string(plan.weights.size()) + " blobs");
  ReadPlan r;
  r.two_stage = true;
  r.queue_depth = options.queue_depth;
  r.block_bytes = options.block_bytes;
  const size_t nb = plan.weights.size();
  r.blob_staging_offset.assign(nb, -1);
  r.blob_read_unit.assign(nb, -1);
  std::vector<int64_t> blob_in_unit(nb, 0);
  ReadUnit cur;
  std::vector<ReadSegment> pieces;
  bool open = false;
  auto close = [&] {
    if (!open) return;
    cur.index = int(r.units.size());
    cut_requests(&cur, pieces, plan, options.block_bytes);
    r.units.push_back(cur);
    cur = ReadUnit();
    pieces.clear();
    open = false;
  };
  for (size_t b = 0; b < nb; ++b) {
    if (!resident.empty() && resident[b]) continue;
    const int64_t n = plan.weights[b].bytes;
    if (open && cur.bytes + n > options.unit_bytes) close();
    if (!open) {
      open = true;
      cur.first_blob = int(b);
      cur.first_layer = plan.weights[b].step;
    }
    cur.last_blob = int(b);
    blob_in_unit[b] = cur.bytes;
    r.blob_read_unit[b] = int(r.units.size());
    pieces.push_back(ReadSegment{int(b), 0, n, cur.bytes, false});
    cur.bytes += n;
  }
  close();
  DLR_RETURN_IF_ERROR(resolve_staging(&r, options));
  const std::vector<int> latest = place_fifo(&r.units, r.staging_bytes);
  // The last layer reading a unit's blobs (blobs are read by their own layer only).
  auto last_layer = [&](const ReadUnit& u) { return plan.weights[size_t(u.last_blob)].step; };
  r.layer_read_unit.assign(plan.steps.size(), -1);
  r.layer_releases.assign(plan.steps.size(), 0);
  for (size_t i = 0; i < r.units.size(); ++i) {
    ReadUnit& u = r.units[i];
    for (ReadSegment& s : u.segments) s.staging_offset += u.staging_offset;
    u.own_offset = u.staging_offset;
    u.own_bytes = u.bytes;
    if (latest[i] >= 0) {
      // Layers finish in order: the latest overlapping unit's last reader covers every older one.
      u.wait_layer = last_layer(r.units[size_t(latest[i])]);
      r.layer_releases[size_t(u.wait_layer)] = 1;
    }
    for (int b = u.first_blob; b <= u.last_blob; ++b)
      if (r.blob_read_unit[size_t(b)] == int(i)) {
        r.blob_staging_offset[size_t(b)] = u.staging_offset + blob_in_unit[size_t(b)];
        r.layer_read_unit[size_t(plan.weights[size_t(b)].step)] = int(i);
      }
  }
  plan_read_ahead(plan, &r);
  return r;
}

Expected<std::vector<char>> choose_host_resident(const ExecutionPlan& plan, int64_t host_budget,
                                                 const ReadOptions& options) {
  DLR_RETURN_IF_ERROR(check_options(plan, options));
  const size_t nb = plan.weights.size();
  std::vector<char> kept(nb, 0);
  if (host_budget <= 0) return kept;
  if (host_budget >= plan.weight_bytes()) return std::vector<char>(nb, 1);  // nothing to read
  std::vector<int> order(nb);
  for (size_t b = 0; b < nb; ++b) order[b] = int(b);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const WeightBlob& x = plan.weights[size_t(a)];
    const WeightBlob& y = plan.weights[size_t(b)];
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.layer > y.layer;
  });
  ReadOptions minimum = options;
  minimum.staging_bytes = 0;
  // The staging never goes below what reading every blob needs (2 x the largest blob's
  // unit), where the budget allows it: a smaller staging keeps more bytes but lets fewer
  // reads run ahead of the compute (measured slower, docs/streaming.md section 7).
  DLR_ASSIGN_OR_RETURN(ReadPlan all_read, plan_reads_two_stage(plan, kept, minimum));
  const int64_t floor = host_budget >= all_read.min_staging_bytes ? all_read.min_staging_bytes : 0;
  // Host bytes for weights with `flags` kept: kept bytes + the staging of the rest.
  auto need = [&](const std::vector<char>& flags) -> Expected<int64_t> {
    int64_t n = 0;
    for (size_t b = 0; b < nb; ++b)
      if (flags[b]) n += plan.weights[b].bytes;
    DLR_ASSIGN_OR_RETURN(ReadPlan rest, plan_reads_two_stage(plan, flags, minimum));
    return n + std::max(floor, rest.min_staging_bytes);
  };
  // The longest prefix of the order that fits (keeping a blob can shrink the staging
  // by more than its size, so fitting is not monotonic in the prefix), ...
  size_t prefix = 0;
  for (size_t k = nb; k > 0; --k) {
    std::vector<char> flags(nb, 0);
    for (size_t i = 0; i < k; ++i) flags[size_t(order[i])] = 1;
    DLR_ASSIGN_OR_RETURN(int64_t n, need(flags));
    if (n <= host_budget) {
      prefix = k;
      kept = std::move(flags);
      break;
    }
  }
  // ... then each smaller blob after it that still fits.
  for (size_t i = prefix; i < nb; ++i) {
    kept[size_t(order[i])] = 1;
    DLR_ASSIGN_OR_RETURN(int64_t n, need(kept));
    if (n > host_budget) kept[size_t(order[i])] = 0;
  }
  return kept;
}

namespace {

// Three stages: the leading units that overlap nothing earlier in their inference wait,
// when read for the next inference, for the copy of the previous inference's latest
// unit overlapping them (copies finish in order on the copy stream).
void plan_read_ahead_three_stage(ReadPlan* r) {
  const int n = int(r->units.size());
  int ahead = 0;
  while (ahead < n && r->units[size_t(ahead)].wait_unit < 0) ++ahead;
  for (int k = 0; k < ahead; ++k) r->units[size_t(k)].wait_unit_prev = latest_overlapping(r->units, n, r->units[size_t(k)]);
  r->read_ahead_units = ahead;
}

}  // namespace

int latest_overlapping(const std::vector<ReadUnit>& units, int before, const ReadUnit& u) {
  for (int v = before; v-- > 0;) {
    const ReadUnit& o = units[size_t(v)];
    if (o.staging_offset < u.staging_offset + u.bytes && u.staging_offset < o.staging_offset + o.bytes) return v;
  }
  return -1;
}

void plan_read_ahead(const ExecutionPlan& plan, ReadPlan* r) {
  r->read_ahead_units = 0;
  for (ReadUnit& u : r->units) u.wait_layer_prev = u.wait_unit_prev = -1;
  if (!r->two_stage) return plan_read_ahead_three_stage(r);
  if (r->layer_releases.size() != plan.steps.size()) return;
  const int n = int(r->units.size());
  for (const ReadUnit& u : r->units) {  // a plan read from JSON is checked before it is trusted
    if (u.last_blob < 0 || size_t(u.last_blob) >= plan.weights.size()) return;
    const int layer = plan.weights[size_t(u.last_blob)].step;
    if (layer < 0 || size_t(layer) >= plan.steps.size()) return;
  }
  // The leading units that overlap nothing earlier in their inference wait, when read for
  // the next inference, for the last reader of the previous inference's latest unit
  // overlapping them (blobs are read by their own layer only; layers finish in order).
  int ahead = 0;
  while (ahead < n && r->units[size_t(ahead)].wait_layer < 0) ++ahead;
  for (int k = 0; k < ahead; ++k) {
    ReadUnit& u = r->units[size_t(k)];
    const int v = latest_overlapping(r->units, n, u);  // of the previous inference
    if (v < 0) continue;
    u.wait_layer_prev = plan.weights[size_t(r->units[size_t(v)].last_blob)].step;
    r->layer_releases[size_t(u.wait_layer_prev)] = 1;
  }
  r->read_ahead_units = ahead;
}

CopyProfile storage_copy_profile(const CopyProfile& profile, int64_t block_bytes, int queue_depth) {
  CopyProfile p = profile;
  const StorageProfile disk = profile.storage_or_default();
  for (BandwidthPoint& b : p.pinned) {
    const int64_t block = std::min(b.bytes, block_bytes);
    const int depth = int(std::min<int64_t>(queue_depth, std::max<int64_t>(1, b.bytes / std::max<int64_t>(block, 1))));
    const double gbps = disk.direct_gbps(block, depth);
    if (gbps > 0) b.gbps = std::min(b.gbps, gbps);
  }
  p.name = profile.name + "+storage";
  return p;
}

std::string ReadPlan::to_text() const {
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "read plan: %s, %zu reads of %.2f MiB per inference (largest %.2f MiB), staging %.2f MiB "
                "(minimum %.2f MiB), %d in flight, blocks of %.2f MiB\n",
                two_stage ? "two stages (read -> kernel)" : "three stages (read -> copy -> kernel)", units.size(),
                mib(read_bytes()), mib(largest_unit()), mib(staging_bytes), mib(min_staging_bytes), queue_depth,
                mib(block_bytes));
  std::string s = buf;
  for (const ReadUnit& u : units) {
    std::snprintf(buf, sizeof(buf), "  read %3d: staging [%10lld, +%9lld) blobs %d-%d first layer %d, %d requests%s",
                  u.index, static_cast<long long>(u.staging_offset), static_cast<long long>(u.bytes), u.first_blob,
                  u.last_blob, u.first_layer, u.requests(), u.wait_unit >= 0 || u.wait_layer >= 0 ? ", after " : "");
    s += buf;
    if (u.wait_unit >= 0) s += "copy " + std::to_string(u.wait_unit);
    if (u.wait_layer >= 0) s += "layer " + std::to_string(u.wait_layer);
    if (u.index < read_ahead_units) {
      const int prev = wait_prev(u);
      s += prev < 0 ? ", read ahead"
                    : std::string(", read ahead after ") + (two_stage ? "layer " : "copy ") + std::to_string(prev) +
                          " of the previous inference";
    }
    s += "\n";
  }
  return s;
}

}  // namespace dlr
