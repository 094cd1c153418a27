// dlbench --models: several models on one Runtime (runtime/multi/runtime.h) against
// each one's own preload session, in the same run and in a process of its own.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dlr::tools {

struct ModelsBenchArgs {
  // Comma-separated CFG[:WEIGHTS][@SIZE]; no WEIGHTS: synthetic weights (seeded).
  std::string models;
  std::string device = "cuda";
  std::string precision = "fp16";
  // Comma-separated runtime budgets: "NN%" of the separate preload sessions' device
  // memory (weights + activations + workspace summed), a size, or "all".
  std::string budgets = "40%";
  std::string copy_profile = "auto";
  bool no_prefetch = false;
  std::string split = "sum";  // the joint plan's objective: sum or max-slowdown
  std::string ring = "shared";  // comma-separated: shared, per-model (RuntimeOptions::shared_ring)
  // Comma-separated cuDNN workspace limits per convolution for the runtime's models
  // (SessionOptions::workspace_limit; the separate preload sessions keep the default):
  // "default", 0 or a size as --weight-budget takes it (2MiB, bytes).
  std::string workspace_limits = "default";
  bool time_input = false;  // latency from set_input (the upload included) instead of from run()
  // Each inference's input: "tensor" (an f32 NCHW tensor at the network size through
  // set_input, pageable: the call returns once uploaded) or "image" (a 640x480 8-bit
  // image through set_images, as detect() does: pinned staging, upload and resize on
  // the device in stream order).
  std::string input = "tensor";
  // Distinct inputs per model, used in turn (1: the same one every time; more: each
  // upload reads memory not touched for a while, as a new frame).
  int frames = 1;
  // Comma-separated, compared in one run: what the runtime's max-slowdown split divides
  // each model's prediction by. "none": its own all-resident prediction; "own": the
  // model's preload latency measured in a process of its own (SessionOptions::alone_ms;
  // needs the own-process baselines).
  std::string alone = "none";
  // Comma-separated, compared in one run: RuntimeOptions::prefetch_depth (1: a model's
  // prefetch only while its predecessor runs; 2: from two models ahead).
  std::string prefetch_depths = "1";
  // Comma-separated, compared in one run: SessionOptions::arena_staging of the runtime's
  // models ("on": streamed blobs may be copied into idle activation bytes; "off").
  std::string arena_staging = "on";
  // The runtime's models' SessionOptions::prefetch_lead_ms, ms (0: none). The bench's own
  // gap before each run() is set_input, an upload: it queues behind a prefetch, so it is
  // not a lead (docs/streaming.md section 8).
  double prefetch_lead_ms = 0;
  // --period-ms: each round-robin inference (warm-up included) begins this many ms after
  // the one before it began, the models taking frames in turn (0: back to back; one that
  // ends late starts the next at once). Copies enqueued before a gap, such as the next
  // model's prefetch, run in it; prefetch_lead_ms lets the joint plan count it.
  double period_ms = 0;
  int iters = 50;      // timed round-robin rounds
  int warmup = 10;
  int concurrent_iters = 0;  // > 0: one thread per model, this many detect() calls each
  int soak = 0;              // > 0: soak_threads threads x soak inferences across the models (outputs checked)
  int soak_threads = 4;
  uint64_t seed = 1;
  int threads = 0;  // CPU threads per session (0: auto)
  std::string json;
  // Each model's preload also measured in a process of its own (this executable again,
  // --baseline-only, one model): where a CUDA session after the first of a process runs
  // slower (the H100 of 2026-11-26; docs/streaming.md section 6, "Position in the
  // process"), the preload rows measured here are not each model's honest "alone" latency.
  bool isolate_baselines = true;
  // --baseline-only (the child of isolate_baselines): only the separate preload sessions,
  // timed as in the parent, then the JSON; no runtime, no detections.
  bool baseline_only = false;
  // The session flags --models hands to the runtime's models (not to the preload
  // baselines): option name -> text, one value each (--slot-size, --slice-by,
  // --stage-whole where given).
  std::vector<std::pair<std::string, std::string>> model_flags;
};

// Runs the benchmark; prints a table on stdout; returns a tool exit code.
int run_models_bench(const ModelsBenchArgs& a);

}  // namespace dlr::tools
