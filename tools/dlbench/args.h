// dlbench's command line for one network (every flag but --models'; cli.h defines
// them): the comma-separated lists its configurations are made of, and the modes
// that replace the measurement (--simulate-only, --startup-floor, --budget-curve).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlr::tools {

struct Args {
  std::string cfg;
  std::string weights;
  bool synthetic = false;
  uint64_t seed = 1;
  int size = 0;
  int threads = 0;  // --threads (0: auto)
  std::string batches = "1";
  std::string precisions = "fp32";
  std::string modes = "preload";
  std::string devices = "cuda";
  int iters = 50;
  int warmup = 10;
  std::string json;
  bool opencv = false;
  std::string report;
  bool no_graph = false;
  bool warm_up_at_open = false;
  bool no_calibrate = false;  // stream mode: plan with the copy profile as probed (no calibration at open)
  bool find = false;
  std::string layouts = "auto";
  std::string budgets = "min";
  std::string copy_profile = "auto";
  std::string pools = "auto";
  std::string units = "search";
  std::string residencies = "greedy";
  std::string max_slowdown = "5%";
  bool simulate = false;
  // weights from storage
  std::string weights_from = "host";  // comma-separated: host, storage
  std::string zero_copy = "auto";     // comma-separated: auto, on, off
  std::string host_budget = "min";
  int read_depth = 8;
  std::string read_block = "1MiB";
  std::string reader = "auto";
  std::string prefetch_reads = "on";
  std::string prepared;
  bool cold = false;  // drop the prepared file from the page cache before each configuration
  bool cache = false;          // --cache: keep/reuse kernel times and cuDNN algorithm choices (as dlrun does)
  bool startup_floor = false;  // --startup-floor: time the smallest CUDA open, alone in this process
  // --budget-curve N: N budgets from the minimal pool to all the weights (preload in the same run).
  int budget_curve = 0;
  // --isolate: every configuration in a process of its own (tools/dlbench/isolate.h);
  // on by default with --budget-curve, off with --no-isolate.
  bool isolate = false;
  bool no_isolate = false;
  int config_index = -1;          // --config-index K (the child of --isolate): measure configuration K only
  std::vector<std::string> argv;  // the command line, for the children of --isolate
  // --simulate-only: no GPU; the planner's predictions and the lower bound over a
  // budget curve from kernel times in a dlbench JSON file.
  bool simulate_only = false;
  std::string layer_ms_from;
  std::string layer_ms_config;
  double scale_preload_ms = 0;
  int64_t granularity = int64_t(2) << 20;
};

}  // namespace dlr::tools
