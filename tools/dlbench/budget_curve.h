// --budget-curve: budgets from the minimal pool to all the weights, for a measured curve
// (on a GPU) or a simulated one (--simulate-only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/core/status.h"
#include "tools/dlbench/args.h"

namespace dlr::tools {

// `n` budgets from the minimal pool to all the weights, as dlbench --weight-budget
// items: "min", n - 2 percentages evenly spaced above the minimum (one decimal), "all".
// The minimum is the largest minimal pool (in % of the weights) over `precisions`,
// found by compiling for a hand-made target with the device's mapping granularity (the
// pool does not depend on the copy profile).
Expected<std::string> curve_budgets(const NetworkDesc& net, const std::vector<std::string>& precisions,
                                    int64_t granularity, int n);

// --budget-curve N measured on GPU 0: the curve's budgets and auto (--max-slowdown), in
// both modes (preload in the same run), through a ring, each configuration in a process
// of its own unless --no-isolate. An error without the CUDA backend.
Status use_budget_curve(Args* a);

}  // namespace dlr::tools
