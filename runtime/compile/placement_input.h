// Placement: a Runtime's decision for one of its streamed models (runtime/multi), a
// compile() input (runtime/compile/compile.h). Plain data, no planner header.
#pragma once

#include <cstdint>
#include <vector>

namespace dlr {

// A Runtime's decision for one of its streamed models (runtime/multi), given to
// compile() as an input: never set by an application.
struct Placement {
  // Device bytes for the model's weights: resident blobs plus the pool (the shared
  // ring's bytes included). Without a shared ring, a budget holding every weight makes
  // every weight resident.
  int64_t budget_bytes = 0;
  // > 0: the pool is the runtime's ring of exactly this many bytes, shared by its
  // models; the model streams through it even where the ring would hold all its weights.
  int64_t shared_ring_bytes = 0;
  // Bytes of the leading transfer units the plan may count as copied while the
  // previous model runs (-1: all of them; prefetch across inferences only).
  int64_t prefetch_limit_bytes = -1;
  // Shared ring: per weight blob, 1 = resident, as the joint plan chose it (empty: the
  // residency pass chooses within budget_bytes - shared_ring_bytes).
  std::vector<char> resident;
  bool operator==(const Placement& o) const {
    return budget_bytes == o.budget_bytes && shared_ring_bytes == o.shared_ring_bytes &&
           prefetch_limit_bytes == o.prefetch_limit_bytes && resident == o.resident;
  }
};

}  // namespace dlr
