// simulate_two_stage(): reads from storage straight into the buffers the kernels use
// (simulator.h), over one or several inferences back to back.
#include "runtime/streaming/simulator.h"

#include <algorithm>
#include <string>
#include <utility>

#include "runtime/streaming/simulator_detail.h"

namespace dlr {
namespace {

using sim_detail::kEps;
using sim_detail::kInf;
using sim_detail::ms_text;

// One simulate_two_stage() call: its inputs (borrowed for the call), every
// inference's absolute times and the clocks of the reader and the compute stream (ms).
class TwoStageSimulation {
 public:
  TwoStageSimulation(const ExecutionPlan& plan, const ReadPlan& reads, const std::vector<double>& layer_ms,
                     const std::function<double(int64_t bytes)>& read_ms, const TwoStageSimOptions& options)
      : m_plan(plan), m_reads(reads), m_layer_ms(layer_ms), m_read_ms(read_ms), m_steps(int(plan.steps.size())),
        m_units(int(reads.units.size())), m_inferences(std::max(1, options.inferences)),
        m_ahead(options.read_ahead ? std::max(0, std::min(reads.read_ahead_units, m_units)) : 0) {}

  SimResult run();

 private:
  std::string tag(int g) const {
    return m_inferences > 1 ? "inference " + std::to_string(g + 1) + ": " : std::string();
  }
  void run_inference(int g);
  void read_up_to(int g, int u);
  void check_blob_reads();
  void check_staging(int g, int u);
  void describe_last();

