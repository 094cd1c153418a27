// The slot compile() slices the plan to (runtime/compile/slicing.h): chosen from the
// options and the budget before the placement passes run, from the plan's blob sizes
// alone (not from kernel times), so the compile at open and the one after the kernel
// times were measured slice alike.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/compile/plan.h"
#include "runtime/compile/slicing.h"
#include "runtime/compile/target.h"
#include "runtime/core/status.h"
#include "runtime/options.h"

namespace dlr {

// options.slot_bytes when set. Otherwise, for a model streaming from host memory on a GPU
// whose budget is a size or a share of the weights below the smallest pool of whole
// layers: the largest slot of budget/2, budget/3, ... budget/16 whose smallest pool fits
// the budget (a pool of two slots, or the ring over them). 0 (no slices) otherwise; a
// budget too small for every candidate keeps 0, and the placement's error names the
// minimum. `placed`: a Runtime gave the placement (its joint plan sizes the pool).
// The slicing pass's options for a slot of slot_bytes: the axis from options.slice_by
// (auto: input channels on CUDA, filters on the CPU; on CUDA a session then chooses per
// layer from measured times, runtime/session_slices.cpp, through CompileInputs::slice_axes).
SliceOptions slice_options(const SessionOptions& options, int64_t slot_bytes);

Expected<int64_t> choose_slot_bytes(const ExecutionPlan& plan, const Target& target, const SessionOptions& options,
                                    bool placed);

}  // namespace dlr
