// A lower bound on the latency of any streamed plan within a device weight budget:
// no resident set, ring size, cut into units, enqueue order or choice of blobs staged
// in idle activation bytes (arena_staging.h) of dlrun's model (resident blobs + a ring
// of whole mapping units + the arena's idle bytes, streamed blobs copied in execution
// order on one copy engine, kernels in order on one stream) is predicted faster,
// whatever the planner does. Used to tell a planner that misses a target from a target
// that physics forbids. docs/streaming.md section 6 has the argument; in short, for
// every ring size P (a multiple of the granularity, P <= B) and every layer k, with
// R = B - P bytes resident (blobs larger than P must be resident), peak bandwidth bw,
// kernel times t_i (C_<k before layer k, C_>k after it) and A_k idle arena bytes while
// layer k runs (0 where staging is off):
//   layer k ends no earlier than end_k = max(C_<k, (S_<=k - Q) / bw) + t_k, S_<=k the
//   streamed bytes read by layers <= k (they must have landed before it starts; Q = P
//   of them may have landed before the inference where copies run then: prefetch across
//   inferences, tail copies; else Q = 0);
//   until layer k ends, the ring and the idle bytes hold at most P + A_k bytes of layer
//   k's or later layers' weights, so at least S_>=k - P - A_k bytes are copied after
//   end_k, and after the last copy at least the kernels from the last layer with a
//   streamed blob on (C_tail) run: T >= end_k + max(C_>k, (S_>=k - P - A_k)/bw + C_tail).
// Resident bytes lower S_<=k and S_>=k; the bound lets them be placed fractionally and
// differently for every k (each choice only helps the adversary), which gives a
// closed form per (P, k). The bound is max over k, min over P, and never below the
// kernels' sum (preload). Plain C++; O(B / granularity x steps).
//
// A second, pool-aware bound sees the pool at every layer, not one cut: every blob is
// streamed in execution order through a fluid pool of B + A_k bytes while layer k runs
// (a byte takes its space when copied and gives it back when its reader ends; copies at
// peak, back to back; each step starts when its blob has landed and the step before
// ended), as early as possible: fluid(B). Any plan of dlrun's model is such a schedule
// once its r resident bytes and the p bytes prefetched before the inference (r + p <= B)
// are copied first, in (r + p) / bw, and copying in execution order is never later than
// any other order in a fluid pool, so T >= fluid(B) - B / bw. The larger of the two is
// reported (`pool_aware` says which); it binds where many layers are copy-bound in a row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"

namespace dlr {

struct LatencyBound {
  double ms = 0;                 // no plan within the budget is predicted below this
  double compute_ms = 0;         // the kernels' sum: preload's prediction (the bound when B holds every blob)
  double peak_gbps = 0;          // the profile's peak pinned bandwidth used for every copy
  int64_t budget_bytes = 0;
  int64_t total_bytes = 0;       // every blob
  int64_t pool_bytes = 0;        // the ring size P at which the minimum over P is attained (0: everything resident)
  int64_t min_streamed_bytes = 0;  // total - (B - P) at that P: bytes at least copied per inference
  int binding_layer = -1;        // the k whose constraint gives ms at that P (-1: the kernels' sum)
  bool pool_aware = false;       // ms is the pool-aware bound (fluid(B) - B / bw), above the single cut
  bool staging = false;          // idle activation bytes counted (plans with staged blobs are covered)
  // Steps whose int8 weights are expanded (ExecutionPlan::expanded_steps). The kernel times
  // measured at open count each expansion on the compute stream, where the CUDA engine
  // runs them on a stream of its own: for such a plan the bound errs high, by up to the
  // expansions' time, and to_text says so.
  int expanded_steps = 0;
  std::string to_text() const;   // one line for --print-plan
};

// "; the kernel times count N int8 expansions ...: high by up to their time" for a bound
// whose kernel times count n > 0 expansions (LatencyBound::expanded_steps); "" for n <= 0.
std::string expansions_note(int n);

// Per step, the activation arena's bytes that no buffer live at that step covers
// (plan.arena_bytes less the union of [offset, offset + bytes) of every buffer with
// first_step <= step <= last_step; aliased buffers counted once): where blobs staged in
// the arena (arena_staging.h) can be while the step runs, fragmentation ignored.
std::vector<int64_t> arena_idle_bytes(const ExecutionPlan& plan);

// What the plans the bound covers may do beyond resident blobs and a ring.
struct BoundModel {
  // Per step, bytes outside the budget that may hold streamed weights while the step runs
  // (arena_idle_bytes() where arena staging is on); empty: none.
  std::vector<int64_t> staging_room;
  // Copies may run before the inference (prefetch across inferences, tail copies): up to
  // a ring of streamed bytes has landed when it starts.
  bool copies_before = false;
  // Per step, the part of layer_ms that expands int8 weights (SimOptions::expand_ms),
  // taken off the step: expansions only add time, so the bound over the kernels alone
  // holds whatever stream they run on, and does not err high (expanded_steps 0).
  // Empty: layer_ms counts them (the bound errs high by up to their time).
  std::vector<double> expand_ms;
};

// layer_ms: kernel time of every step (simulate()'s contract: no-op steps without
// copies take no time, whatever layer_ms says). budget_bytes: the whole
// device weight budget (resident + pool), > 0. granularity: the ring's mapping unit
// (> 0; the ring size is a multiple of it). Errors: sizes that do not match, a budget or
// granularity <= 0, a negative room, a profile without bandwidth.
Expected<LatencyBound> latency_lower_bound(const ExecutionPlan& plan, const std::vector<double>& layer_ms,
                                           const CopyProfile& profile, int64_t budget_bytes, int64_t granularity,
                                           const BoundModel& model = {});

}  // namespace dlr
