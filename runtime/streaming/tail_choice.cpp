// choose_tail and planned_latency (tail_choice.h).
#include "runtime/streaming/tail_choice.h"

namespace dlr {

namespace {

// Counts 0, 1, ... in turn. With `early_stop`, the scan ends at the first count whose
// last tail copy ends at or after the best latency so far: more copies rarely end
// sooner, so later counts seldom win (a heuristic for the searches' inner loops).
TailChoice scan_tail(const ExecutionPlan& plan, const StreamPlan& stream, const CopyProfile& profile,
                     const std::vector<double>& layer_ms, const std::vector<double>& expand_ms, bool early_stop) {
  const std::vector<int> waits = tail_wait_steps(plan, stream);
  StreamPlan trial = stream;
  SimOptions steady;
  steady.expand_ms = expand_ms;
  steady.check = false;
  steady.tail = true;
  TailChoice c;
  c.candidates = int(waits.size());
  for (int n = 0; n <= c.candidates; ++n) {
    trial.tail_units = n;
    trial.tail_waits.assign(waits.begin(), waits.begin() + n);
    const SimResult r = simulate(plan, trial, profile, layer_ms, steady);
    if (n == 0) c.without_ms = c.ms = r.latency_ms;
    else if (r.latency_ms < c.ms - 1e-9) c.units = n, c.ms = r.latency_ms;
    if (early_stop && n > 0 && r.tail_copy_end_ms.back() >= c.ms) break;
  }
  return c;
}

}  // namespace

TailChoice choose_tail(const ExecutionPlan& plan, const StreamPlan& stream, const CopyProfile& profile,
                       const std::vector<double>& layer_ms, double min_gain, const std::vector<double>& expand_ms) {
  TailChoice c = scan_tail(plan, stream, profile, layer_ms, expand_ms, false);
  if (c.units > 0 && c.ms > c.without_ms * (1.0 - min_gain)) {
    c.units = 0;
    c.ms = c.without_ms;
  }
  return c;
}

double planned_latency(const ExecutionPlan& plan, const StreamPlan& stream, const CopyProfile& profile,
                       const std::vector<double>& layer_ms, const SimOptions& sim) {
  if (!sim.tail || sim.prefetched || stream.resident) {
    SimOptions plain = sim;
    plain.check = false;
    plain.tail = false;
    return simulate(plan, stream, profile, layer_ms, plain).latency_ms;
  }
  return scan_tail(plan, stream, profile, layer_ms, sim.expand_ms, true).ms;
}

}  // namespace dlr
