// The CUDA backend's factories as one table (runtime/device_backend.h).
#pragma once

#include "runtime/device_backend.h"

namespace dlr {

// The table (static storage; valid for the life of the process or of the plugin).
const DeviceBackend* cuda_backend_table();

}  // namespace dlr
