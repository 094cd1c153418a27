// Layers staged whole: where slices let the weight pool be smaller than the largest
// layer (slicing.h), a layer above the slot whose whole blob finds room in the activation
// arena's idle bytes before it runs is kept whole and copied there every inference, so
// its kernel runs unsliced; the ring streams the rest (docs/streaming.md section 3,
// "Layers staged whole"). A memory decision, made before kernel times exist, so that the
// plan timed at open is the plan that runs. Plain data in, plain data out.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "runtime/compile/plan.h"
#include "runtime/compile/slicing.h"
#include "runtime/core/status.h"
#include "runtime/streaming/copy_profile.h"

namespace dlr {

// The network layers whose conv blob in `plan` (not yet sliced) exceeds `slot` bytes and
// whose whole copy `profile` can queue: the candidates to stage whole.
std::set<int> layers_above_slot(const ExecutionPlan& plan, int64_t slot, const CopyProfile& profile);

// Places the blobs of `layers` (whole in `plan`) in the arena in execution order, each
// where it is free earliest before its reader (arena_room.h), and records the place in
// WeightBlob::arena_offset / arena_wait. Returns the layers that found no room (their
// blobs unchanged).
std::set<int> stage_whole(ExecutionPlan* plan, const std::set<int>& layers);

// Slices `plan` (built, not sliced) with `slicing`, folds shortcuts and adds the int8
// expansion buffers (the steps compile() runs), keeping the layers of
// slicing.whole_layers whole where the final arena has room for them and slicing those
// that have none, until every layer kept whole is placed. Returns fold_shortcuts' count.
Expected<int> slice_and_stage(ExecutionPlan* plan, SliceOptions slicing, const std::string& cfg_path);

// The bytes of the plan's blobs staged whole; *layers: how many (one blob per layer).
int64_t staged_whole_bytes(const ExecutionPlan& plan, int* layers = nullptr);

}  // namespace dlr
