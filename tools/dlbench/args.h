// dlbench's command line for one network (every flag but --models'; cli.h defines
// them): the comma-separated lists its configurations are made of, and the modes
// that replace the measurement (--simulate-only, --startup-floor, --budget-curve).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/common/session_flags.h"

namespace dlr::tools {

struct Args {
  std::string cfg;
  std::string weights;
  bool synthetic = false;
  uint64_t seed = 1;
  int size = 0;
  // The session-option flags dlrun shares (session_flags.h): --threads, --batch, --device,
  // --precision, --mode, the stream-mode plan, --no-graph, --no-calibrate, --cache and the
  // weights from storage; the sweepable ones comma-separated lists.
  SessionFlagTexts session{FlagTool::kDlbench};
  int iters = 50;
  int warmup = 10;
  // --period-ms: the timed inferences begin one period apart, as frames from a camera
  // would (0: back to back); an inference that ends late starts the next at once.
  double period_ms = 0;
  // --detect N: after the timed network runs, N timed Session::detect_batch calls on 8-bit
  // images (detect_timing.h); 0: none.
  int detect = 0;
  std::string json;
  bool opencv = false;
  std::string report;
  bool warm_up_at_open = false;
  bool find = false;
  bool simulate = false;
  bool cold = false;  // drop the prepared file from the page cache before each configuration
  bool startup_floor = false;  // --startup-floor: time the smallest CUDA open, alone in this process
  int startup = 0;             // --startup N: every configuration in N fresh processes (startup_report.h)
  // --startup-gpu idle,held: whether another process holds the GPU while --startup's children
  // run (startup_report.h); each a report of its own, in this order.
  std::string startup_gpu = "idle";
  bool hold_gpu = false;  // --hold-gpu: keep a CUDA context on GPU 0 until stdin ends (the holder of "held")
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
  bool profile_from_row = false;  // --simulate-only: the copy profile of the --layer-ms-from row
  int64_t granularity = int64_t(2) << 20;
};

}  // namespace dlr::tools
