// The buffers int8 weights are expanded into (WeightFormat::kInt8): a pass over a built,
// possibly sliced ExecutionPlan. Every step whose blob is stored int8 gets a buffer of
// its blob's weights in the blob's dtype, live for that step only (Step::dequant); the
// arena is then placed again, so the expanded weights take activation bytes that are
// idle at that step where there are any. Plain data in, plain data out.
#pragma once

#include "runtime/compile/plan.h"
#include "runtime/core/status.h"

namespace dlr {

// Adds the buffers (nothing for a plan without int8 blobs). Fails on a step whose
// dequant buffer is already set.
Status add_dequant_buffers(ExecutionPlan* plan);

// For an engine about to run `plan`: every step with an int8 blob has a dequant buffer
// of the blob's expanded bytes (an internal error otherwise).
Status check_dequant_buffers(const ExecutionPlan& plan);

// Bytes of int8 blob `w`'s weights expanded to its dtype.
int64_t dequant_bytes(const WeightBlob& w);

}  // namespace dlr
