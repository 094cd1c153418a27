#include "runtime/compile/compile.h"

#include <cstdio>

#include "loaders/network_desc.h"
#include "runtime/compile/placement.h"
#include "runtime/compile/slice_choice.h"
#include "runtime/compile/slicing.h"
#include "runtime/compile/slot_choice.h"
#include "runtime/compile/whole_staging.h"
#include "runtime/core/units.h"
#include "runtime/streaming/lower_bound.h"

namespace dlr {
namespace {

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), f, a, b, c);
  return buf;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string n = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = n.rfind(".cfg");
  return dot != std::string::npos && dot + 4 == n.size() ? n.substr(0, dot) : n;
}

Status check_inputs(const Target& target, const SessionOptions& options, const CompileInputs& inputs) {
  DLR_RETURN_IF_ERROR(validate_options(options));
  if (target.device != options.device)
    return invalid_argument(std::string("compile: options ask for device ") + device_name(options.device) +
                            " but the target is " + device_name(target.device));
  if (inputs.placement && (options.device != DeviceKind::kCUDA || options.mode != WeightMode::kStream))
    return invalid_argument("compile: a placement is for a model that streams its weights on a GPU");
  return Status();
}

// The placement pipeline's results into the model.
void take_placement(PlacementState& s, CompiledModel* m) {
  m->streaming = s.streaming;
  m->stream = std::move(s.stream);
  m->budget_bytes = s.budget_bytes;
  m->from_storage = s.from_storage;
  m->reads = std::move(s.reads);
  m->predicted_ms = s.predicted_ms;
  m->lower_bound_ms = s.lower_bound_ms;
  m->lower_bound_calibrated_ms = s.lower_bound_calibrated_ms;
  m->lower_bound_expanded_steps = s.lower_bound_expanded_steps;
  m->auto_preload_ms = s.auto_preload_ms;
  m->wants_layer_times = s.wants_times;
  for (std::string& n : s.notes) m->notes.push_back(std::move(n));
}

}  // namespace

bool decodes_on_device(const SessionOptions& options) {
  return options.decode == Decode::kGpu || (options.decode == Decode::kAuto && options.batch > 1);
}

PlannerOptions planner_options(DeviceKind device, const SessionOptions& options) {
  PlannerOptions p;
  p.batch = options.batch;
  p.concat_in_place = options.concat_in_place;
  p.keep_all_outputs = options.keep_all_outputs;
  // Storage: blob sizes in 4096 multiples, so streamed ranges are O_DIRECT-readable (read_plan.h).
  if (options.weights_from == WeightsFrom::kStorage) p.weight_align = kReadAlign;
  p.weight_format = options.weight_format;
  if (device == DeviceKind::kCPU) return p;  // fp32 NCHW, strided views everywhere
  const bool f16 = options.precision == Precision::kFP16;
  // Auto layout without a target: NHWC for the tensor-core precisions, NCHW for strict
  // fp32 (compile() resolves fp32's auto for its target first: resolved_layout).
  const bool tensor_cores = options.precision != Precision::kFP32;
  p.layout = options.layout < 0 ? (tensor_cores ? Layout::kNHWC : Layout::kNCHW)
                                : (options.layout == 1 ? Layout::kNHWC : Layout::kNCHW);
  p.activation_dtype = f16 ? DType::kF16 : DType::kF32;
  p.weight_dtype = p.activation_dtype;
  // cuDNN accepts NCHW channel slices (strided images) but rejects NHWC slices
  // (pixel stride > channels): every algorithm answers NOT_SUPPORTED (measured, cuDNN 9.14).
  p.conv_strided_io = p.layout == Layout::kNCHW;
  // So a route whose only reader is a 1x1 conv costs no copy and no buffer in NHWC: the
  // conv reads the parts (kernels/cuda/conv_concat.cpp, one GEMM per part).
  p.conv_over_concat = p.layout == Layout::kNHWC;
  // A shortcut after a conv runs in that conv's epilogue (runtime/compile/fusion.h).
  p.fold_shortcuts = options.fusion != Fusion::kOff && !options.keep_all_outputs;
  // [yolo] candidates picked on the GPU: only they are downloaded (plan.h, OutputSelect).
  if (decodes_on_device(options)) p.select_thresh = options.thresh;
  return p;
}

