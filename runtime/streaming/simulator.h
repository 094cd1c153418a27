// A CPU-side discrete-event simulator of a StreamPlan: a copy engine (bandwidth,
// per-copy cost and queue depth from a CopyProfile), a compute stream with
// per-layer kernel durations, and the host enqueuing `plan.order`. It checks the
// safety properties of the plan and predicts latency (no GPU needed).
#pragma once

#include <string>
#include <vector>

#include "runtime/plan.h"
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

struct SimOptions {
  double launch_us = 4.0;     // host time to enqueue one layer's kernels
  bool check = true;          // record property violations
};

struct SimResult {
  double latency_ms = 0;               // first enqueue to last kernel end
  std::vector<double> layer_start_ms;  // per step (kernel start; no-op steps: when reached)
  std::vector<double> layer_end_ms;
  std::vector<double> copy_start_ms;   // per unit
  std::vector<double> copy_end_ms;
  double stall_ms = 0;                 // compute idle waiting for weights
  double host_blocked_ms = 0;          // host blocked inside a copy call
  int max_queued_copies = 0;
  int64_t max_pool_bytes_in_use = 0;
  std::vector<std::string> violations;  // empty when every property holds
};

// layer_ms: kernel time of every step (size == plan.steps.size(); 0 for no-ops).
SimResult simulate(const ExecutionPlan& plan, const StreamPlan& stream, const CopyProfile& profile,
                   const std::vector<double>& layer_ms, const SimOptions& options = {});

// A cost model for layer times when no measurement exists: conv time from FLOPs
// at `gflops_per_s` plus a fixed per-kernel cost; other layers from bytes moved.
std::vector<double> model_layer_ms(const NetworkDesc& net, const ExecutionPlan& plan, double gflops_per_s,
                                   double mem_gbps, double kernel_us);

}  // namespace dlr
