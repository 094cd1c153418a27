// dropout: Darknet [dropout] is the identity at inference. The planner aliases its
// output to its input (OpRole::kAlias) and the engine runs no step for it; the entry
// point exists because every kind of DLR_OPS has one.
#include "kernels/cpu/cpu_ops.h"

namespace dlr::cpu {

void run_dropout(const OpCall&) {}

}  // namespace dlr::cpu
