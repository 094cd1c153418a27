// The CUDA engine: walks an ExecutionPlan with cuDNN convolutions and the
// custom kernels of kernels/cuda, on one non-blocking stream.
//
// Preload mode: every prepared weight is resident on the device (uploaded once
// at open). All device memory (weights, activation arena, cuDNN workspace,
// image staging, outputs) is allocated at open; run() only enqueues work (or
// replays a CUDA graph of it) and waits for the final output download.
#pragma once

#include <memory>

#include <string>

#include "runtime/compile/compiled_model.h"
#include "runtime/engine.h"
#include "runtime/weight_source.h"

namespace dlr {

class CudaContextInit;  // runtime/cuda/context_init.h

// An engine for a model compiled for a CUDA target (see Engine for the open sequence).
// `init`: a context helper started earlier for the same device (its cuDNN handle is
// used), or null. With model.engine.cache_conv_algos the cuDNN algorithm choices are
// read from and kept in the user's cache (runtime/cache/conv_algo_cache.h).
Expected<std::unique_ptr<Engine>> create_cuda_engine(const CompiledModel& model, WeightSource& weights,
                                                     CudaContextInit* init = nullptr);

// `device` as a compile target: its name, memory, whether it is integrated, its
// virtual-memory mapping granularity and the copy profile `copy_profile`: a built-in
// name, a dlprobe JSON file, "auto" (this GPU's profile: cached per GPU UUID in the
// user's cache directory, else a brief probe, saved there, else the nearest built-in;
// runtime/streaming/profile_select.h) or "" (no profile: preload). Logs one line naming
// the profile and where it came from (a probe's time included; a warning for a
// built-in fallback).
Expected<Target> cuda_target(int device, const std::string& copy_profile);

// The smallest CUDA open this runtime can make, timed part by part (host clock, ms):
// what no model's start can go below on this GPU. Meaningful as the process's first
// CUDA work (otherwise the context exists already and context_ms is near 0).
struct StartupFloor {
  double context_ms = 0;       // cudaSetDevice + cudaFree(nullptr)
  double cudnn_handle_ms = 0;  // cudnnCreate
  double buffers_ms = 0;       // four small cudaMalloc + cudaMemset
  double conv_create_ms = 0;   // CudnnConv::create of one 1x1 fp16 NHWC convolution (8 -> 8 channels, 8x8)
  double conv_query_ms = 0;    // of which cuDNN's heuristic query
  double first_run_ms = 0;     // its first run + synchronise (kernel loading)
  double second_run_ms = 0;    // its second run + synchronise
  double total_ms = 0;         // all of the above
  std::string conv_algo;       // the algorithm cuDNN chose
};
Expected<StartupFloor> measure_startup_floor(int device);

// Free and total device memory of `device` (cudaMemGetInfo), for memory reports.
Status cuda_memory_info(int device, int64_t* free_bytes, int64_t* total_bytes);
// "NVIDIA H100 80GB HBM3, sm_90, driver 13.0, cuDNN 9.14.0" for reports.
std::string cuda_device_description(int device);

}  // namespace dlr
