// dlbench's configurations: every combination of the command line's lists, each one
// measured as a row (measure.h), and its session options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/session.h"
#include "tools/dlbench/args.h"

namespace dlr::tools {

struct Config {
  std::string device, mode, precision, layout;
  int batch = 1;
  std::string budget;  // stream mode
  std::string pool;    // stream mode
  std::string units;   // stream mode: search, chunks or chunks:SIZE
  std::string residency;  // stream mode: greedy, largest-late, none
  std::string from = "host";   // host or storage
  std::string zero = "auto";   // storage: zero copy auto, on, off
  std::string slot = "0";      // --slot-size: 0 (no slices) or a size
  std::string format = "fp";   // --weight-format: fp or int8
  std::string tail = "off";    // stream mode: --tail-prefetch on or off
  std::string decode = "cpu";  // cuda: --decode gpu or cpu
  // The row's name, e.g. "cuda/stream@50%:ring~none<storage:zc/fp16/b1" ("/int8" after the
  // precision for int8 weights, "+tail" after the budget with --tail-prefetch on,
  // "/decode-gpu" last with --decode gpu).
  std::string name() const;
};

// Every combination of the comma-separated lists, in command-line order (stream-mode
// lists only for stream mode, one units variant for slots and 'all', the cpu device runs fp32 only).
std::vector<Config> configs(const Args& a);

// The session options of one configuration, parsed and validated (no file or device
// work): its items and the other shared flags through session_flags.h, then dlbench's
// own. run_bench() checks every configuration with it before it reads the cfg.
Expected<SessionOptions> config_options(const Args& a, const Config& c);

}  // namespace dlr::tools
