// A CPU-side discrete-event simulator of a StreamPlan: a copy engine (bandwidth,
// per-copy cost and queue depth from a CopyProfile), a compute stream with
// per-layer kernel durations, and the host enqueuing `plan.order`. It checks the
// safety properties of the plan and predicts latency (no GPU needed).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/read_plan.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

struct SimOptions {
  double launch_us = 4.0;     // host time to enqueue one layer's kernels
  bool check = true;          // record property violations
  // Weights from storage, three stages: one read per unit (reads->units[u] feeds copy u),
  // issued in order by one reader as soon as its staging is free (the copy it waits for
  // has ended) and the previous read has landed, each taking read_ms(bytes); the host
  // blocks until read u has landed before it enqueues copy u. nullptr: no reads.
  const ReadPlan* reads = nullptr;
  std::function<double(int64_t bytes)> read_ms;
  // Prefetch across inferences (StreamPlan::prefetch_units): the plan's leading units
  // that wait for no layer were copied before the inference began (while the host was
  // idle or another model computed): ready at time 0; the host skips their copies.
  // Ignored with reads or a resident plan.
  bool prefetched = false;
  // With `prefetched`: how many bytes the prefetch had time to copy (e.g. while the
  // previous model of a Runtime computed). Only the leading prefetch units whose
  // cumulative bytes, from unit 0, stay <= this limit are landed at time 0; the others
  // are copied during the inference as usual. -1: no limit (every prefetch unit
  // landed); 0: none landed.
  int64_t prefetch_limit_bytes = -1;
  // The steady state of a plan with tail units (StreamPlan::tail_units): the previous
  // inference copied units [0, tail_units) under its tail (ready at time 0; the host skips
  // them), and this one copies the next inference's after its own units, each once its
  // tail_waits step has ended. The latency ends with the last of those copies too.
  // Ignored with prefetched, reads or a resident plan.
  bool tail = false;
  // Int8 weights expanded on a stream of their own (the CUDA engine,
  // runtime/cuda/cuda_engine_expand.cpp): per step, the part of layer_ms that expands the
  // step's int8 weights (ms; 0 for other steps). The step's kernels then take the rest,
  // and its expansion runs on an expansion stage: one batch at a time, in step order, a
  // batch per expansion group (Step::dequant_group), split where its weights land with a
  // later copy (and where the host has not enqueued a later weight's copy when a step
  // needs it), each batch starting once the group before has reached its first step and
  // its weights have landed; a step starts once its weights are expanded. Empty: the expansions run inside the steps' kernel
  // times (as measured, in line).
  std::vector<double> expand_ms;
};

struct SimResult {
  double latency_ms = 0;               // first enqueue to last kernel end
  std::vector<double> layer_start_ms;  // per step (kernel start; no-op steps: when reached)
  std::vector<double> layer_end_ms;
  std::vector<double> copy_start_ms;   // per unit
  std::vector<double> copy_end_ms;
  std::vector<double> tail_copy_start_ms;  // per tail unit (SimOptions::tail): the next inference's copy
  std::vector<double> tail_copy_end_ms;
  std::vector<double> read_start_ms;   // per read unit (weights from storage)
  std::vector<double> read_end_ms;
  std::vector<double> expand_end_ms;   // per step (SimOptions::expand_ms): when its weights are expanded; 0 otherwise
  double stall_ms = 0;                 // compute idle waiting for weights
  double host_blocked_ms = 0;          // host blocked inside a copy call
  int max_queued_copies = 0;
  int64_t max_pool_bytes_in_use = 0;
  std::vector<std::string> violations;  // empty when every property holds
};

// layer_ms: kernel time of every step (size == plan.steps.size(); 0 for no-ops).
SimResult simulate(const ExecutionPlan& plan, const StreamPlan& stream, const CopyProfile& profile,
                   const std::vector<double>& layer_ms, const SimOptions& options = {});

// Two stages (weights from storage read where the kernels use them: the CPU backend,
// zero copy): one reader issues the units in order, each once its wait_layer has ended
// and the previous read has landed, taking read_ms(bytes); a layer starts once the
// previous layer has ended and its unit has landed (no launch cost). layer_ms: per
// step. Checks: each streamed blob's layer waits for the read bringing it, and no read
// starts before every layer reading an earlier unit overlapping its staging bytes has
// ended. Fills latency, layer and read times, stall_ms (compute idle waiting for
// reads) and violations; copy times stay empty and max_pool_bytes_in_use 0.
SimResult simulate_two_stage(const ExecutionPlan& plan, const ReadPlan& reads, const std::vector<double>& layer_ms,
                             const std::function<double(int64_t bytes)>& read_ms);

// Several inferences back to back (the engine starts one once the previous one's layers
// and reads are done). With read_ahead (ReadPipeline's, the CPU backend) the reader
// goes on, after an inference's last read, with the next one's units
// [0, min(read_ahead_units, units - 1)), each once the current inference's layer
// wait_layer_prev has ended; the rest after the next inference has started. The checks
// above hold for every inference, and across them: no read overwrites bytes of the
// previous inference's units before every layer reading them has ended. The result
// describes the LAST inference, times from its start (reads made ahead are negative);
// violations name the inference (1-based).
struct TwoStageSimOptions {
  int inferences = 1;
  bool read_ahead = false;
};
SimResult simulate_two_stage(const ExecutionPlan& plan, const ReadPlan& reads, const std::vector<double>& layer_ms,
                             const std::function<double(int64_t bytes)>& read_ms, const TwoStageSimOptions& options);

// A cost model for layer times when no measurement exists: conv time from FLOPs
// at `gflops_per_s` plus a fixed per-kernel cost; other layers from bytes moved.
std::vector<double> model_layer_ms(const NetworkDesc& net, const ExecutionPlan& plan, double gflops_per_s,
                                   double mem_gbps, double kernel_us);

}  // namespace dlr
