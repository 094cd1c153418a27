// CompiledModel: what compile() (runtime/compile/compile.h) gives an engine: the
// execution plan, the weight placement and the run settings, as plain data that
// prints, round-trips through JSON and is tested without a GPU. Engines include this
// header, never the options: everything they read is here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/compile/plan.h"
#include "runtime/compile/target.h"
#include "runtime/core/thread_placement.h"
#include "runtime/core/types.h"
#include "runtime/streaming/read_plan.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

struct SessionOptions;  // runtime/options.h: only compile() and the session read it

// The run settings an engine reads (besides the plan and the weight placement),
// resolved from the options by compile(). Engines never see SessionOptions.
struct EngineSettings {
  DeviceKind device = DeviceKind::kCPU;
  Precision precision = Precision::kFP32;  // cuDNN math mode (the plan holds layouts and dtypes)
  int cuda_device = 0;
  int threads = 0;                // CPU threads of the kernels (0: auto; runtime/cpu/cpu_threads.h)
  bool cuda_graph = true;         // capture the network once and replay it
  bool profile_layers = false;    // per-layer timing events
  bool find_algorithms = false;   // cudnnFind instead of heuristics
  int64_t workspace_limit = 0;    // cuDNN workspace per conv, bytes
  bool cache_conv_algos = false;  // keep cuDNN algorithm choices per GPU and model (runtime/cache/conv_algo_cache.h)
  int max_image_width = 0;        // image staging allocated at open
  int max_image_height = 0;
  ReaderKind reader = ReaderKind::kAuto;  // weights from storage: the block reader's backend
  ThreadPlacement thread_placement;        // of the threads the engine starts (storage reader, pread workers)
  bool prefetch_next = false;     // stream mode, weights from host: Engine::prefetch() copies the next
                                  // inference's leading units (StreamPlan::prefetch_units) ahead of run()
  bool shared_memory = false;     // the activation arena and the workspace belong to a Runtime (bind_shared)
  bool shared_ring = false;       // a ring pool is the Runtime's (bind_ring), shared by its models
  bool prefetch_reads = true;     // weights from storage: read the next inference's first units ahead
  bool cache_hits = true;         // weights from storage: bytes the page cache holds are read from it
  bool warm_up_at_open = false;   // CUDA: a warm-up run at open even where no graph is captured after it
  int warm_threads = 0;           // CUDA: threads loading the convolutions' kernels at open (0: none; runtime/warm_split.h)
  Fusion fusion = Fusion::kOff;   // CUDA: which convs run as one cuDNN graph (the plan folds the shortcuts)

  // Whether a CUDA engine times strict fp32's conv algorithms at open (FMA algorithms and,
  // on NHWC plans, 3xTF32 convs) and keeps the choices: fp32, the algorithm cache on,
  // cudnnFind off, and buffers of its own (a Runtime's engines run nothing at open).
  bool times_fp32_algorithms() const {
    return precision == Precision::kFP32 && cache_conv_algos && !find_algorithms && !shared_memory && !shared_ring;
  }
};

// Everything the engines need, and nothing they must work out themselves.
struct CompiledModel {
  int format_version = 6;       // of the JSON form (2: resident blobs in stream mode; 3: weights from storage;
                               // 4: in-place shortcuts, convs over a concatenation's parts; 5: blobs staged
                               // in the activation arena; 6: layers above the slot staged whole)
  std::string cfg_path;
  std::string model_name;       // cfg file name without directory
  Target target;
  // The options it was compiled with, for the record (JSON, reports); engines read
  // `engine` only (SessionOptions is incomplete here on purpose).
  std::shared_ptr<const SessionOptions> options;
  EngineSettings engine;        // resolved from the options and the compile inputs
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
  std::vector<double> expand_ms;  // the part of layer_ms that expands int8 weights (CompileInputs::expand_ms)
  double predicted_ms = 0;      // 0: not predicted
  // The latency no plan within the budget can be predicted below (lower_bound.h),
  // stream mode with kernel times and a ring-capable target; 0: not computed.
  double lower_bound_ms = 0;
  // Targets with a calibrated copy profile: the same bound with the calibrated profile's
  // bandwidth (>= lower_bound_ms; a bound only as far as copies in an inference are never
  // faster than calibrated, docs/streaming.md section 6); 0: not computed.
  double lower_bound_calibrated_ms = 0;
  // Int8 expansions the bound's kernel times count in line (LatencyBound::expanded_steps:
  // the bound errs high by up to their time where > 0).
  int lower_bound_expanded_steps = 0;
  // Weight budget auto with kernel times: preload's predicted latency (every weight
  // resident) that the slowdown target was set from; 0 otherwise.
  double auto_preload_ms = 0;
  std::vector<std::string> notes;  // how choices were made, one line each

  // Compiled without kernel times where a placement pass needs them (budget auto,
  // residency, arena staging, unit search): compile again once they are measured. Not
  // stored in the JSON (an engine runs a model compiled in the same process).
  bool wants_layer_times = false;
  bool needs_layer_times() const { return wants_layer_times && layer_ms.empty(); }
  int64_t device_weight_bytes() const;  // resident blobs or the pool
  std::string to_text() const;          // the execution plan, the weight placement, predictions, notes
};

}  // namespace dlr
