// What simulator.cpp and simulator_two_stage.cpp share; private to runtime/streaming.
#pragma once

#include <cstdio>
#include <limits>
#include <string>

namespace dlr::sim_detail {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Times closer than this (ms) count as equal in the checks.
constexpr double kEps = 1e-12;

// A time in ms for a violation message, 6 decimals.
inline std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6f", ms);
  return buf;
}

}  // namespace dlr::sim_detail
