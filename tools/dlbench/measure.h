// One configuration measured: a session opened, its first inference timed alone, then
// --warmup untimed and --iters timed inferences; the row as JSON (latency, memory,
// startup, storage and stream-plan figures, and a profiled run with --report or
// --simulate).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.h"
#include "tools/dlbench/args.h"
#include "tools/dlbench/config.h"

namespace dlr::tools {

// Per-layer kernel times of a profiled preload run, keyed by precision/layout/batch:
// written by a preload row, read by the stream rows after it (--simulate).
using KernelTimes = std::map<std::string, std::vector<double>>;

// The row of configuration `c`; `input` holds at least c.batch network inputs.
Expected<nlohmann::json> measure_config(const Args& a, const std::string& weights, const Config& c,
                                        const std::vector<float>& input, KernelTimes* kernel_ms);

#ifdef DLR_HAVE_OPENCV
// OpenCV DNN (CPU backend) on the same input, batch 1: the --opencv row.
Expected<nlohmann::json> measure_opencv(const Args& a, const std::string& weights, int size,
                                        const std::vector<float>& input);
#endif

}  // namespace dlr::tools
