#pragma once
// Offsets of activation buffers in one arena (a step of build_plan; design notes:
// docs/architecture.md, "Activation planning").
//
// Two buffers conflict when their live ranges [first_step, last_step] intersect
// (inclusive: a step never reads and writes the same bytes); conflicting buffers get
// disjoint byte ranges. Finding the smallest arena is NP-hard in general (dynamic
// storage allocation), so place_buffers() tries several greedy orders and fit rules,
// then seeded perturbations of the best order (up to 200, fewer for networks of over
// ~450 buffers), and stops as soon as an arena reaches live_lower_bound(): no placement
// can be smaller than the most bytes live at one step.
#include <cstdint>
#include <vector>

#include "runtime/compile/plan.h"

namespace dlr {

// Sum of the aligned sizes of the buffers live at the busiest step: a floor for any
// placement.
int64_t live_lower_bound(const std::vector<Buffer>& buffers, int64_t alignment);

// Sets every buffer's offset (a multiple of `alignment`) and returns the arena size
// (aligned). Deterministic: the same buffers give the same offsets.
int64_t place_buffers(std::vector<Buffer>* buffers, int64_t alignment);

}  // namespace dlr
