// What a plan is compiled for: the device and what the planner knows of it. Plain data.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/core/types.h"
#include "runtime/streaming/copy_profile.h"

namespace dlr {

struct Target {
  DeviceKind device = DeviceKind::kCPU;
  std::string name = "cpu";     // the device's description, for reports
  bool integrated = false;      // GPU shares the host's DRAM (Jetson)
  int64_t memory_bytes = 0;     // device memory in all (0: unknown)
  int64_t map_granularity = 0;  // virtual-memory mapping unit; 0: no VMM, so no ring pool
  bool tf32_tensor_cores = false;  // compute capability >= 8.0 (3xTF32 convs for strict fp32)
  CopyProfile copy_profile;     // host-to-device copies (stream mode)
  std::string copy_profile_source;  // where copy_profile came from (auto: cache, probe or nearest built-in)
  // Set when copy_profile was calibrated inside an inference (streaming/copy_calibration.h):
  // the profile probed on an idle GPU it was calibrated from. The simulator and the planner
  // use copy_profile; the lower bound uses this one (the copy engine's own speed), and the
  // bound under the calibrated cost is reported beside it. Empty name: not calibrated.
  CopyProfile probed_copy_profile;
  bool copy_calibrated() const { return !probed_copy_profile.name.empty(); }
};

// The CPU as a target. A GPU target comes from the backend (make_target(),
// runtime/backend.h) or, for tests and offline planning, is written by hand.
Target cpu_target();

}  // namespace dlr
