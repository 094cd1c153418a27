// simulate(): a discrete-event model of one streamed inference (simulator.h).
//
// Three actors: the host walks plan.order; the copy engine runs copies FIFO in issue
// order, one at a time; the compute stream runs layers in launch order. Both GPU
// resources are FIFO and non-preemptive, so every event time follows from earlier
// events only: a copy starts at max(issued, previous copy end, end of the layers it
// waits on), a layer at max(launched, previous layer end, end of the unit it waits
// on). Every dependency of a correct plan points at work issued earlier, so walking
// the host order once and timing each action when it is issued is an exact
// discrete-event simulation. A broken plan may wait on work not issued yet; CUDA
// treats cudaStreamWaitEvent on an unrecorded event as no wait, and so does the
// model (the checks then report the hazard).
#include "runtime/streaming/simulator.h"

#include "loaders/network_desc.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

namespace dlr {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kEps = 1e-12;

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6f", ms);
  return buf;
}

// Peak of the sum of `bytes` over intervals [start, end); an interval ending at t does
// not overlap one starting at t.
int64_t peak_in_use(std::vector<std::pair<double, double>> intervals, int64_t bytes) {
  std::vector<std::pair<double, int>> ev;
  for (const auto& iv : intervals) {
    ev.push_back({iv.first, +1});
    ev.push_back({iv.second, -1});
  }
  std::sort(ev.begin(), ev.end());  // at equal times -1 sorts before +1
  int64_t cur = 0, peak = 0;
  for (const auto& e : ev) {
    cur += e.second * bytes;
    peak = std::max(peak, cur);
  }
  return peak;
}

// The leading units landed before the inference: the prefetch units, cut at the first
// whose cumulative bytes exceed options.prefetch_limit_bytes (when >= 0).
int prefetched_units(const StreamPlan& stream, const SimOptions& options, bool reads) {
  if (!options.prefetched || reads) return 0;
  return stream.prefetch_units_within(options.prefetch_limit_bytes);
}

}  // namespace

