// Room in the activation arena for weight blobs: which bytes each activation buffer and
// each staged blob takes from which step to which, and where a blob of a given size is
// free earliest before its reader. Used by arena staging (arena_staging.h) and by the
// layers staged whole (runtime/compile/whole_staging.h). Plain C++; deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/compile/plan.h"

namespace dlr {

// Arena bytes [offset, offset + bytes) taken from step `first` through step `last`.
struct ArenaTaken {
  int64_t offset = 0, bytes = 0;
  int first = 0, last = 0;
};

// What the plan's activation buffers take, then its blobs staged whole
// (WeightBlob::arena_offset): from the step after their wait through their reader.
std::vector<ArenaTaken> arena_taken(const ExecutionPlan& plan);

// The offset (a multiple of 256) where `bytes` are free earliest for a reader at step
// `reader`, within `arena` bytes; *free_after: the step after which they are free (>= 0:
// after step 0 at the earliest). -1 when no offset is free before the reader.
int64_t place_in_arena(const std::vector<ArenaTaken>& taken, int64_t arena, int64_t bytes, int reader,
                       int* free_after);

// The same for a run of blobs copied as one unit and held together: `bytes` free from
// before `first_reader` through `last_reader` (first_reader <= last_reader).
int64_t place_run_in_arena(const std::vector<ArenaTaken>& taken, int64_t arena, int64_t bytes, int first_reader,
                           int last_reader, int* free_after);

}  // namespace dlr
