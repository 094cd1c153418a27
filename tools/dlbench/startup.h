// Startup, time to the first result: the parts of an open as JSON, the process's age,
// and --startup-floor (the smallest CUDA open on this GPU).
#pragma once

#include <nlohmann/json.hpp>

#include "runtime/session.h"
#include "tools/dlbench/args.h"

namespace dlr::tools {

// Milliseconds since this process started (the kernel's start time, in clock ticks:
// 10 ms resolution), or -1 when /proc cannot tell.
double process_age_ms();

// The parts of an open (Session::open_timing) as JSON; first_inference_ms: the first
// set_input + run after open. The CUDA-only parts (context, cuDNN handle, device,
// convolutions, algorithm cache, graph) only when `cuda`: a CPU open has none of them.
nlohmann::json startup_json(const OpenTiming& t, double first_inference_ms, bool cuda);

// --startup-floor: the smallest CUDA open on this GPU (measure_startup_floor), as this
// process's first CUDA work; printed and written to --json. Returns the exit code.
int startup_floor(const Args& a);

// --hold-gpu: makes a CUDA context on GPU 0 (device_memory_info), prints "held" on stdout
// and keeps it until standard input ends; the process that --startup-gpu held runs beside
// its children (isolate.h, HeldGpu). Returns the exit code; an error when no GPU is usable.
int hold_gpu();

}  // namespace dlr::tools
