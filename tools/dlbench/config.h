// dlbench's configurations: every combination of the command line's lists, each one
// measured as a row (measure.h), and its session options.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/session.h"
#include "tools/dlbench/args.h"

namespace dlr::tools {

// One row: the device, the mode, and the text of every swept option (config.cpp's table of
// dimensions: precision, weight_format, layout, batch, slot_bytes, the stream plan's
// options, weights_from, zero_copy, tail_prefetch, decode, staging_early, stage_whole, staging_runs,
// expansion_stage), "-" where an option does not apply (a stream-mode one outside stream mode).
struct Config {
  std::string device, mode;
  int batch = 1;
  std::map<std::string, std::string> items;  // option name -> its text in this row
  const std::string& item(const std::string& option) const;
  // The row's name, e.g. "cuda/stream@50%:ring~none<storage:zc/fp16/b1" ("/int8" after the
  // precision for int8 weights, "+tail" after the budget with --tail-prefetch on, "+late"
  // there with --staging-early off, "/decode-gpu" or "/decode-cpu" last with --decode gpu or
  // cpu).
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
