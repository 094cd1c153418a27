// dlbench --startup N: time to the first result from fresh processes. Every
// configuration runs in N processes of its own (after one more that fills the caches
// and the page cache, not counted), interleaved with N processes of --startup-floor on
// a CUDA device; each is timed by this process from spawn to exit and reports its own
// open's parts and its age at the first result. Medians go to the table and to the JSON
// (startup_report).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/dlbench/args.h"
#include "tools/dlbench/config.h"

namespace dlr::tools {

// The report over `configs`, printed and put in (*all)["startup_report"]; `weights` is
// the file every child reads (the parent's synthetic file, when --synthetic). Returns
// the exit code.
int startup_report(const Args& a, const std::vector<Config>& configs, const std::string& weights, nlohmann::json* all);

}  // namespace dlr::tools