int resolved_layout(const Target& target, const SessionOptions& options, const EngineSettings& engine) {
  if (options.layout >= 0 || options.device != DeviceKind::kCUDA || options.precision != Precision::kFP32)
    return options.layout;
  const bool x3 = target.tf32_tensor_cores && engine.times_fp32_algorithms() && options.mode == WeightMode::kPreload;
  return x3 ? 1 : 0;
}

namespace {

// Why strict fp32's auto layout is what resolved_layout() made it (a note of the model);
// empty where the layout was given or the precision has one layout.
std::string layout_note(const Target& target, const SessionOptions& options, const EngineSettings& engine) {
  if (options.layout >= 0 || options.device != DeviceKind::kCUDA || options.precision != Precision::kFP32) return "";
  if (resolved_layout(target, options, engine) == 1)
    return "layout: NHWC, so that strict fp32's convs may run as 3xTF32 on the tensor cores where the first open "
           "measures them faster (their split operands take workspace; layout nchw: none)";
  const char* why = !target.tf32_tensor_cores            ? "the GPU has no TF32 tensor cores"
                    : options.mode != WeightMode::kPreload ? "the weights stream (3xTF32's workspace would outgrow a "
                                                             "bounded weight pool)"
                                                           : "nothing is timed at open (the kernel cache off, "
                                                             "cudnnFind on, or a Runtime's shared buffers)";
  return std::string("layout: NCHW for strict fp32 with FMA convs: ") + why;
}

// Layers above the slot may be staged whole (whole_staging.h) where arena staging may
// run: a ring on CUDA (a session's own or a Runtime's shared one: its models run one at a
// time, each run ending before the next starts, so the shared arena's idle bytes are the
// running model's), weights from host memory. The decision reads the plan alone, so a
// Runtime's model compiles alike before and after its placement.
bool stages_whole(const Target& target, const SessionOptions& o) {
  return o.stage_whole && o.arena_staging && o.device == DeviceKind::kCUDA && o.mode == WeightMode::kStream &&
         o.weights_from == WeightsFrom::kHost && o.weight_pool != PoolLayout::kSlots && target.map_granularity > 0 &&
         !o.keep_all_outputs;
}

std::string whole_note(const ExecutionPlan& plan) {
  int layers = 0;
  const int64_t bytes = staged_whole_bytes(plan, &layers);
  return fmt("slices: %.0f layers above the slot kept whole, their %.2f MiB copied into idle activation bytes",
             layers, mib(bytes));
}

}  // namespace

EngineSettings engine_settings(const SessionOptions& o, const CompileInputs& inputs) {
  EngineSettings e;
  e.device = o.device;
  e.precision = o.precision;
  e.cuda_device = o.cuda_device;
  e.threads = o.threads;
  e.cuda_graph = o.cuda_graph;
  e.profile_layers = o.profile_layers;
  e.find_algorithms = o.find_algorithms;
  e.workspace_limit = o.workspace_limit;
  e.cache_conv_algos = o.cache_kernel_times;  // one switch for what is kept per GPU and model
  e.max_image_width = o.max_image_width;
  e.max_image_height = o.max_image_height;
  e.reader = o.reader;
  e.thread_placement = thread_placement(o);
  e.prefetch_next = o.prefetch_next && o.mode == WeightMode::kStream && o.weights_from == WeightsFrom::kHost;
  e.shared_memory = inputs.shared_memory;
  e.shared_ring = inputs.placement && inputs.placement->shared_ring_bytes > 0 && o.mode == WeightMode::kStream;
  e.prefetch_reads = o.prefetch_reads;
  e.cache_hits = o.cache_hits;
  e.warm_up_at_open = o.warm_up_at_open;
  e.warm_threads = o.warm_threads;
  e.fusion = o.fusion;
  return e;
}

