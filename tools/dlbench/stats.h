// The numbers dlbench reports: order statistics of timed runs, MiB, the clock and the
// comma-separated lists of its command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/units.h"

namespace dlr::tools {

struct Stats {
  double median = 0, min = 0, p90 = 0, mean = 0;
};

// All zero for no values; the median of an even count is the mean of the middle two.
Stats stats_of(std::vector<double> v);
double median(std::vector<double> v);
// {"median_ms", "min_ms", "p90_ms", "mean_ms"}.
nlohmann::json stats_json(const Stats& s);

// The non-empty items of a comma-separated list, in order.
std::vector<std::string> split(const std::string& list);

// The steady clock (CLOCK_MONOTONIC on Linux: one clock for every process of the machine),
// ms; note_process_start() keeps its value at the start of main.
double steady_clock_ms();
void note_process_start();
// Paced runs (--period-ms): returns once `frame` periods of `period_ms` have passed since
// `from_ms` (a steady_clock_ms() value); at once for period_ms <= 0 or a time passed.
void wait_for_frame(double from_ms, double period_ms, int frame);

// Writes `j` (indented, then a newline) to `path`; false when the file cannot be written.
// An object gets "process_clock": {"main_ms", "written_ms"} (steady_clock_ms at the
// start of main and now), which a parent that spawned this process reads (isolate.h).
bool write_json(const std::string& path, const nlohmann::json& j);

}  // namespace dlr::tools
