// The compile step: network + target + options (+ what was measured at open and, for a
// Runtime's model, its placement) -> one self-contained, printable, JSON-serialisable
// CompiledModel (compiled_model.h). Engines execute a CompiledModel and plan nothing
// themselves (docs/architecture.md, "Compile step").
//
//   compile(net, target, options)                      first plan (equal-chunk units)
//   engine = create_engine(model, weights)             allocates, uploads
//   ms = engine->measure_layer_ms()                    kernel times on this device, where
//   model = compile(net, target, options, {ms})          the placement needs them
//   engine->replan(model, weights)                     the final placement
//
// Session::open runs this as one loop (runtime/session_open.cpp). Plain C++ (no CUDA):
// a plan can be compiled, printed, saved and diffed without a GPU.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/compile/compiled_model.h"
#include "runtime/compile/placement.h"
#include "runtime/core/status.h"
#include "runtime/options.h"

namespace dlr {

struct NetworkDesc;

// What compile() takes besides the network, the target and the options: what was
// measured at open, and the decisions of a Runtime hosting the model.
struct CompileInputs {
  std::vector<double> layer_ms;     // kernel time of every step (ms; empty: not measured yet)
  // Per step, the part of layer_ms that expanded int8 weights in line (ms; empty: not
  // measured apart). A session of its own plans with them on an expansion stage where
  // SessionOptions::expansion_stage is on (SimOptions::expand_ms).
  std::vector<double> expand_ms;
  bool shared_memory = false;       // the activation arena and the workspace are a Runtime's
  const Placement* placement = nullptr;  // a Runtime's placement of the weights (not owned), or null
  // The slicing axis per sliced layer (network layer index), chosen from kernel times
  // measured at open (slice_choice.h); empty: the options' axis for every layer.
  std::map<int, SliceAxis> slice_axes;
};

// Validates the options (validate_options) and the target against them, builds the
// execution plan and runs the placement passes (plan_placement). Pure: no file, no device.
Expected<CompiledModel> compile(const NetworkDesc& net, const Target& target, const SessionOptions& options,
                                const CompileInputs& inputs = {});

// The same with only measured kernel times (a standalone session's second compile).
Expected<CompiledModel> compile(const NetworkDesc& net, const Target& target, const SessionOptions& options,
                                const std::vector<double>& layer_ms);

// The planner options a target and options give (layout and dtypes per precision).
PlannerOptions planner_options(DeviceKind device, const SessionOptions& options);
// Whether a CUDA plan picks its [yolo] candidates on the device (SessionOptions::decode:
// gpu, or auto with a batch of more than one image).
bool decodes_on_device(const SessionOptions& options);

// options.layout with auto (-1) resolved for `target`, as compile() plans: unchanged when
// given, on the CPU and for fp16 and tf32 (planner_options: NHWC). Strict fp32 on a GPU:
// 1 (NHWC) where its engine measures 3xTF32 tensor-core convs against the FMA ones
// (engine.times_fp32_algorithms(), a target with TF32 tensor cores) and every weight is
// resident (preload): the 3xTF32 convs' split operands need workspace that a bounded weight
// pool would not leave (docs/benchmarks.md, "Strict fp32"); 0 (NCHW) otherwise, so plans
// for storage (plan_for_prepare) and streamed plans keep NCHW.
int resolved_layout(const Target& target, const SessionOptions& options, const EngineSettings& engine);

// The plan whose weight blobs a storage run with `options` reads (layout and dtype from
// planner_options for options.device, blobs in whole 4 KiB pages as storage plans
// have them): compile()'s first step without a target or placement, so a CUDA plan can
// be prepared on a machine without a GPU. Validates the options first. The prepared
// file of a session is written from its compiled plan, which has the same blobs.
Expected<ExecutionPlan> plan_for_prepare(const NetworkDesc& net, const SessionOptions& options);

// The run settings of an engine for these options and inputs.
EngineSettings engine_settings(const SessionOptions& options, const CompileInputs& inputs);
// What the placement decides of them: a model from storage whose kernels read int8
// weights from staging (zero copy) runs without a CUDA graph (engine.cuda_graph false).
void settle_graph(CompiledModel* model);

// JSON form (runtime/compile/compile_json.cpp): every field of the model, the options
// record included; from_json(to_json(m)) gives a model whose to_json() is identical.
std::string compiled_model_to_json(const CompiledModel& model);
Expected<CompiledModel> compiled_model_from_json(const std::string& text, const std::string& what);

}  // namespace dlr
