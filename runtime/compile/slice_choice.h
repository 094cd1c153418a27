// The slicing axis per layer, chosen from kernel times measured at open
// (docs/streaming.md section 3, "The axis per layer"). Two plans of one network that
// differ only in how their sliced single-input convs are cut (every one by input
// channels, every one by filters) are timed on the GPU; each sliced layer then takes
// the axis whose slices took less time in all, and the plan compiled with that choice
// (CompileInputs::slice_axes) gets its kernel times from the two measurements, so
// nothing is measured a third time. Plain data: no device, no file.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/compile/plan.h"
#include "runtime/core/status.h"

namespace dlr {

// One variant and the kernel time of each of its steps (ms).
struct TimedPlan {
  const ExecutionPlan* plan = nullptr;
  const std::vector<double>* step_ms = nullptr;
};

// Per network layer sliced by input channels in `channels` and by filters in `filters`:
// the axis whose steps took less time (ties: channels). Layers cut alike in both are
// left out. Error when a plan's times do not match its steps.
Expected<std::map<int, SliceAxis>> choose_slice_axes(const TimedPlan& channels, const TimedPlan& filters);

// The plans worth predicting, as axis maps over the layers `per_layer` covers: the
// per-layer choice, every one by input channels, every one by filters (duplicates
// dropped). The per-layer choice has the least kernel time; where copies bind (a small
// pool) the simulator may predict another faster, and the session takes the plan
// predicted fastest.
std::vector<std::map<int, SliceAxis>> slice_axis_candidates(const std::map<int, SliceAxis>& per_layer);

// The kernel times of `mixed`, a plan of the same network whose sliced layers are cut
// either way: each step takes the time of the step of the same layer and slice, cut
// the same way, in `channels` or `filters`. Error naming the step that has none.
Expected<std::vector<double>> mixed_step_ms(const ExecutionPlan& mixed, const TimedPlan& channels,
                                            const TimedPlan& filters);

// The note a compiled model carries: how many sliced layers are cut each way.
std::string slice_axes_note(const ExecutionPlan& plan);

// The axes as text ("12:channels 30:filters ...") and back (the kernel-times cache keeps
// them this way). The parse refuses anything else, naming the token.
std::string slice_axes_to_text(const std::map<int, SliceAxis>& axes);
Expected<std::map<int, SliceAxis>> slice_axes_from_text(const std::string& text);

}  // namespace dlr
