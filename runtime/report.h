// What engines report about a run and an open: per-layer, per-copy and per-read timing,
// the run's parts, memory per part, and where an open went. Plain data; filled by
// engines (runtime/engine.h), read by sessions, tools and the storage pipeline.
#pragma once

#include <cstdint>
#include <string>

namespace dlr {

// Per-layer timing of the last run(), ms from the start of the network.
// start_ms: the layer's turn on the compute stream (previous layer done);
// ready_ms: its weights have landed too (stream mode; == start_ms otherwise);
// end_ms: its kernels are done. stall = ready - start (waiting for weights).
struct LayerTiming {
  int layer = 0;
  double start_ms = 0;
  double end_ms = 0;
  double ready_ms = 0;
  int64_t weight_bytes = 0;  // bytes copied for this layer's weights in this run (stream mode)
  int step = 0;              // the plan step (== layer unless a conv before it is sliced)
  int slice = -1;            // >= 0: this row is one slice of a sliced conv (Step::slice)
  double ms() const { return end_ms - ready_ms; }
  double stall_ms() const { return ready_ms - start_ms; }
};

// One host-to-device weight copy of the last run() (stream mode).
struct CopyTiming {
  int unit = 0;
  int first_layer = 0;  // the first step that needs it (a layer unless the plan is sliced)
  int64_t bytes = 0;
  double start_ms = 0;  // ms from the start of the network
  double end_ms = 0;
  bool next_inference = false;  // a tail copy: the next inference's unit, under this one's last layers
};

// One read from storage of the last run() (weights from storage): a read unit of the
// ReadPlan, host clock, ms from the start of run().
struct ReadTiming {
  int unit = 0;
  int first_layer = 0;  // the first step that needs it (a layer unless the plan is sliced)
  int64_t bytes = 0;
  double start_ms = 0;  // first request submitted
  double end_ms = 0;    // last request landed
};

// Timing of the last run(), measured on the device with events where there is one.
struct RunTiming {
  double upload_ms = 0;    // input transfer + pre-processing (set_images/set_input), if measured
  double network_ms = 0;   // the network itself (first to last kernel)
  double download_ms = 0;  // output transfer
  double total_ms = 0;     // host wall time of run()
  // Prefetch across inferences (CUDA streaming): how many of the bytes copied ahead
  // (StreamPlan::prefetch_bytes) had landed when run() began (queried without waiting; in
  // a Runtime's shared ring per prefetch chunk, else all or nothing). -1: this inference
  // was not prefetched.
  int64_t prefetch_ready_bytes = -1;
};

// Host memory that device work reads during every inference: a weight copy's source or
// mapped memory a kernel reads. Each must be page-locked (pinned) so that the copy engine
// reads it directly and it never pages out (tests/gpu/pinned_staging_test.cpp checks).
struct HostRegion {
  const char* what = "";  // "host store", "arena-staged store", "storage staging", "mapped storage staging"
  const void* data = nullptr;
  int64_t bytes = 0;
};

struct MemoryReport {
  int64_t weights = 0;      // resident/pool weight bytes on the device that runs the network
  int64_t activations = 0;  // planned activation arena
  int64_t workspace = 0;    // scratch (im2col, cuDNN workspace)
  int64_t other = 0;        // staging, outputs, ...
  int64_t host_weights = 0; // host memory for weights: the pinned streaming store, or the staging area for
                            // reads from storage; 0 if none
  int64_t read_bytes = 0;   // bytes read from storage per inference (weights from storage)
  // Shared memory (a Runtime's session): activations and workspace are the runtime's and
  // count 0 here; these are what this engine needs of them.
  int64_t shared_activations = 0;
  int64_t shared_workspace = 0;
};

// Where an engine's open went (host clock, ms; 0 where a part does not apply). Filled by
// create() and finalize(); Session::open_timing() reports it with the session's parts.
struct EngineOpenTiming {
  double device_ms = 0;        // cudaSetDevice, stream and events (waits for the context if it is not ready)
  double cudnn_handle_ms = 0;  // cudnnCreate on the opening thread (0 when the context helper made the handle)
  double weights_ms = 0;       // weight placement: upload (preload), pinned store or read pipeline (stream)
  double weights_prepare_ms = 0;  // of weights_ms: the host threads preparing blobs (BN fold, dtype, layout), wall time
  int weights_threads = 0;        // the threads preparing them
  double buffers_ms = 0;       // activation arena, input, workspace, outputs, image staging
  double conv_setup_ms = 0;    // every CudnnConv::create, with the algorithm cache's load and save
  double conv_descriptors_ms = 0;  // of which: descriptors (sum over convs)
  double conv_query_ms = 0;        // of which: cuDNN's heuristic / find and the pick (sum)
  double conv_workspace_ms = 0;    // of which: workspace size query of a cached algorithm without its size (sum)
  double conv_first_ms = 0;        // the first conv's create alone (cuDNN loads its kernels' libraries there)
  double algo_cache_ms = 0;        // of which: reading and writing the algorithm cache file
  double fused_ms = 0;             // of conv_setup_ms: cuDNN graphs built (runtime compilation included)
  int convs_fused = 0;             // convs run as one cuDNN graph (Fusion::kCudnn, kAuto)
  int fused_refused = 0;           // convs whose graph no cuDNN engine took (run unfused)
  int fused_loaded = 0;            // distinct graphs loaded from the plans kept for this model and GPU
  int fused_plans_stored = 0;      // plans the cache file held at open
  // Fusion::kAuto, per fused configuration: the graph and the conv + epilogue pass timed
  // at open (or their times read from the cache) and the faster one run.
  double fused_choice_ms = 0;      // of conv_setup_ms: timing both variants at open
  int fused_timed = 0;             // configurations timed at this open
  int fused_slower = 0;            // convs run unfused because their graph was measured slower
  // Strict fp32 with the choices kept: each conv configuration's direct-summation
  // algorithms timed at open (or the times read from the cache), the fastest run.
  double algo_choice_ms = 0;       // of conv_setup_ms: timing the algorithms at open
  int algos_timed = 0;             // configurations timed at this open
  int algos_changed = 0;           // of which cuDNN's own choice was measured slower
  double x3_setup_ms = 0;          // of conv_setup_ms: 3xTF32 convs made (their chunk convs, the cuBLAS handle)
  int convs_x3 = 0;                // convs run as 3xTF32 (either form)
  double cublas_handle_ms = 0;     // of conv_setup_ms: the cuBLAS handle (convs over a concatenation, 3xTF32 GEMMs),
                                   // with the wait for cuBLAS where the open had not loaded it yet
  int convs = 0;                   // convolutions created
  int convs_cached = 0;            // of which with a cached algorithm (confirmed by cuDNN, or with its size)
  int convs_workspace_cached = 0;  // of convs_cached: the workspace size came with it (no cuDNN call)
  int convs_queried = 0;           // of which cuDNN was asked
  std::string algo_cache;          // "off", "absent", "hit", "partial", "ignored: <why>" (the file's state)
  std::string algo_cache_path;     // the cache file ("" when off)
  double warmup_ms = 0;            // finalize(): the warm-up run and its synchronisation (~0 without one)
  bool warmup_run = false;         // finalize() ran a warm-up (a CUDA graph's first replay, or asked for:
                                   // EngineSettings::warm_up_at_open); else the first inference loads the kernels
  bool warmup_eager = false;       // the warm-up ran outside a graph (no graph, or the capture needed it first)
  double graph_ms = 0;             // finalize(): CUDA graph capture (with a graph: it loads the kernels)
  // finalize(): each distinct convolution run once before the capture (runtime/warm_split.h)
  double kernels_warm_ms = 0;      // wall time, threads started to joined
  int kernels_warm_convs = 0;      // configurations run
  int kernels_warm_threads = 0;    // threads that ran them (0: no warm-up)
};

}  // namespace dlr
