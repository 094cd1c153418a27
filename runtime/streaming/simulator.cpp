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

#include "runtime/compile/dequant_buffers.h"
#include "runtime/streaming/simulator_detail.h"

#include <algorithm>
#include <string>
#include <utility>

namespace dlr {
namespace {

using sim_detail::kEps;
using sim_detail::kInf;
using sim_detail::ms_text;

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

// Units copied under the tail for the next inference (SimOptions::tail).
int tail_units(const StreamPlan& stream, const SimOptions& options, bool reads) {
  return options.tail && !options.prefetched && !reads && !stream.resident ? stream.tail_units : 0;
}

// One simulate() call: its inputs (borrowed for the call), the result it fills and
// the clocks of the host, the reader, the copy engine and the compute stream (ms).
// run() walks the host order once, then derives the latency and the pool occupancy
// and, with options.check, runs the safety checks in a fixed order.
class Simulation {
 public:
  Simulation(const ExecutionPlan& plan, const StreamPlan& stream, const CopyProfile& profile,
             const std::vector<double>& layer_ms, const SimOptions& options)
      : m_plan(plan), m_stream(stream), m_profile(profile), m_layer_ms(layer_ms), m_options(options),
        m_steps(int(plan.steps.size())), m_units(int(stream.units.size())), m_groups(int(stream.groups.size())) {}

  SimResult run();

 private:
  void violation(const std::string& v) {
    if (m_options.check) m_r.violations.push_back(v);
  }
  void start();
  void issue_copy(int u);
  void read_for_copy(int u);
  void wait_for_queue(int depth);
  void launch_layer(int l);
  void start_expansion();
  double expanded_at(int l);
  void expand_batch(int need);
  double copy_start(const int* waits, size_t n_waits, int unit, bool tail);
  void issue_tail();
  void check_all_issued();
  void finish_latency();
  void group_intervals();
  int64_t ring_peak_in_use() const;
  void pool_in_use();
  void check_raw();
  void check_war_geometry();
  void check_staged();
  void check_staged_blob(const TransferUnit& tu, int b);
  void check_war_slots();
  void check_war_tail();
  double blob_reader_end(int b) const { return m_r.layer_end_ms[size_t(m_plan.weights[size_t(b)].step)]; }

