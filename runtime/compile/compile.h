// The compile step: network + target + options -> one self-contained, printable,
// JSON-serialisable CompiledModel. Engines execute a CompiledModel and plan
// nothing themselves (docs/architecture.md, "Compile step").
//
//   compile(net, target, options)                 first plan (equal-chunk units)
//   engine = create(model, weights)               allocates, uploads
//   if model.needs_layer_times():                 measure-then-replan, explicit:
//     ms = engine->measure_layer_ms()             kernel times on this device
//     model = compile(net, target, options, ms)   resident set, pool and units chosen by simulation
//     engine->replan(model, weights)              the final placement (weights prepared once, here)
//
// Plain C++ (no CUDA): a plan can be compiled, printed, saved and diffed without a GPU.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/options.h"
#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/read_plan.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

struct NetworkDesc;

// What a plan is compiled for.
struct Target {
  DeviceKind device = DeviceKind::kCPU;
  std::string name = "cpu";     // the device's description, for reports
  bool integrated = false;      // GPU shares the host's DRAM (Jetson)
  int64_t memory_bytes = 0;     // device memory in all (0: unknown)
  int64_t map_granularity = 0;  // virtual-memory mapping unit; 0: no VMM, so no ring pool
  CopyProfile copy_profile;     // host-to-device copies (stream mode)
  std::string copy_profile_source;  // where copy_profile came from (auto: cache, probe or nearest built-in)
  // Set when copy_profile was calibrated inside an inference (streaming/copy_calibration.h):
  // the profile probed on an idle GPU it was calibrated from. The simulator and the planner
  // use copy_profile; the lower bound uses this one (the copy engine's own speed), and the
  // bound under the calibrated cost is reported beside it. Empty name: not calibrated.
  CopyProfile probed_copy_profile;
  bool copy_calibrated() const { return !probed_copy_profile.name.empty(); }
};

// The CPU as a target. A GPU target comes from the CUDA backend
// (cuda_target(), runtime/cuda/cuda_engine.h) or, for tests and offline
// planning, is written by hand.
Target cpu_target();

// The run settings an engine reads (besides the plan and the weight placement),
// resolved from the options by compile(). Engines never see SessionOptions.
struct EngineSettings {
  DeviceKind device = DeviceKind::kCPU;
  Precision precision = Precision::kFP32;  // cuDNN math mode (the plan holds layouts and dtypes)
  int cuda_device = 0;
  bool cuda_graph = true;         // capture the network once and replay it
  bool profile_layers = false;    // per-layer timing events
  bool find_algorithms = false;   // cudnnFind instead of heuristics
  int64_t workspace_limit = 0;    // cuDNN workspace per conv, bytes
  bool cache_conv_algos = false;  // keep cuDNN algorithm choices per GPU and model (runtime/cache/conv_algo_cache.h)
  int max_image_width = 0;        // image staging allocated at open
  int max_image_height = 0;
  ReaderKind reader = ReaderKind::kAuto;  // weights from storage: the block reader's backend
  bool prefetch_next = false;     // stream mode, weights from host: Engine::prefetch() copies the next
                                  // inference's leading units (StreamPlan::prefetch_units) ahead of run()
  bool shared_memory = false;     // the activation arena and the workspace belong to a Runtime (bind_shared)
  bool shared_ring = false;       // a ring pool is the Runtime's (bind_ring), shared by its models
  bool prefetch_reads = true;     // weights from storage, CPU: read the next inference's first units ahead
  bool warm_up_at_open = false;   // CUDA: a warm-up run at open even where no graph is captured after it
};
EngineSettings engine_settings(const SessionOptions& options);

// Everything the engines need, and nothing they must work out themselves.
struct CompiledModel {
  int format_version = 5;       // of the JSON form (2: resident blobs in stream mode; 3: weights from storage;
                               // 4: in-place shortcuts, convs over a concatenation's parts; 5: blobs staged
                               // in the activation arena)
  std::string cfg_path;
  std::string model_name;       // cfg file name without directory
  Target target;
  SessionOptions options;       // as validated, for the record and post-processing (engines read `engine`)
  EngineSettings engine;        // engine_settings(options)
  bool letterbox = false;       // resolved (options.letterbox or the cfg's)
  ExecutionPlan plan;           // steps with op parameters, activation offsets, weight blobs

  // Weight placement. preload: every blob resident (stream is empty). stream: the pool,
  // transfer units and ordering (stream.resident when the budget holds every blob).
  bool streaming = false;
  StreamPlan stream;
  int64_t budget_bytes = 0;     // the resolved weight budget (stream mode; 0: the layout's minimum)
  // Weights from storage (options.weights_from): each inference reads the streamed blobs
  // from a prepared weight file as `reads` says. Three stages (reads.two_stage false):
  // read -> copy (stream's units) -> kernel. Two stages (CPU; CUDA zero copy): read ->
  // kernel, the kernels reading the staging area; `stream` is then unused.
  bool from_storage = false;
  ReadPlan reads;

  // Predicted costs: the simulator over the kernel times the compile was given
  // (layer_ms; empty before measurement) and the target's copy profile.
  std::vector<double> layer_ms;
  double predicted_ms = 0;      // 0: not predicted
  // The latency no plan within the budget can be predicted below (lower_bound.h),
  // stream mode with kernel times and a ring-capable target; 0: not computed.
  double lower_bound_ms = 0;
  // Targets with a calibrated copy profile: the same bound with the calibrated profile's
  // bandwidth (>= lower_bound_ms; a bound only as far as copies in an inference are never
  // faster than calibrated, docs/streaming.md section 6); 0: not computed.
  double lower_bound_calibrated_ms = 0;
  // Weight budget auto with kernel times: preload's predicted latency (every weight
  // resident) that the slowdown target was set from; 0 otherwise.
  double auto_preload_ms = 0;
  std::vector<std::string> notes;  // how choices were made, one line each

  // Stream mode with a ring and unit search on, compiled without kernel times:
  // compile again with measured times to choose the transfer units.
  bool needs_layer_times() const;
  int64_t device_weight_bytes() const;  // resident blobs or the pool
  std::string to_text() const;          // the execution plan, the weight placement, predictions, notes
};

// Validates the options (validate_options) and the target against them, builds
// the execution plan and the weight placement. layer_ms: measured kernel time of
// every step (ms), or empty. Pure: no file, no device.
Expected<CompiledModel> compile(const NetworkDesc& net, const Target& target, const SessionOptions& options,
                                const std::vector<double>& layer_ms = {});

// The planner options a target and options give (layout and dtypes per precision).
PlannerOptions planner_options(DeviceKind device, const SessionOptions& options);

// JSON form (runtime/compile/compile_json.cpp): every field above; from_json(to_json(m))
// gives a model whose to_json() is identical.
std::string compiled_model_to_json(const CompiledModel& model);
Expected<CompiledModel> compiled_model_from_json(const std::string& text, const std::string& what);

}  // namespace dlr
