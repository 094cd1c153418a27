// The host clock the runtime and tools time their phases with (monotonic).
#pragma once

#include <chrono>

namespace dlr {

using Clock = std::chrono::steady_clock;

// Milliseconds from t0 to now.
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace dlr