  const ExecutionPlan& m_plan;
  const StreamPlan& m_stream;
  const CopyProfile& m_profile;
  const std::vector<double>& m_layer_ms;
  const SimOptions& m_options;
  const int m_steps, m_units, m_groups;
  SimResult m_r;
  std::vector<char> m_launched, m_issued;
  const ReadPlan* m_reads = nullptr;  // nullptr: no reads simulated
  int m_prefetched = 0;
  int m_tail = 0;             // tail copies made for the next inference
  double m_host = 0;          // host clock
  double m_copy_free = 0;     // copy engine: end of the last issued copy
  double m_compute_free = 0;  // compute stream: end of the last launched layer
  double m_reader_free = 0;   // the reader: end of the last read
  int m_last_layer = -1;      // last launched layer
  std::vector<int> m_fifo;    // issued copies in issue order; [m_oldest, end) may be unfinished
  size_t m_oldest = 0;
  // Per group: the start of its first copy and the end of its last reader.
  std::vector<double> m_group_first_copy, m_group_readers_end;
  // The expansion stage (SimOptions::expand_ms): the int8 steps (entries) and their
  // groups, the next entry not expanded yet, per step when it was ready to run but for
  // its expansion, and the stage's end of its last batch (a batch's end per step:
  // SimResult::expand_end_ms).
  bool m_expanding = false;
  ExpansionEntries m_dq;
  size_t m_dq_next = 0;
  std::vector<double> m_reached;
  double m_expand_free = 0;
};

SimResult Simulation::run() {
  DLR_ASSERT(m_layer_ms.size() == m_plan.steps.size());
  DLR_ASSERT(m_stream.blob_last_unit.size() == m_plan.weights.size());
  start();
  for (const StreamAction& a : m_stream.order) {
    if (a.kind == StreamAction::Kind::kCopy)
      issue_copy(a.index);
    else
      launch_layer(a.index);
  }
  issue_tail();
  check_all_issued();
  finish_latency();
  group_intervals();
  pool_in_use();
  if (!m_options.check) return std::move(m_r);
  if (m_r.max_pool_bytes_in_use > m_stream.pool_bytes)
    violation("pool: " + std::to_string(m_r.max_pool_bytes_in_use) + " bytes in use, pool has " +
              std::to_string(m_stream.pool_bytes));
  if (!m_stream.resident) {
    check_raw();
    check_war_geometry();
    check_staged();
    check_war_slots();
    check_war_tail();
  }
  return std::move(m_r);
}

// Clears the result, chooses the reads and lands the prefetched units at time 0.
void Simulation::start() {
  m_r.layer_start_ms.assign(size_t(m_steps), 0);
  m_r.layer_end_ms.assign(size_t(m_steps), 0);
  // Resident units were copied at open: ready at time 0, nothing copied per inference.
  m_r.copy_start_ms.assign(size_t(m_units), m_stream.resident ? 0.0 : kInf);
  m_r.copy_end_ms.assign(size_t(m_units), m_stream.resident ? 0.0 : kInf);
  m_launched.assign(size_t(m_steps), 0);
  m_issued.assign(size_t(m_units), 0);
  m_reads = m_options.reads && m_options.read_ms && !m_stream.resident ? m_options.reads : nullptr;
  if (m_reads && m_reads->units.size() != size_t(m_units)) {
    violation("reads: " + std::to_string(m_reads->units.size()) + " read units for " + std::to_string(m_units) +
              " copies");
    m_reads = nullptr;
  }
  if (m_reads) {
    m_r.read_start_ms.assign(size_t(m_units), kInf);
    m_r.read_end_ms.assign(size_t(m_units), kInf);
  }
  m_prefetched = prefetched_units(m_stream, m_options, m_reads != nullptr);
  m_tail = tail_units(m_stream, m_options, m_reads != nullptr);
  if (m_tail > 0 && (m_stream.tail_waits.size() != size_t(m_tail) || m_tail > m_units)) {
    violation("tail: " + std::to_string(m_tail) + " units with " + std::to_string(m_stream.tail_waits.size()) +
              " waits");
    m_tail = 0;
  }
  if (m_tail > 0) m_prefetched = m_tail;  // the previous inference's tail copied them
  m_r.tail_copy_start_ms.assign(size_t(m_tail), kInf);
  m_r.tail_copy_end_ms.assign(size_t(m_tail), kInf);
  for (int u = 0; u < m_prefetched; ++u) {
    m_r.copy_start_ms[size_t(u)] = m_r.copy_end_ms[size_t(u)] = 0;
    m_issued[size_t(u)] = 1;
  }
  start_expansion();
}

// The int8 steps and their expansion groups, as the CUDA engine numbers them.
void Simulation::start_expansion() {
  m_expanding = m_options.expand_ms.size() == size_t(m_steps);
  if (!m_options.expand_ms.empty() && !m_expanding)
    violation("expansion: " + std::to_string(m_options.expand_ms.size()) + " expansion times for " +
              std::to_string(m_steps) + " steps");
  if (!m_expanding) return;
  m_dq = expansion_entries(m_plan);
  m_reached.assign(size_t(m_steps), 0);
  m_r.expand_end_ms.assign(size_t(m_steps), 0);
}

// One batch on the expansion stage, from the next entry: the rest of its group up to the
// first entry whose weights land with a later copy than the batch's first entry's (a
// weight in place before the inference, resident or prefetched, lands with none), and
// at least through entry `need`, the step about to run, where the host has not enqueued
// the copies of the group's later weights yet. It starts after the previous batch, once
// the group before has reached its first step (its buffers are free from there:
// runtime/compile/dequant_buffers.h) and once the copies of its weights have landed.
void Simulation::expand_batch(int need) {
  const int k0 = int(m_dq_next);
  const auto group = std::upper_bound(m_dq.group_first.begin(), m_dq.group_first.end(), k0);
  const int end = *group, first = *(group - 1);
  double start = m_expand_free;
  if (first > 0) start = std::max(start, m_reached[size_t(m_dq.steps[size_t(*(group - 2))])]);
  auto copied_in = [&](int k) {  // the unit copied in this inference that lands entry k's weights (-1: none)
    const int w = m_plan.steps[size_t(m_dq.steps[size_t(k)])].weight;
    const int u = m_stream.resident ? -1 : m_stream.blob_last_unit[size_t(w)];
    return u >= m_prefetched && u < m_units ? u : -1;
  };
  const int unit = copied_in(k0);
  int k = k0;
  double ms = 0;
  for (; k < end; ++k) {
    const int u = copied_in(k);
    if (k > k0 && u > unit) break;                             // lands with a later copy: the next batch
    if (u >= 0 && !m_issued[size_t(u)] && k > need) break;    // its copy is not enqueued yet
    if (u >= 0 && m_issued[size_t(u)]) start = std::max(start, m_r.copy_end_ms[size_t(u)]);
    ms += m_options.expand_ms[size_t(m_dq.steps[size_t(k)])];
  }
  m_expand_free = start + ms;
  for (int e = k0; e < k; ++e) m_r.expand_end_ms[size_t(m_dq.steps[size_t(e)])] = m_expand_free;
  m_dq_next = size_t(k);
}

// When step l's weights are expanded (0: nothing to expand), batches issued as needed.
double Simulation::expanded_at(int l) {
  const int k = m_expanding ? m_dq.entry[size_t(l)] : -1;
  if (k < 0) return 0;
  while (m_dq_next <= size_t(k)) expand_batch(k);
  return m_r.expand_end_ms[size_t(l)];
}

// The read feeding copy u; the host then waits for it to land.
void Simulation::read_for_copy(int u) {
  const ReadUnit& ru = m_reads->units[size_t(u)];
  double rs = m_reader_free;
  if (ru.wait_unit >= 0) {
    if (ru.wait_unit >= u || !m_issued[size_t(ru.wait_unit)])
      violation("read " + std::to_string(u) + " waits for copy " + std::to_string(ru.wait_unit) +
                ", not enqueued before it");
    else
      rs = std::max(rs, m_r.copy_end_ms[size_t(ru.wait_unit)]);
  }
  m_r.read_start_ms[size_t(u)] = rs;
  m_r.read_end_ms[size_t(u)] = m_reader_free = rs + m_options.read_ms(ru.bytes);
  m_host = std::max(m_host, m_r.read_end_ms[size_t(u)]);
}

// Blocks the host while the copy queue is full (depth 0: until it is empty). FIFO
// copies end in issue order, so the oldest unfinished copy is the next to leave.
void Simulation::wait_for_queue(int depth) {
  const double t0 = m_host;
  auto drop_finished = [&]() {
    while (m_oldest < m_fifo.size() && m_r.copy_end_ms[size_t(m_fifo[m_oldest])] <= m_host) ++m_oldest;
  };
  drop_finished();
  const size_t cap = depth > 0 ? size_t(depth) : 1;  // depth 0: wait until the queue is empty
  while (m_fifo.size() - m_oldest >= cap) {
    m_host = m_r.copy_end_ms[size_t(m_fifo[m_oldest])];
    drop_finished();
  }
  m_r.host_blocked_ms += m_host - t0;
}

void Simulation::issue_copy(int u) {
  if (u < 0 || u >= m_units) {
    violation("order: copy of unit " + std::to_string(u) + " does not exist");
    return;
  }
  if (m_stream.resident) violation("resident plan copies unit " + std::to_string(u) + " during an inference");
  if (u < m_prefetched) return;  // copied before the inference
  if (m_issued[size_t(u)]) {
    violation("order: unit " + std::to_string(u) + " is enqueued twice");
    return;
  }
  const int64_t bytes = m_stream.units[size_t(u)].bytes;
  const int depth = m_profile.queue_depth(bytes);
  if (m_reads) read_for_copy(u);
  wait_for_queue(depth);
  const std::vector<int>& waits = m_stream.unit_waits[size_t(u)];
  const double start = copy_start(waits.data(), waits.size(), u, false);
  m_r.copy_start_ms[size_t(u)] = start;
  m_r.copy_end_ms[size_t(u)] = start + m_profile.copy_ms(bytes);
  m_copy_free = m_r.copy_end_ms[size_t(u)];
  m_issued[size_t(u)] = 1;
  m_fifo.push_back(u);
  const int queued = int(m_fifo.size() - m_oldest);
  m_r.max_queued_copies = std::max(m_r.max_queued_copies, queued);
  if (queued > std::max(depth, 1))
    violation("unit " + std::to_string(u) + ": " + std::to_string(queued) + " copies queued, profile depth " +
              std::to_string(depth));
}

// The host's copy call (it returns once the copy is in the stream) and the copy's start:
// after the previous copy and the layers it waits on.
double Simulation::copy_start(const int* waits, size_t n_waits, int unit, bool tail) {
  m_host += m_profile.call_us * 1e-3;
  double start = std::max(m_host, m_copy_free);
  for (size_t i = 0; i < n_waits; ++i) {
    const int w = waits[i];
    if (w < 0 || w >= m_steps || !m_launched[size_t(w)]) {
      violation(std::string("order: ") + (tail ? "tail copy of unit " : "unit ") + std::to_string(unit) +
                " is enqueued before layer " + std::to_string(w) + " it waits on");
      continue;  // an unrecorded event: the GPU does not wait
    }
    start = std::max(start, m_r.layer_end_ms[size_t(w)]);
  }
  return start;
}

// The next inference's units [0, m_tail), enqueued after every unit and layer of this
// one (nothing is launched after them, so the host's queue limit delays nothing).
void Simulation::issue_tail() {
  for (int k = 0; k < m_tail; ++k) {
    const int64_t bytes = m_stream.units[size_t(k)].bytes;
    const int w = m_stream.tail_waits[size_t(k)];  // -1: no byte of it is read in this inference
    const double start = copy_start(&w, w < 0 ? 0 : 1, k, true);
    m_r.tail_copy_start_ms[size_t(k)] = start;
    m_r.tail_copy_end_ms[size_t(k)] = m_copy_free = start + m_profile.copy_ms(bytes);
  }
}

void Simulation::launch_layer(int l) {
  if (l < 0 || l >= m_steps) {
    violation("order: layer " + std::to_string(l) + " does not exist");
    return;
  }
  if (m_launched[size_t(l)]) {
    violation("order: layer " + std::to_string(l) + " is launched twice");
    return;
  }
  if (l <= m_last_layer)
    violation("order: layer " + std::to_string(l) + " is launched after layer " + std::to_string(m_last_layer));
  const Step& st = m_plan.steps[size_t(l)];
  m_launched[size_t(l)] = 1;
  m_last_layer = std::max(m_last_layer, l);
  if (st.no_op && st.copies.empty()) {  // nothing reaches the GPU
    m_r.layer_start_ms[size_t(l)] = m_r.layer_end_ms[size_t(l)] = std::max(m_host, m_compute_free);
    return;
  }
  m_host += m_options.launch_us * 1e-3;
  const double free_at = std::max(m_host, m_compute_free);
  double start = free_at;
  if (st.weight >= 0 && !m_stream.resident) {
    const int u = m_stream.blob_last_unit[size_t(st.weight)];
    if (u >= 0 && u < m_units && m_issued[size_t(u)]) start = std::max(start, m_r.copy_end_ms[size_t(u)]);
    // (a unit not enqueued yet: an unrecorded event, no wait; the check below reports it)
  }
  double ms = m_layer_ms[size_t(l)];
  if (m_expanding) {
    m_reached[size_t(l)] = start;
    start = std::max(start, expanded_at(l));
    ms = std::max(0.0, ms - m_options.expand_ms[size_t(l)]);
  }
  m_r.stall_ms += start - free_at;
  m_r.layer_start_ms[size_t(l)] = start;
  m_r.layer_end_ms[size_t(l)] = start + ms;
  m_compute_free = m_r.layer_end_ms[size_t(l)];
}

void Simulation::check_all_issued() {
  for (int l = 0; l < m_steps; ++l)
    if (!m_launched[size_t(l)]) violation("order: layer " + std::to_string(l) + " is never launched");
  if (!m_stream.resident)
    for (int u = 0; u < m_units; ++u)
      if (!m_issued[size_t(u)]) violation("order: unit " + std::to_string(u) + " is never enqueued");
}

void Simulation::finish_latency() {
  for (int l = 0; l < m_steps; ++l)
    if (!(m_plan.steps[size_t(l)].no_op && m_plan.steps[size_t(l)].copies.empty()))
      m_r.latency_ms = std::max(m_r.latency_ms, m_r.layer_end_ms[size_t(l)]);
  for (int u = 0; u < m_units; ++u)
    if (m_issued[size_t(u)]) m_r.latency_ms = std::max(m_r.latency_ms, m_r.copy_end_ms[size_t(u)]);
  for (double end : m_r.tail_copy_end_ms) m_r.latency_ms = std::max(m_r.latency_ms, end);
}

// A group's slot is in use from its first copy start to its last reader's end
// (readers taken from the blobs, not from WeightGroup::last_layer).
void Simulation::group_intervals() {
  m_group_first_copy.assign(size_t(m_groups), kInf);
  m_group_readers_end.assign(size_t(m_groups), 0);
  for (const TransferUnit& tu : m_stream.units)
    if (!m_stream.resident && tu.group >= 0 && tu.group < m_groups)
      m_group_first_copy[size_t(tu.group)] =
          std::min(m_group_first_copy[size_t(tu.group)], m_r.copy_start_ms[size_t(tu.index)]);
  for (int g = 0; g < m_groups; ++g)
    for (int b = m_stream.groups[size_t(g)].first_blob; b <= m_stream.groups[size_t(g)].last_blob; ++b)
      m_group_readers_end[size_t(g)] = std::max(m_group_readers_end[size_t(g)], blob_reader_end(b));
}

// Ring: a byte is in use from the start of the copy writing it to its reader's end,
// so every (unit, blob) overlap holds its bytes over that interval.
int64_t Simulation::ring_peak_in_use() const {
  std::vector<std::pair<double, int64_t>> ev;  // (time, +-bytes)
  const std::vector<int64_t> host_offset = m_stream.blob_host_offset.size() == m_plan.weights.size()
                                               ? m_stream.blob_host_offset
                                               : blob_host_offsets(m_plan);
  for (const TransferUnit& tu : m_stream.units) {
    if (!m_issued[size_t(tu.index)] || tu.in_arena) continue;  // staged: arena bytes, not the pool's
    for (int b = tu.first_blob; b <= tu.last_blob; ++b) {
      if (!m_stream.in_ring(b)) continue;
      const int64_t lo = std::max(tu.host_offset, host_offset[size_t(b)]);
      const int64_t hi =
          std::min(tu.host_offset + tu.bytes, host_offset[size_t(b)] + m_plan.weights[size_t(b)].bytes);
      if (hi <= lo) continue;
      ev.push_back({m_r.copy_start_ms[size_t(tu.index)], hi - lo});
      ev.push_back({blob_reader_end(b), -(hi - lo)});
    }
  }
  // Tail copies hold their bytes from their start into the next inference.
  for (int k = 0; k < m_tail; ++k) {
    ev.push_back({m_r.tail_copy_start_ms[size_t(k)], m_stream.units[size_t(k)].bytes});
    ev.push_back({kInf, -m_stream.units[size_t(k)].bytes});
  }
  std::sort(ev.begin(), ev.end());  // at equal times releases (negative) sort first
  int64_t cur = 0, peak = 0;
  for (const auto& e : ev) {
    cur += e.second;
    peak = std::max(peak, cur);
  }
  return peak;
}

void Simulation::pool_in_use() {
  if (m_stream.resident) {
    m_r.max_pool_bytes_in_use = m_stream.pool_bytes;
  } else if (m_stream.layout == PoolLayout::kRing) {
    m_r.max_pool_bytes_in_use = ring_peak_in_use();
  } else {
    std::vector<std::pair<double, double>> intervals;
    for (int g = 0; g < m_groups; ++g)
      if (m_group_first_copy[size_t(g)] < kInf)
        intervals.push_back({m_group_first_copy[size_t(g)], m_group_readers_end[size_t(g)]});
    m_r.max_pool_bytes_in_use = peak_in_use(std::move(intervals), m_stream.slot_bytes);
  }
}

// RAW: a kernel starts only after every unit overlapping its blob has landed.
void Simulation::check_raw() {
  std::vector<double> blob_ready(m_plan.weights.size(), 0);
  for (const TransferUnit& tu : m_stream.units)
    for (int b = tu.first_blob; b <= tu.last_blob; ++b)
      if (!m_stream.is_resident(b))
        blob_ready[size_t(b)] = std::max(blob_ready[size_t(b)], m_r.copy_end_ms[size_t(tu.index)]);
  for (int l = 0; l < m_steps; ++l) {
    const Step& st = m_plan.steps[size_t(l)];
    if (st.weight < 0 || st.no_op || !m_launched[size_t(l)]) continue;
    if (m_r.layer_start_ms[size_t(l)] + kEps < blob_ready[size_t(st.weight)])
      violation("layer " + std::to_string(l) + " starts at " + ms_text(m_r.layer_start_ms[size_t(l)]) +
                " ms before its weights land at " + ms_text(blob_ready[size_t(st.weight)]) + " ms");
  }
}

// WAR, from the geometry alone: a copy starts only after every earlier blob whose
// device bytes it overwrites has been read (ring offsets compared modulo the ring;
// slots by address).
void Simulation::check_war_geometry() {
  const int64_t ring = m_stream.ring_bytes();
  for (const TransferUnit& tu : m_stream.units) {
    if (!m_issued[size_t(tu.index)] || tu.in_arena) continue;
    for (int b = 0; b < tu.first_blob; ++b) {
      if (!m_stream.in_ring(b)) continue;  // its own region (resident) or arena bytes (staged)
      if (!ring_overlap(tu.pool_offset, tu.bytes, m_stream.blob_pool_offset[size_t(b)], m_plan.weights[size_t(b)].bytes,
                        ring))
        continue;
      if (m_r.copy_start_ms[size_t(tu.index)] + kEps < blob_reader_end(b))
        violation("unit " + std::to_string(tu.index) + " overwrites blob " + std::to_string(b) + " (layer " +
                  std::to_string(m_plan.weights[size_t(b)].layer) + ") at " +
                  ms_text(m_r.copy_start_ms[size_t(tu.index)]) + " ms while it is read until " +
                  ms_text(blob_reader_end(b)) + " ms");
    }
  }
}

// Staged blobs (arena bytes): nothing live there while the blob is, i.e. from its
// unit's copy start to its reader's end: no activation buffer overlapping its bytes is
// written before that reader and read at or after it, every one written before it
// has been read for the last time when the copy starts, and so has every staged blob
// before it on the same bytes. A unit may carry a run of staged blobs: each is checked
// on its own bytes. (Needs the plan's buffers: skipped for a plan without.)
void Simulation::check_staged() {
  for (const TransferUnit& tu : m_stream.units) {
    if (!tu.in_arena || !m_issued[size_t(tu.index)]) continue;
    for (int b = tu.first_blob; b <= tu.last_blob; ++b) check_staged_blob(tu, b);
  }
}

void Simulation::check_staged_blob(const TransferUnit& tu, int b) {
  const int reader = m_plan.weights[size_t(b)].step;
  const double start = m_r.copy_start_ms[size_t(tu.index)];
  const int64_t off = m_stream.blob_pool_offset[size_t(b)], bytes = m_plan.weights[size_t(b)].bytes;
  auto space = [&](int64_t o, int64_t n) { return o < off + bytes && off < o + n; };
  for (const Buffer& buf : m_plan.buffers) {
    if (!space(buf.offset, buf.bytes) || buf.first_step > reader) continue;
    if (buf.last_step >= reader)
      violation("unit " + std::to_string(tu.index) + " stages blob " + std::to_string(b) + " in arena bytes of buffer " +
                std::to_string(buf.id) + ", live until step " + std::to_string(buf.last_step) + " (its reader is step " +
                std::to_string(reader) + ")");
    else if (buf.last_step >= 0 && start + kEps < m_r.layer_end_ms[size_t(buf.last_step)])
      violation("unit " + std::to_string(tu.index) + " stages blob " + std::to_string(b) + " at " + ms_text(start) +
                " ms over buffer " + std::to_string(buf.id) + ", read until " +
                ms_text(m_r.layer_end_ms[size_t(buf.last_step)]) + " ms");
  }
  for (const TransferUnit& o : m_stream.units) {
    if (!o.in_arena || o.index == tu.index) continue;
    for (int c = o.first_blob; c <= o.last_blob && c < b; ++c) {
      if (!space(m_stream.blob_pool_offset[size_t(c)], m_plan.weights[size_t(c)].bytes)) continue;
      if (start + kEps < blob_reader_end(c))
        violation("unit " + std::to_string(tu.index) + " stages blob " + std::to_string(b) + " over staged blob " +
                  std::to_string(c) + " while it is read");
    }
  }
}

// WAR, slots: a copy into a slot starts only after the last reader of the slot's
// previous group has finished.
void Simulation::check_war_slots() {
  std::vector<int> prev_in_slot(size_t(m_groups), -1);
  std::vector<int> last_of_slot;
  for (int g = 0; g < m_groups; ++g) {
    const int slot = m_stream.groups[size_t(g)].slot;
    if (slot < 0) continue;
    if (size_t(slot) >= last_of_slot.size()) last_of_slot.resize(size_t(slot) + 1, -1);
    prev_in_slot[size_t(g)] = last_of_slot[size_t(slot)];
    last_of_slot[size_t(slot)] = g;
  }
  for (const TransferUnit& tu : m_stream.units) {
    if (tu.group < 0 || tu.group >= m_groups || !m_issued[size_t(tu.index)]) continue;
    const int prev = prev_in_slot[size_t(tu.group)];
    if (prev < 0) continue;
    if (m_r.copy_start_ms[size_t(tu.index)] + kEps < m_group_readers_end[size_t(prev)])
      violation("unit " + std::to_string(tu.index) + " overwrites slot " +
                std::to_string(m_stream.groups[size_t(tu.group)].slot) + " at " +
                ms_text(m_r.copy_start_ms[size_t(tu.index)]) + " ms while group " + std::to_string(prev) +
                " is read until " + ms_text(m_group_readers_end[size_t(prev)]) + " ms");
  }
}

// WAR, tail copies: the next inference's unit overwrites ring bytes only after every
// blob of this inference on them has been read.
void Simulation::check_war_tail() {
  const int64_t ring = m_stream.ring_bytes();
  for (int k = 0; k < m_tail; ++k) {
    const TransferUnit& tu = m_stream.units[size_t(k)];
    const double start = m_r.tail_copy_start_ms[size_t(k)];
    for (int b = 0; b < int(m_plan.weights.size()); ++b) {
      if (!m_stream.in_ring(b)) continue;
      const bool overlap =
          ring_overlap(tu.pool_offset, tu.bytes, m_stream.blob_pool_offset[size_t(b)], m_plan.weights[size_t(b)].bytes, ring);
      if (overlap && start + kEps < blob_reader_end(b))
        violation("tail copy of unit " + std::to_string(k) + " overwrites blob " + std::to_string(b) + " (layer " +
                  std::to_string(m_plan.weights[size_t(b)].layer) + ") at " + ms_text(start) +
                  " ms while it is read until " + ms_text(blob_reader_end(b)) + " ms");
    }
  }
}

}  // namespace

SimResult simulate(const ExecutionPlan& plan, const StreamPlan& stream, const CopyProfile& profile,
                   const std::vector<double>& layer_ms, const SimOptions& options) {
  return Simulation(plan, stream, profile, layer_ms, options).run();
}

}  // namespace dlr
