// The CUDA engine: walks an ExecutionPlan with cuDNN convolutions and the
// custom kernels of kernels/cuda, on one non-blocking stream.
//
// Preload mode: every prepared weight is resident on the device (uploaded once
// at open). All device memory (weights, activation arena, cuDNN workspace,
// image staging, outputs) is allocated at open; run() only enqueues work (or
// replays a CUDA graph of it) and waits for the final output download.
#pragma once

#include <memory>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace dlr {

Expected<std::unique_ptr<Engine>> create_cuda_engine(const NetworkDesc& net, const WeightsFile& weights,
                                                     const SessionOptions& options);

// Free and total device memory of `device` (cudaMemGetInfo), for memory reports.
Status cuda_memory_info(int device, int64_t* free_bytes, int64_t* total_bytes);
// "NVIDIA H100 80GB HBM3, sm_90, driver 13.0, cuDNN 9.14.0" for reports.
std::string cuda_device_description(int device);

// PlannerOptions the CUDA engine uses for `options` (exposed so tools and tests
// can print or check the plan without a GPU).
PlannerOptions cuda_planner_options(const SessionOptions& options);

}  // namespace dlr