// Weights from storage replay a graph whose copies (three stages) or kernels (zero copy)
// wait on the device for each read (kernels/cuda/host_wait.h). int8 weights that the
// kernels read from staging are expanded step by step once the engine's thread has
// waited for their read, so that one path runs without a graph.
void settle_graph(CompiledModel* m) {
  if (!m->from_storage || !m->reads.two_stage) return;
  for (const Step& st : m->plan.steps)
    if (st.dequant >= 0) {
      m->engine.cuda_graph = false;
      return;
    }
}

int64_t CompiledModel::device_weight_bytes() const {
  if (from_storage && reads.two_stage) return 0;  // kernels read the staging area (host memory)
  return streaming ? stream.device_bytes() : plan.weight_bytes();
}

namespace {

// `built` sliced at `slot` (layers above it kept whole and staged where `whole` and the
// arena has room: whole_staging.h), then the placement passes, into *m (whose plan is
// the sliced one even where the placement fails).
Status slice_and_place(const NetworkDesc& net, const SessionOptions& options, const CompileInputs& inputs,
                       const ExecutionPlan& built, int64_t slot, bool whole, CompiledModel* m) {
  SliceOptions slicing = slice_options(options, slot);
  slicing.layer_axis = inputs.slice_axes;
  if (whole) slicing.whole_layers = layers_above_slot(built, slot, planning_profile(m->target, options));
  m->plan = built;
  DLR_ASSIGN_OR_RETURN(const int folded, slice_and_stage(&m->plan, slicing, net.cfg_path));
  if (folded > 0) m->notes.push_back(fmt("fusion: %.0f shortcuts run in the epilogue of the conv before them", folded));
  if (staged_whole_bytes(m->plan) > 0) m->notes.push_back(whole_note(m->plan));
  if (!inputs.slice_axes.empty()) m->notes.push_back(slice_axes_note(m->plan));
  if (!inputs.layer_ms.empty() && inputs.layer_ms.size() != m->plan.steps.size())
    return invalid_argument("compile: " + std::to_string(inputs.layer_ms.size()) + " kernel times for " +
                            std::to_string(m->plan.steps.size()) + " steps");
  m->layer_ms = inputs.layer_ms;
  if (!inputs.expand_ms.empty() && inputs.expand_ms.size() != m->plan.steps.size())
    return invalid_argument("compile: " + std::to_string(inputs.expand_ms.size()) + " expansion times for " +
                            std::to_string(m->plan.steps.size()) + " steps");
  m->expand_ms = inputs.expand_ms;
  m->notes.push_back(fmt("activations: %.2f MiB planned (%.2f MiB without reuse)", mib(m->plan.arena_bytes),
                         mib(m->plan.naive_bytes)));
  PlacementState s = placement_state(m->plan, m->target, options, m->layer_ms, inputs.placement);
  // A Runtime plans its models with the expansions in the kernel times: so do they.
  if (options.expansion_stage && !inputs.placement && !m->layer_ms.empty()) s.sim.expand_ms = m->expand_ms;
  DLR_RETURN_IF_ERROR(plan_placement(s));
  take_placement(s, m);
  return Status();
}

}  // namespace

