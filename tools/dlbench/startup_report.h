// dlbench --startup N: time to the first result from fresh processes. Every
// configuration runs in N processes of its own (after one more that fills the caches
// and the page cache, not counted), interleaved with N processes of --startup-floor on
// a CUDA device; each is timed by this process from spawn to exit and reports its own
// open's parts and its age at the first result. Medians go to the table and to the JSON
// (startup_report). With --startup-gpu each round runs once per condition: idle (no
// other process holds the GPU), then held (a HeldGpu lives through that part of the
// round). This process makes no CUDA call of its own: it would hold the GPU itself.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.h"
#include "tools/dlbench/args.h"
#include "tools/dlbench/config.h"

namespace dlr::tools {

// The --startup-gpu conditions in the order they run (idle before held), each once.
std::vector<std::string> startup_gpu_conditions(const std::string& list);

// --startup-gpu's values: idle and/or held, each once, held only with a CUDA configuration
// (`cuda`), anything but the default only with --startup.
Status check_startup_gpu(const Args& a, bool cuda);

// The report over `configs`, printed and put in (*all)["startup_report"]; `weights` is
// the file every child reads (the parent's synthetic file, when --synthetic). The JSON:
// {"rounds", "conditions": [{"gpu", "floor" (CUDA), "configs": [...]}, ...]}; (*all)["gpu"]
// is the floor's GPU. Returns the exit code.
int startup_report(const Args& a, const std::vector<Config>& configs, const std::string& weights, nlohmann::json* all);

}  // namespace dlr::tools
