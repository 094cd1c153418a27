// The next inference's leading units copied under this one's tail (stream_plan.h,
// StreamPlan::tail_units; docs/streaming.md, "The next inference under this one's tail").
// Plain C++.
#include "runtime/streaming/stream_plan.h"

#include <string>

namespace dlr {
namespace {

// The last step of an inference reading any ring byte of [offset, offset + bytes):
// the step of the highest ring blob overlapping it (blobs are in execution order), or
// -1 when none does.
int last_reader(const ExecutionPlan& plan, const StreamPlan& s, int64_t offset, int64_t bytes) {
  const int64_t ring = s.ring_bytes();
  for (int b = int(plan.weights.size()) - 1; b >= 0; --b) {
    if (!s.in_ring(b)) continue;
    if (ring_overlap(offset, bytes, s.blob_pool_offset[size_t(b)], plan.weights[size_t(b)].bytes, ring))
      return plan.weights[size_t(b)].step;
  }
  return -1;
}

}  // namespace

std::vector<int> tail_wait_steps(const ExecutionPlan& plan, const StreamPlan& s) {
  std::vector<int> waits;
  if (s.resident || s.layout != PoolLayout::kRing || s.ring_bytes() <= 0) return waits;
  for (const TransferUnit& u : s.units) {
    // A unit waiting for a step of its own inference overwrites bytes that inference
    // reads first; a staged unit lands in activation bytes live during the tail.
    if (u.in_arena || size_t(u.index) >= s.unit_waits.size() || !s.unit_waits[size_t(u.index)].empty()) break;
    waits.push_back(last_reader(plan, s, u.pool_offset, u.bytes));
  }
  return waits;
}

Status set_tail_units(const ExecutionPlan& plan, StreamPlan* s, int n) {
  std::vector<int> waits = tail_wait_steps(plan, *s);
  if (n < 0 || n > int(waits.size()))
    return internal_error("tail units: " + std::to_string(n) + " asked, " + std::to_string(waits.size()) +
                          " leading units can be copied under the tail");
  waits.resize(size_t(n));
  s->tail_units = n;
  s->tail_waits = std::move(waits);
  return Status();
}

}  // namespace dlr
