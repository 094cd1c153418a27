// dropout: Darknet [dropout] is the identity at inference. The planner aliases its
// output to its input (OpRole::kAlias) and the engine enqueues nothing for it; the entry
// point exists because every kind of DLR_OPS has one.
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {

Status run_dropout(const OpCall&) { return Status(); }

}  // namespace dlr::cuda