SimResult simulate(const ExecutionPlan& plan, const StreamPlan& stream, const CopyProfile& profile,
                   const std::vector<double>& layer_ms, const SimOptions& options) {
  const int n_steps = int(plan.steps.size());
  const int n_units = int(stream.units.size());
  DLR_ASSERT(layer_ms.size() == plan.steps.size());
  DLR_ASSERT(stream.blob_last_unit.size() == plan.weights.size());
  SimResult r;
  auto violation = [&](const std::string& v) {
    if (options.check) r.violations.push_back(v);
  };
  r.layer_start_ms.assign(size_t(n_steps), 0);
  r.layer_end_ms.assign(size_t(n_steps), 0);
  // Resident units were copied at open: ready at time 0, nothing copied per inference.
  r.copy_start_ms.assign(size_t(n_units), stream.resident ? 0.0 : kInf);
  r.copy_end_ms.assign(size_t(n_units), stream.resident ? 0.0 : kInf);
  std::vector<char> launched(size_t(n_steps), 0);
  std::vector<char> issued(size_t(n_units), 0);

  const double call_ms = profile.call_us * 1e-3;
  const double launch_ms = options.launch_us * 1e-3;
  double host = 0;             // host clock
  double copy_free = 0;        // copy engine: end of the last issued copy
  double compute_free = 0;     // compute stream: end of the last launched layer
  int last_layer = -1;         // last launched layer
  std::vector<int> fifo;       // issued copies in issue order; [oldest, end) may be unfinished
  size_t oldest = 0;
  const ReadPlan* reads = options.reads && options.read_ms && !stream.resident ? options.reads : nullptr;
  if (reads && reads->units.size() != size_t(n_units)) {
    violation("reads: " + std::to_string(reads->units.size()) + " read units for " + std::to_string(n_units) + " copies");
    reads = nullptr;
  }
  if (reads) {
    r.read_start_ms.assign(size_t(n_units), kInf);
    r.read_end_ms.assign(size_t(n_units), kInf);
  }
  double reader_free = 0;  // the reader: end of the last read
  // Prefetched units: on the device before the inference starts.
  const int prefetched = prefetched_units(stream, options, reads != nullptr);
  for (int u = 0; u < prefetched; ++u) {
    r.copy_start_ms[size_t(u)] = r.copy_end_ms[size_t(u)] = 0;
    issued[size_t(u)] = 1;
  }

  for (const StreamAction& a : stream.order) {
    if (a.kind == StreamAction::Kind::kCopy) {
      const int u = a.index;
      if (u < 0 || u >= n_units) {
        violation("order: copy of unit " + std::to_string(u) + " does not exist");
        continue;
      }
      if (stream.resident) violation("resident plan copies unit " + std::to_string(u) + " during an inference");
      if (u < prefetched) continue;  // copied before the inference
      if (issued[size_t(u)]) {
        violation("order: unit " + std::to_string(u) + " is enqueued twice");
        continue;
      }
      const int64_t bytes = stream.units[size_t(u)].bytes;
      const int depth = profile.queue_depth(bytes);
      if (reads) {  // the read feeding this copy, then the host waits for it
        const ReadUnit& ru = reads->units[size_t(u)];
        double rs = reader_free;
        if (ru.wait_unit >= 0) {
          if (ru.wait_unit >= u || !issued[size_t(ru.wait_unit)])
            violation("read " + std::to_string(u) + " waits for copy " + std::to_string(ru.wait_unit) +
                      ", not enqueued before it");
          else
            rs = std::max(rs, r.copy_end_ms[size_t(ru.wait_unit)]);
        }
        r.read_start_ms[size_t(u)] = rs;
        r.read_end_ms[size_t(u)] = reader_free = rs + options.read_ms(ru.bytes);
        host = std::max(host, r.read_end_ms[size_t(u)]);
      }
      // Block while the queue is full (depth 0: until it is empty). FIFO copies end in
      // issue order, so the oldest unfinished copy is the next to leave the queue.
      const double t0 = host;
      auto drop_finished = [&]() {
        while (oldest < fifo.size() && r.copy_end_ms[size_t(fifo[oldest])] <= host) ++oldest;
      };
      drop_finished();
      const size_t cap = depth > 0 ? size_t(depth) : 1;  // depth 0: wait until the queue is empty
      while (fifo.size() - oldest >= cap) {
        host = r.copy_end_ms[size_t(fifo[oldest])];
        drop_finished();
      }
      r.host_blocked_ms += host - t0;
      host += call_ms;  // the copy is in the stream when the call returns
      double start = std::max(host, copy_free);
      for (int w : stream.unit_waits[size_t(u)]) {
        if (w < 0 || w >= n_steps || !launched[size_t(w)]) {
          violation("order: unit " + std::to_string(u) + " is enqueued before layer " + std::to_string(w) +
                    " it waits on");
          continue;  // an unrecorded event: the GPU does not wait
        }
        start = std::max(start, r.layer_end_ms[size_t(w)]);
      }
      r.copy_start_ms[size_t(u)] = start;
      r.copy_end_ms[size_t(u)] = start + profile.copy_ms(bytes);
      copy_free = r.copy_end_ms[size_t(u)];
      issued[size_t(u)] = 1;
      fifo.push_back(u);
      const int queued = int(fifo.size() - oldest);
      r.max_queued_copies = std::max(r.max_queued_copies, queued);
      if (queued > std::max(depth, 1))
        violation("unit " + std::to_string(u) + ": " + std::to_string(queued) + " copies queued, profile depth " +
                  std::to_string(depth));
      continue;
    }

    const int l = a.index;
    if (l < 0 || l >= n_steps) {
      violation("order: layer " + std::to_string(l) + " does not exist");
      continue;
    }
    if (launched[size_t(l)]) {
      violation("order: layer " + std::to_string(l) + " is launched twice");
      continue;
    }
    if (l <= last_layer)
      violation("order: layer " + std::to_string(l) + " is launched after layer " + std::to_string(last_layer));
    const Step& st = plan.steps[size_t(l)];
    launched[size_t(l)] = 1;
    last_layer = std::max(last_layer, l);
    if (st.no_op && st.copies.empty()) {  // nothing reaches the GPU
      r.layer_start_ms[size_t(l)] = r.layer_end_ms[size_t(l)] = std::max(host, compute_free);
      continue;
    }
    host += launch_ms;
    const double free_at = std::max(host, compute_free);
    double start = free_at;
    if (st.weight >= 0 && !stream.resident) {
      const int u = stream.blob_last_unit[size_t(st.weight)];
      if (u >= 0 && u < n_units && issued[size_t(u)]) start = std::max(start, r.copy_end_ms[size_t(u)]);
      // (a unit not enqueued yet: an unrecorded event, no wait; the check below reports it)
    }
    r.stall_ms += start - free_at;
    r.layer_start_ms[size_t(l)] = start;
    r.layer_end_ms[size_t(l)] = start + layer_ms[size_t(l)];
    compute_free = r.layer_end_ms[size_t(l)];
  }

  for (int l = 0; l < n_steps; ++l)
    if (!launched[size_t(l)]) violation("order: layer " + std::to_string(l) + " is never launched");
  if (!stream.resident)
    for (int u = 0; u < n_units; ++u)
      if (!issued[size_t(u)]) violation("order: unit " + std::to_string(u) + " is never enqueued");

  for (int l = 0; l < n_steps; ++l)
    if (!(plan.steps[size_t(l)].no_op && plan.steps[size_t(l)].copies.empty()))
      r.latency_ms = std::max(r.latency_ms, r.layer_end_ms[size_t(l)]);
  for (int u = 0; u < n_units; ++u)
    if (issued[size_t(u)]) r.latency_ms = std::max(r.latency_ms, r.copy_end_ms[size_t(u)]);

  // Pool occupancy: a group's slot is in use from its first copy start to its last
  // reader's end (readers taken from the blobs, not from WeightGroup::last_layer).
  const int n_groups = int(stream.groups.size());
  std::vector<double> group_first_copy(size_t(n_groups), kInf);
  std::vector<double> group_readers_end(size_t(n_groups), 0);
  for (const TransferUnit& tu : stream.units)
    if (!stream.resident && tu.group >= 0 && tu.group < n_groups)
      group_first_copy[size_t(tu.group)] = std::min(group_first_copy[size_t(tu.group)], r.copy_start_ms[size_t(tu.index)]);
  for (int g = 0; g < n_groups; ++g)
    for (int b = stream.groups[size_t(g)].first_blob; b <= stream.groups[size_t(g)].last_blob; ++b)
      group_readers_end[size_t(g)] =
          std::max(group_readers_end[size_t(g)], r.layer_end_ms[size_t(plan.weights[size_t(b)].layer)]);
  auto blob_reader_end = [&](int b) { return r.layer_end_ms[size_t(plan.weights[size_t(b)].layer)]; };
  if (stream.resident) {
    r.max_pool_bytes_in_use = stream.pool_bytes;
  } else if (stream.layout == PoolLayout::kRing) {
    // Ring: a byte is in use from the start of the copy writing it to its reader's end,
    // so every (unit, blob) overlap holds its bytes over that interval.
    std::vector<std::pair<double, int64_t>> ev;  // (time, +-bytes)
    const std::vector<int64_t> host_offset =
        stream.blob_host_offset.size() == plan.weights.size() ? stream.blob_host_offset : blob_host_offsets(plan);
    for (const TransferUnit& tu : stream.units) {
      if (!issued[size_t(tu.index)] || tu.in_arena) continue;  // staged: arena bytes, not the pool's
      for (int b = tu.first_blob; b <= tu.last_blob; ++b) {
        if (!stream.in_ring(b)) continue;
        const int64_t lo = std::max(tu.host_offset, host_offset[size_t(b)]);
        const int64_t hi = std::min(tu.host_offset + tu.bytes, host_offset[size_t(b)] + plan.weights[size_t(b)].bytes);
        if (hi <= lo) continue;
        ev.push_back({r.copy_start_ms[size_t(tu.index)], hi - lo});
        ev.push_back({blob_reader_end(b), -(hi - lo)});
      }
    }
    std::sort(ev.begin(), ev.end());  // at equal times releases (negative) sort first
    int64_t cur = 0;
    for (const auto& e : ev) {
      cur += e.second;
      r.max_pool_bytes_in_use = std::max(r.max_pool_bytes_in_use, cur);
    }
  } else {
    std::vector<std::pair<double, double>> intervals;
    for (int g = 0; g < n_groups; ++g)
      if (group_first_copy[size_t(g)] < kInf)
        intervals.push_back({group_first_copy[size_t(g)], group_readers_end[size_t(g)]});
    r.max_pool_bytes_in_use = peak_in_use(std::move(intervals), stream.slot_bytes);
  }
  if (!options.check) return r;

  if (r.max_pool_bytes_in_use > stream.pool_bytes)
    violation("pool: " + std::to_string(r.max_pool_bytes_in_use) + " bytes in use, pool has " +
              std::to_string(stream.pool_bytes));

  if (!stream.resident) {
    // RAW: a kernel starts only after every unit overlapping its blob has landed.
    std::vector<double> blob_ready(plan.weights.size(), 0);
    for (const TransferUnit& tu : stream.units)
      for (int b = tu.first_blob; b <= tu.last_blob; ++b)
        if (!stream.is_resident(b))
          blob_ready[size_t(b)] = std::max(blob_ready[size_t(b)], r.copy_end_ms[size_t(tu.index)]);
    for (int l = 0; l < n_steps; ++l) {
      const Step& st = plan.steps[size_t(l)];
      if (st.weight < 0 || st.no_op || !launched[size_t(l)]) continue;
      if (r.layer_start_ms[size_t(l)] + kEps < blob_ready[size_t(st.weight)])
        violation("layer " + std::to_string(l) + " starts at " + ms_text(r.layer_start_ms[size_t(l)]) +
                  " ms before its weights land at " + ms_text(blob_ready[size_t(st.weight)]) + " ms");
    }
    // WAR, from the geometry alone: a copy starts only after every earlier blob whose
    // device bytes it overwrites has been read (ring offsets compared modulo the ring;
    // slots by address).
    const int64_t ring = stream.ring_bytes();
    auto overlaps = [&](int64_t a0, int64_t an, int64_t b0, int64_t bn) {
      if (ring == 0) return a0 < b0 + bn && b0 < a0 + an;
      // Both ranges are shorter than the ring; compare each against the other shifted by +-ring.
      for (int64_t shift : {-ring, int64_t(0), ring})
        if (a0 < b0 + shift + bn && b0 + shift < a0 + an) return true;
      return false;
    };
    for (const TransferUnit& tu : stream.units) {
      if (!issued[size_t(tu.index)] || tu.in_arena) continue;
      for (int b = 0; b < tu.first_blob; ++b) {
        if (!stream.in_ring(b)) continue;  // its own region (resident) or arena bytes (staged)
        if (!overlaps(tu.pool_offset, tu.bytes, stream.blob_pool_offset[size_t(b)], plan.weights[size_t(b)].bytes))
          continue;
        if (r.copy_start_ms[size_t(tu.index)] + kEps < blob_reader_end(b))
          violation("unit " + std::to_string(tu.index) + " overwrites blob " + std::to_string(b) + " (layer " +
                    std::to_string(plan.weights[size_t(b)].layer) + ") at " +
                    ms_text(r.copy_start_ms[size_t(tu.index)]) + " ms while it is read until " +
                    ms_text(blob_reader_end(b)) + " ms");
      }
    }
    // Staged blobs (arena bytes): nothing live there while the blob is, i.e. from its
    // copy's start to its reader's end: no activation buffer overlapping its bytes is
    // written before that reader and read at or after it, every one written before it
    // has been read for the last time when the copy starts, and so has every staged blob
    // before it on the same bytes. (Needs the plan's buffers: skipped for a plan without.)
    for (const TransferUnit& tu : stream.units) {
      if (!tu.in_arena || !issued[size_t(tu.index)]) continue;
      const int b = tu.first_blob;
      const int reader = plan.weights[size_t(b)].layer;
      const double start = r.copy_start_ms[size_t(tu.index)];
      auto space = [&](int64_t off, int64_t bytes) { return off < tu.pool_offset + tu.bytes && tu.pool_offset < off + bytes; };
      for (const Buffer& buf : plan.buffers) {
        if (!space(buf.offset, buf.bytes) || buf.first_step > reader) continue;
        if (buf.last_step >= reader)
          violation("unit " + std::to_string(tu.index) + " stages blob " + std::to_string(b) + " in arena bytes of buffer " +
                    std::to_string(buf.id) + ", live until step " + std::to_string(buf.last_step) + " (its reader is step " +
                    std::to_string(reader) + ")");
        else if (buf.last_step >= 0 && start + kEps < r.layer_end_ms[size_t(buf.last_step)])
          violation("unit " + std::to_string(tu.index) + " stages blob " + std::to_string(b) + " at " + ms_text(start) +
                    " ms over buffer " + std::to_string(buf.id) + ", read until " +
                    ms_text(r.layer_end_ms[size_t(buf.last_step)]) + " ms");
      }
      for (const TransferUnit& o : stream.units) {
        if (!o.in_arena || o.first_blob >= b || !space(o.pool_offset, o.bytes)) continue;
        if (start + kEps < blob_reader_end(o.first_blob))
          violation("unit " + std::to_string(tu.index) + " stages blob " + std::to_string(b) + " over staged blob " +
                    std::to_string(o.first_blob) + " while it is read");
      }
    }
    // WAR, slots: a copy into a slot starts only after the last reader of the slot's
    // previous group has finished.
    std::vector<int> prev_in_slot(size_t(n_groups), -1);
    std::vector<int> last_of_slot;
    for (int g = 0; g < n_groups; ++g) {
      const int slot = stream.groups[size_t(g)].slot;
      if (slot < 0) continue;
      if (size_t(slot) >= last_of_slot.size()) last_of_slot.resize(size_t(slot) + 1, -1);
      prev_in_slot[size_t(g)] = last_of_slot[size_t(slot)];
      last_of_slot[size_t(slot)] = g;
    }
    for (const TransferUnit& tu : stream.units) {
      if (tu.group < 0 || tu.group >= n_groups || !issued[size_t(tu.index)]) continue;
      const int prev = prev_in_slot[size_t(tu.group)];
      if (prev < 0) continue;
      if (r.copy_start_ms[size_t(tu.index)] + kEps < group_readers_end[size_t(prev)])
        violation("unit " + std::to_string(tu.index) + " overwrites slot " +
                  std::to_string(stream.groups[size_t(tu.group)].slot) + " at " +
                  ms_text(r.copy_start_ms[size_t(tu.index)]) + " ms while group " + std::to_string(prev) +
                  " is read until " + ms_text(group_readers_end[size_t(prev)]) + " ms");
    }
  }
  return r;
}

