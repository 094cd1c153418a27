// Internal to dlbench --models (models.h): the state one run shares between its two
// halves, each model's own preload session (models.cpp) and all the models on one
// Runtime (models_runtime.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/multi/runtime.h"
#include "runtime/session.h"
#include "tools/common/model_specs.h"
#include "tools/dlbench/models.h"

namespace dlr::tools {

// Host times of the timed inferences of one model.
struct Timed {
  std::vector<double> total_ms, network_ms;
  std::vector<double> ready_mib;  // prefetched bytes landed when run() began (prefetched inferences only)
  std::vector<double> input_ms;   // host time of the upload (set_input or set_images)
};

// One model's inputs: f32 NCHW tensors at the network size (set_input), or 8-bit 640x480
// images (set_images, what detect() does). Inference k uses frame k % frames, so with
// several frames each upload reads memory no other upload touched lately, as a camera's
// new frame is (one frame: the same memory every time, likely in the CPU's cache).
struct BenchInput {
  std::vector<std::vector<float>> tensors;
  std::vector<std::vector<uint8_t>> pixels;
  std::vector<ImageU8> images;  // point into pixels; none: tensors
  size_t next = 0;               // the frame of the next inference
};

struct ModelsBench {
  explicit ModelsBench(const ModelsBenchArgs& args) : a(args) {}
  const ModelsBenchArgs& a;
  // The options, checked before any work.
  SplitObjective objective = SplitObjective::kSum;
  std::map<std::string, int64_t> workspace_limits;  // --workspace-limit entries -> bytes
  std::map<std::string, double> percents;           // "NN%" budgets -> NN (of the separate sessions' memory)
  SessionOptions base;                              // every session's, but its size
  std::vector<ModelSpec> specs;                     // sizes resolved, synthetic weights written
  std::vector<BenchInput> inputs;                   // [model]
  std::vector<std::vector<uint8_t>> pixels;         // of `images`
  std::vector<ImageU8> images;                      // detect()'s inputs (concurrent, soak)
  std::vector<double> own_ms;                       // [model] preload in a process of its own; -1: not measured
  // The separate preload sessions.
  int64_t separate = 0;                             // their device bytes, summed
  std::vector<double> preload_ms, again_ms, input_ms;  // [model]
  std::vector<std::vector<std::vector<Detection>>> reference;  // [model][image]: the soak's reference outputs
  nlohmann::json out;
};

// The session options of model `s` (base at its size).
SessionOptions session_options(const ModelsBench& b, const ModelSpec& s);

// One inference: the input's upload (set_input or set_images), then run(). Timed from
// run() on, or from the upload on with time_input (then the upload, during which another
// model's prefetch may go on, counts in the latency of the preload sessions and the
// runtime alike). t: null for an untimed one.
Status infer(Session& s, BenchInput& input, Timed* t, bool time_input);

// "%.3f" of `v`, or "-" when it is not positive (not measured); JSON: null.
std::string ms_or_dash(double v);
nlohmann::json ms_or_null(double v);

// All the models on one runtime, for every combination of the runtime's lists: printed
// and added to out["runs"]; *rc set to an error where a concurrent or soak run failed.
Status run_on_runtimes(ModelsBench& b, int* rc);

}  // namespace dlr::tools