Expected<CompiledModel> compile(const NetworkDesc& net, const Target& target, const SessionOptions& options,
                                const CompileInputs& inputs) {
  DLR_RETURN_IF_ERROR(check_inputs(target, options, inputs));
  CompiledModel m;
  m.cfg_path = net.cfg_path;
  m.model_name = base_name(net.cfg_path);
  m.target = target;
  m.options = std::make_shared<const SessionOptions>(options);
  m.engine = engine_settings(options, inputs);
  m.letterbox = options.letterbox < 0 ? net.net.letter_box : options.letterbox != 0;
  SessionOptions planned = options;
  planned.layout = resolved_layout(target, options, m.engine);
  DLR_ASSIGN_OR_RETURN(m.plan, build_plan(net, planner_options(options.device, planned)));
  if (std::string note = layout_note(target, options, m.engine); !note.empty()) m.notes.push_back(std::move(note));
  DLR_ASSIGN_OR_RETURN(const int64_t slot, choose_slot_bytes(m.plan, target, options, inputs.placement != nullptr));
  if (slot > 0 && options.slot_bytes == 0)
    m.notes.push_back(fmt("slices: the budget is below the smallest pool of whole layers; layers above %.2f MiB run "
                          "in slices", mib(slot)));
  const ExecutionPlan built = std::move(m.plan);
  const std::vector<std::string> notes = m.notes;
  const bool whole = stages_whole(target, options);
  Status placed = slice_and_place(net, options, inputs, built, slot, whole, &m);
  if (!placed.ok() && staged_whole_bytes(m.plan) > 0) {
    // A plan whose layers above the slot stay whole may find no pool (a budget below
    // the ring's mapping unit takes slots, which cannot stage): every such layer sliced.
    const std::string why = placed.message();
    m.notes = notes;
    placed = slice_and_place(net, options, inputs, built, slot, false, &m);
    if (placed.ok()) m.notes.push_back("slices: no layer kept whole (" + why + ")");
  }
  DLR_RETURN_IF_ERROR(placed);
  settle_graph(&m);
  return m;
}

Expected<CompiledModel> compile(const NetworkDesc& net, const Target& target, const SessionOptions& options,
                                const std::vector<double>& layer_ms) {
  CompileInputs inputs;
  inputs.layer_ms = layer_ms;
  return compile(net, target, options, inputs);
}

std::string CompiledModel::to_text() const {
  std::string s = "model: " + model_name + " (" + cfg_path + ") on " + target.name + ", " +
                  device_name(engine.device) + " " + precision_name(engine.precision) + ", " +
                  weight_mode_name(streaming ? WeightMode::kStream : WeightMode::kPreload) + "\n";
  s += plan.to_text();
  if (streaming && !(from_storage && reads.two_stage)) s += stream.to_text();
  if (from_storage) s += reads.to_text();
  if (predicted_ms > 0) s += fmt("predicted: %.3f ms per inference (simulator, kernel times measured at open)\n",
                                 predicted_ms);
  if (lower_bound_ms > 0)
    s += fmt("lower bound: %.3f ms (no plan within the budget is predicted faster", lower_bound_ms) +
         expansions_note(lower_bound_expanded_steps) + ")\n";
  if (lower_bound_calibrated_ms > 0)
    s += fmt("lower bound, calibrated copies: %.3f ms (the same bound at the copy bandwidth measured in an inference)\n",
             lower_bound_calibrated_ms);
  for (const std::string& n : notes) s += "note: " + n + "\n";
  return s;
}

Expected<ExecutionPlan> plan_for_prepare(const NetworkDesc& net, const SessionOptions& options) {
  DLR_RETURN_IF_ERROR(validate_options(options));
  // A prepared file is read by storage runs, whose blobs are whole 4 KiB pages
  // (PlannerOptions::weight_align): plan as one, whatever --weights-from says.
  SessionOptions storage = options;
  storage.weights_from = WeightsFrom::kStorage;
  storage.mode = options.device == DeviceKind::kCUDA ? WeightMode::kStream : options.mode;
  DLR_ASSIGN_OR_RETURN(ExecutionPlan plan, build_plan(net, planner_options(options.device, storage)));
  DLR_RETURN_IF_ERROR(slice_plan(&plan, slice_options(options, options.slot_bytes), net.cfg_path));
  return plan;
}

}  // namespace dlr