SimResult simulate_two_stage(const ExecutionPlan& plan, const ReadPlan& reads, const std::vector<double>& layer_ms,
                             const std::function<double(int64_t bytes)>& read_ms) {
  return simulate_two_stage(plan, reads, layer_ms, read_ms, TwoStageSimOptions{});
}

SimResult simulate_two_stage(const ExecutionPlan& plan, const ReadPlan& reads, const std::vector<double>& layer_ms,
                             const std::function<double(int64_t bytes)>& read_ms, const TwoStageSimOptions& options) {
  const int n_steps = int(plan.steps.size());
  const int n_units = int(reads.units.size());
  const int n_inf = std::max(1, options.inferences);
  DLR_ASSERT(layer_ms.size() == plan.steps.size());
  SimResult r;
  r.layer_start_ms.assign(size_t(n_steps), 0);
  r.layer_end_ms.assign(size_t(n_steps), 0);
  r.read_start_ms.assign(size_t(n_units), kInf);
  r.read_end_ms.assign(size_t(n_units), kInf);
  if (reads.layer_read_unit.size() != plan.steps.size()) {
    r.violations.push_back("reads: " + std::to_string(reads.layer_read_unit.size()) + " layer entries for " +
                           std::to_string(n_steps) + " steps");
    return r;
  }
  // Absolute times, per inference.
  const size_t ni = size_t(n_inf);
  std::vector<std::vector<double>> l_start(ni), l_end(ni), rd_start(ni), rd_end(ni);
  std::vector<double> inf_start(ni, 0.0), stall(ni, 0.0);
  const int ahead = options.read_ahead ? std::max(0, std::min(reads.read_ahead_units, n_units - 1)) : 0;
  auto tag = [&](int g) { return n_inf > 1 ? "inference " + std::to_string(g + 1) + ": " : std::string(); };
  double reader_free = 0, compute_free = 0;
  for (int g = 0; g < n_inf; ++g) {
    l_start[size_t(g)].assign(size_t(n_steps), 0);
    l_end[size_t(g)].assign(size_t(n_steps), 0);
    rd_start[size_t(g)].assign(size_t(n_units), kInf);
    rd_end[size_t(g)].assign(size_t(n_units), kInf);
    // The engine starts inference g once inference g - 1's layers and reads are done.
    inf_start[size_t(g)] = g == 0 ? 0.0 : std::max(compute_free, reader_free);
    std::vector<char> layer_done(size_t(n_steps), 0);
    int next_read = 0;
    // Reads are issued in order by one reader, each once the previous one has landed and
    // its wait has ended. A correct plan's wait_layer precedes every layer needing the
    // unit, so reads are timed lazily, when the first layer needing one is reached; a
    // wait on a layer not finished yet is a violation and counts as no wait.
    auto read_up_to = [&](int u) {
      for (; next_read <= u && next_read < n_units; ++next_read) {
        const ReadUnit& ru = reads.units[size_t(next_read)];
        double rs = reader_free;
        if (g > 0 && next_read < ahead) {  // read ahead, during inference g - 1
          if (ru.wait_layer_prev >= n_steps)
            r.violations.push_back(tag(g) + "read " + std::to_string(next_read) + " waits for layer " +
                                   std::to_string(ru.wait_layer_prev) + ", which does not exist");
          else if (ru.wait_layer_prev >= 0)
            rs = std::max(rs, l_end[size_t(g - 1)][size_t(ru.wait_layer_prev)]);
        } else {
          rs = std::max(rs, inf_start[size_t(g)]);
          if (ru.wait_layer >= 0) {
            if (ru.wait_layer >= n_steps || !layer_done[size_t(ru.wait_layer)])
              r.violations.push_back(tag(g) + "read " + std::to_string(next_read) + " waits for layer " +
                                     std::to_string(ru.wait_layer) + ", not finished before the read is needed");
            else
              rs = std::max(rs, l_end[size_t(g)][size_t(ru.wait_layer)]);
          }
        }
        rd_start[size_t(g)][size_t(next_read)] = rs;
        rd_end[size_t(g)][size_t(next_read)] = reader_free = rs + read_ms(ru.bytes);
      }
    };
    compute_free = inf_start[size_t(g)];
    for (int l = 0; l < n_steps; ++l) {
      double start = compute_free;
      const int u = reads.layer_read_unit[size_t(l)];
      if (u >= n_units) {
        r.violations.push_back(tag(g) + "layer " + std::to_string(l) + " needs read " + std::to_string(u) +
                               ", which does not exist");
      } else if (u >= 0) {
        read_up_to(u);
        if (rd_end[size_t(g)][size_t(u)] > start) {
          stall[size_t(g)] += rd_end[size_t(g)][size_t(u)] - start;
          start = rd_end[size_t(g)][size_t(u)];
        }
      }
      l_start[size_t(g)][size_t(l)] = start;
      l_end[size_t(g)][size_t(l)] = compute_free = start + layer_ms[size_t(l)];
      layer_done[size_t(l)] = 1;
    }
    read_up_to(n_units - 1);  // reads no layer needs still run (and are reported by the checks below)
  }

  // Every weighted layer reads its blob from a unit that brings it.
  for (size_t b = 0; b < plan.weights.size(); ++b) {
    const int layer = plan.weights[b].layer;
    const int u = b < reads.blob_read_unit.size() ? reads.blob_read_unit[b] : -1;
    if (u < 0) continue;  // resident
    if (layer < 0 || layer >= n_steps || reads.layer_read_unit[size_t(layer)] != u)
      r.violations.push_back("blob " + std::to_string(b) + " comes with read " + std::to_string(u) + " but layer " +
                             std::to_string(layer) + " waits for another read");
  }
  // WAR: a read overwrites staging bytes only after every layer reading a blob of an
  // earlier, overlapping unit (of its own inference, or any unit of the previous one)
  // has ended (blobs are read by their own layer only).
  for (int g = 0; g < n_inf; ++g)
    for (int u = 0; u < n_units; ++u) {
      const ReadUnit& a = reads.units[size_t(u)];
      for (int pg = std::max(0, g - 1); pg <= g; ++pg)
        for (int v = 0; v < (pg == g ? u : n_units); ++v) {
          const ReadUnit& o = reads.units[size_t(v)];
          if (a.staging_offset >= o.staging_offset + o.bytes || o.staging_offset >= a.staging_offset + a.bytes) continue;
          for (int b = o.first_blob; b <= o.last_blob; ++b) {
            if (size_t(b) >= reads.blob_read_unit.size() || reads.blob_read_unit[size_t(b)] != v) continue;
            const int layer = plan.weights[size_t(b)].layer;
            if (layer < 0 || layer >= n_steps) continue;  // reported above
            const double start = rd_start[size_t(g)][size_t(u)], until = l_end[size_t(pg)][size_t(layer)];
            if (start + kEps < until)
              r.violations.push_back(tag(g) + "read " + std::to_string(u) + " overwrites blob " + std::to_string(b) +
                                     " (layer " + std::to_string(layer) + (pg < g ? " of the previous inference" : "") +
                                     ") at " + ms_text(start - inf_start[size_t(g)]) + " ms while it is read until " +
                                     ms_text(until - inf_start[size_t(g)]) + " ms");
          }
        }
    }
  // The last inference, from its start.
  const int last = n_inf - 1;
  const double t0 = inf_start[size_t(last)];
  for (int l = 0; l < n_steps; ++l) {
    r.layer_start_ms[size_t(l)] = l_start[size_t(last)][size_t(l)] - t0;
    r.layer_end_ms[size_t(l)] = l_end[size_t(last)][size_t(l)] - t0;
  }
  for (int u = 0; u < n_units; ++u) {
    r.read_start_ms[size_t(u)] = rd_start[size_t(last)][size_t(u)] - t0;
    r.read_end_ms[size_t(u)] = rd_end[size_t(last)][size_t(u)] - t0;
  }
  r.stall_ms = stall[size_t(last)];
  r.latency_ms = std::max(compute_free, n_units > 0 ? reader_free : 0.0) - t0;
  return r;
}

std::vector<double> model_layer_ms(const NetworkDesc& net, const ExecutionPlan& plan, double gflops_per_s,
                                   double mem_gbps, double kernel_us) {
  std::vector<double> ms(plan.steps.size(), 0.0);
  const double batch = double(std::max(1, plan.options.batch));
  auto view_bytes = [&](const ViewRef& v) {
    const Buffer& b = plan.buffer(v);
    return double(v.c) * b.h * b.w * double(dtype_size(b.dtype)) * batch;
  };
  for (const Step& st : plan.steps) {
    if (st.no_op && st.copies.empty()) continue;
    double t = kernel_us * 1e-3;
    if (st.kind == LayerKind::kConv) {
      t += net.layers[size_t(st.layer)].gflops() * batch / gflops_per_s * 1e3;
    } else {
      double bytes = 0;
      if (st.kind == LayerKind::kRoute) {
        for (const auto& c : st.copies) bytes += 2 * view_bytes(c.first);
      } else {
        for (const ViewRef& v : st.inputs) bytes += view_bytes(v);
        bytes += view_bytes(st.output);
      }
      t += bytes / (mem_gbps * 1e9) * 1e3;
    }
    ms[size_t(st.layer)] = t;
  }
  return ms;
}

}  // namespace dlr
