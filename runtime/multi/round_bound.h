// A lower bound on the period of a Runtime's round robin (its models run one after the
// other, each once, again and again) within one device weight budget, whatever the
// joint plan (docs/streaming.md section 8, "A bound for the round"). No split of the
// budget into a shared ring and resident sets, no unit, no prefetch across models and
// no blob staged in idle activation bytes makes the round shorter.
//
// The argument, with W every model's weight bytes (each blob a step reads, once), B the
// weight budget, bw the peak copy rate, R the resident bytes (present all the time, so
// R <= B + the smallest room) and room_k the arena bytes idle while step k runs (0 where
// a model does not stage):
// - every byte not resident is copied at least once a period: T >= (W - R) / bw.
// - take any window of steps [a, b) in the cyclic order of the round (shorter than the
//   round). The window lasts at least the kernels of its steps, C_w. What the copy
//   engine moves during it is at most the window's own streamed bytes (S_w <= W_w - R_w)
//   plus what is held when step b starts: bytes read at b or later, which with the
//   resident ones fit B + room_b. So it idles at least C_w - (S_w + B + room_b - R) / bw
//   of the window, and T >= (W - R) / bw + that idle time: R cancels, and
//   T >= C_w + (W - W_w - B - room_b) / bw for every window.
// Copies made twice add as much to the period's copies as to the window's, so they do
// not weaken it. The bound is the largest of the kernels' sum, the bytes alone and the
// best window; a window is worth its kernels less its own bytes' copy time, so it binds
// where compute-heavy steps with few weights (small models, the first layers at a
// large size) run while the ring cannot take the later bytes. Plain C++; O(steps^2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/compile/plan.h"
#include "runtime/core/status.h"

namespace dlr {

// One model of the round, in the round's order.
struct RoundModel {
  std::string name;
  const ExecutionPlan* plan = nullptr;  // not owned; must outlive the call
  std::vector<double> layer_ms;         // kernel time per step (simulate()'s contract for no-op steps)
  // Per step, arena bytes idle while it runs that may hold streamed weights
  // (arena_idle_bytes() plus what the shared arena has beyond this model's own); empty: none.
  std::vector<int64_t> room;
};

struct RoundBound {
  double ms = 0;            // no plan of these models within the budget runs a round faster
  double compute_ms = 0;    // every model's kernels: the round with every weight resident
  double bytes_ms = 0;      // (W - B - the smallest room) / bw: the copies alone
  double gbps = 0;          // the copy rate every byte is given
  int64_t weight_bytes = 0;  // W
  int64_t budget_bytes = 0;  // B
  std::vector<std::string> names;  // the models', in the round's order
  // The binding window [first, end) (model index, step): empty (first_model < 0) when the
  // kernels or the bytes alone bind.
  int first_model = -1, first_step = -1, end_model = -1, end_step = -1;
  double window_ms = 0;       // the window's kernels, C_w
  int64_t window_bytes = 0;   // its weight bytes, W_w
  int64_t end_room = 0;       // room at its end step
  // Steps of the models whose kernel times count an int8 expansion on the compute stream
  // (ExecutionPlan::expanded_steps; lower_bound.h): the bound errs high where > 0.
  int expanded_steps = 0;
  std::string to_text() const;  // one line
};

// Per step, where a Runtime's model may stage blobs in idle activation bytes: those of
// its own plan (arena_idle_bytes) plus what the shared arena of `shared_arena_bytes` has
// beyond the plan's; empty where it does not stage.
std::vector<int64_t> shared_arena_room(const ExecutionPlan& plan, bool staging, int64_t shared_arena_bytes);

// A Runtime's model in its round: the plan, the kernel times measured at open and its
// shared_arena_room.
RoundModel runtime_round_model(std::string name, const ExecutionPlan& plan, std::vector<double> layer_ms, bool staging,
                               int64_t shared_arena_bytes);

// Errors: no model, a null plan, a step reading a blob the plan lacks, kernel times or
// rooms that do not match the steps, a budget <= 0, a rate <= 0, a negative room.
Expected<RoundBound> round_lower_bound(const std::vector<RoundModel>& models, int64_t budget_bytes, double gbps);

}  // namespace dlr