  const ExecutionPlan& m_plan;
  const ReadPlan& m_reads;
  const std::vector<double>& m_layer_ms;
  const std::function<double(int64_t bytes)>& m_read_ms;
  const int m_steps, m_units, m_inferences;
  const int m_ahead;  // units of the next inference the reader may read during this one
  SimResult m_r;
  // Absolute times, per inference.
  std::vector<std::vector<double>> m_l_start, m_l_end, m_rd_start, m_rd_end;
  std::vector<double> m_inf_start, m_stall;
  double m_reader_free = 0, m_compute_free = 0;
  // The current inference: its layers ended so far and its next read.
  std::vector<char> m_layer_done;
  int m_next_read = 0;
};

SimResult TwoStageSimulation::run() {
  DLR_ASSERT(m_layer_ms.size() == m_plan.steps.size());
  m_r.layer_start_ms.assign(size_t(m_steps), 0);
  m_r.layer_end_ms.assign(size_t(m_steps), 0);
  m_r.read_start_ms.assign(size_t(m_units), kInf);
  m_r.read_end_ms.assign(size_t(m_units), kInf);
  if (m_reads.layer_read_unit.size() != m_plan.steps.size()) {
    m_r.violations.push_back("reads: " + std::to_string(m_reads.layer_read_unit.size()) + " layer entries for " +
                             std::to_string(m_steps) + " steps");
    return std::move(m_r);
  }
  const size_t ni = size_t(m_inferences);
  m_l_start.resize(ni);
  m_l_end.resize(ni);
  m_rd_start.resize(ni);
  m_rd_end.resize(ni);
  m_inf_start.assign(ni, 0.0);
  m_stall.assign(ni, 0.0);
  for (int g = 0; g < m_inferences; ++g) run_inference(g);
  check_blob_reads();
  // WAR: a read overwrites staging bytes only after every layer reading a blob of an
  // earlier, overlapping unit (of its own inference, or any unit of the previous one)
  // has ended (blobs are read by their own layer only).
  for (int g = 0; g < m_inferences; ++g)
    for (int u = 0; u < m_units; ++u) check_staging(g, u);
  describe_last();
  return std::move(m_r);
}

void TwoStageSimulation::run_inference(int g) {
  m_l_start[size_t(g)].assign(size_t(m_steps), 0);
  m_l_end[size_t(g)].assign(size_t(m_steps), 0);
  m_rd_start[size_t(g)].assign(size_t(m_units), kInf);
  m_rd_end[size_t(g)].assign(size_t(m_units), kInf);
  // The engine starts inference g once inference g - 1's layers and reads are done.
  m_inf_start[size_t(g)] = g == 0 ? 0.0 : std::max(m_compute_free, m_reader_free);
  m_layer_done.assign(size_t(m_steps), 0);
  m_next_read = 0;
  m_compute_free = m_inf_start[size_t(g)];
  for (int l = 0; l < m_steps; ++l) {
    double start = m_compute_free;
    const int u = m_reads.layer_read_unit[size_t(l)];
    if (u >= m_units) {
      m_r.violations.push_back(tag(g) + "layer " + std::to_string(l) + " needs read " + std::to_string(u) +
                               ", which does not exist");
    } else if (u >= 0) {
      read_up_to(g, u);
      if (m_rd_end[size_t(g)][size_t(u)] > start) {
        m_stall[size_t(g)] += m_rd_end[size_t(g)][size_t(u)] - start;
        start = m_rd_end[size_t(g)][size_t(u)];
      }
    }
    m_l_start[size_t(g)][size_t(l)] = start;
    m_l_end[size_t(g)][size_t(l)] = m_compute_free = start + m_layer_ms[size_t(l)];
    m_layer_done[size_t(l)] = 1;
  }
  read_up_to(g, m_units - 1);  // reads no layer needs still run (and are reported by the checks)
}

// Reads are issued in order by one reader, each once the previous one has landed and
// its wait has ended. A correct plan's wait_layer precedes every layer needing the
// unit, so reads are timed lazily, when the first layer needing one is reached; a
// wait on a layer not finished yet is a violation and counts as no wait.
void TwoStageSimulation::read_up_to(int g, int u) {
  for (; m_next_read <= u && m_next_read < m_units; ++m_next_read) {
    const ReadUnit& ru = m_reads.units[size_t(m_next_read)];
    double rs = m_reader_free;
    if (g > 0 && m_next_read < m_ahead) {  // read ahead, during inference g - 1
      if (ru.wait_layer_prev >= m_steps)
        m_r.violations.push_back(tag(g) + "read " + std::to_string(m_next_read) + " waits for layer " +
                                 std::to_string(ru.wait_layer_prev) + ", which does not exist");
      else if (ru.wait_layer_prev >= 0)
        rs = std::max(rs, m_l_end[size_t(g - 1)][size_t(ru.wait_layer_prev)]);
    } else {
      rs = std::max(rs, m_inf_start[size_t(g)]);
      if (ru.wait_layer >= 0) {
        if (ru.wait_layer >= m_steps || !m_layer_done[size_t(ru.wait_layer)])
          m_r.violations.push_back(tag(g) + "read " + std::to_string(m_next_read) + " waits for layer " +
                                   std::to_string(ru.wait_layer) + ", not finished before the read is needed");
        else
          rs = std::max(rs, m_l_end[size_t(g)][size_t(ru.wait_layer)]);
      }
    }
    m_rd_start[size_t(g)][size_t(m_next_read)] = rs;
    m_rd_end[size_t(g)][size_t(m_next_read)] = m_reader_free = rs + m_read_ms(ru.bytes);
  }
}

// Every weighted layer reads its blob from a unit that brings it.
void TwoStageSimulation::check_blob_reads() {
  for (size_t b = 0; b < m_plan.weights.size(); ++b) {
    const int layer = m_plan.weights[b].step;
    const int u = b < m_reads.blob_read_unit.size() ? m_reads.blob_read_unit[b] : -1;
    if (u < 0) continue;  // resident
    if (layer < 0 || layer >= m_steps || m_reads.layer_read_unit[size_t(layer)] != u)
      m_r.violations.push_back("blob " + std::to_string(b) + " comes with read " + std::to_string(u) + " but layer " +
                               std::to_string(layer) + " waits for another read");
  }
}

// Read u of inference g against every earlier unit overlapping its staging bytes.
void TwoStageSimulation::check_staging(int g, int u) {
  const ReadUnit& a = m_reads.units[size_t(u)];
  for (int pg = std::max(0, g - 1); pg <= g; ++pg)
    for (int v = 0; v < (pg == g ? u : m_units); ++v) {
      const ReadUnit& o = m_reads.units[size_t(v)];
      if (a.staging_offset >= o.staging_offset + o.bytes || o.staging_offset >= a.staging_offset + a.bytes) continue;
      for (int b = o.first_blob; b <= o.last_blob; ++b) {
        if (size_t(b) >= m_reads.blob_read_unit.size() || m_reads.blob_read_unit[size_t(b)] != v) continue;
        const int layer = m_plan.weights[size_t(b)].step;
        if (layer < 0 || layer >= m_steps) continue;  // reported by check_blob_reads
        const double start = m_rd_start[size_t(g)][size_t(u)], until = m_l_end[size_t(pg)][size_t(layer)];
        if (start + kEps < until)
          m_r.violations.push_back(tag(g) + "read " + std::to_string(u) + " overwrites blob " + std::to_string(b) +
                                   " (layer " + std::to_string(layer) + (pg < g ? " of the previous inference" : "") +
                                   ") at " + ms_text(start - m_inf_start[size_t(g)]) + " ms while it is read until " +
                                   ms_text(until - m_inf_start[size_t(g)]) + " ms");
      }
    }
}

// The last inference, from its start.
void TwoStageSimulation::describe_last() {
  const int last = m_inferences - 1;
  const double t0 = m_inf_start[size_t(last)];
  for (int l = 0; l < m_steps; ++l) {
    m_r.layer_start_ms[size_t(l)] = m_l_start[size_t(last)][size_t(l)] - t0;
    m_r.layer_end_ms[size_t(l)] = m_l_end[size_t(last)][size_t(l)] - t0;
  }
  for (int u = 0; u < m_units; ++u) {
    m_r.read_start_ms[size_t(u)] = m_rd_start[size_t(last)][size_t(u)] - t0;
    m_r.read_end_ms[size_t(u)] = m_rd_end[size_t(last)][size_t(u)] - t0;
  }
  m_r.stall_ms = m_stall[size_t(last)];
  m_r.latency_ms = std::max(m_compute_free, m_units > 0 ? m_reader_free : 0.0) - t0;
}

}  // namespace

SimResult simulate_two_stage(const ExecutionPlan& plan, const ReadPlan& reads, const std::vector<double>& layer_ms,
                             const std::function<double(int64_t bytes)>& read_ms) {
  return simulate_two_stage(plan, reads, layer_ms, read_ms, TwoStageSimOptions{});
}

SimResult simulate_two_stage(const ExecutionPlan& plan, const ReadPlan& reads, const std::vector<double>& layer_ms,
                             const std::function<double(int64_t bytes)>& read_ms, const TwoStageSimOptions& options) {
  return TwoStageSimulation(plan, reads, layer_ms, read_ms, options).run();
}

}  // namespace dlr
