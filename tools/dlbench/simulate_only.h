// --simulate-only: no GPU. The residency planner's prediction and the lower bound at
// every budget of a curve, from measured kernel times (a dlbench JSON file, optionally
// scaled) and a named copy profile; the target is written by hand.
#pragma once

#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/core/status.h"
#include "tools/dlbench/args.h"

namespace dlr::tools {

// Per-step kernel times from a dlbench JSON file: the first result of `precision`
// (whose config contains `config` when given) with stream.kernel_ms_at_open (measured
// at open, event cost removed), else with a profiled run's per-layer kernel_ms. *used
// names the result and the kind of times taken. expand_ms (may be null): the part of
// the times measured at open that expanded int8 weights (stream.expand_ms_at_open),
// empty where the result has none.
Expected<std::vector<double>> layer_ms_from_json(const std::string& path, const std::string& precision,
                                                 const std::string& config, std::string* used,
                                                 std::vector<double>* expand_ms = nullptr);

// Prints the table and writes --json; returns the exit code.
int simulate_only(const Args& a, const NetworkDesc& net);

}  // namespace dlr::tools
