// ExecutionPlan: everything an executor needs, computed before the first
// inference and printable/testable without a GPU.
//
//  - order: one Step per layer, in layer order, except that a sliced conv layer
//    (runtime/compile/slicing.h) runs as several consecutive steps, one per slice
//    of its output channels (filters) or of its input channels;
//  - activations: every layer output lives in a Buffer (a byte range of one
//    arena) or is a channel-slice view of one; buffers get offsets from a
//    liveness analysis so memory is reused;
//  - weights: one WeightBlob per conv layer (prepared bytes in the run's
//    precision); residency/transfer units are added by the streaming planner.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/op_params.h"
#include "runtime/core/status.h"
#include "runtime/core/types.h"

namespace dlr {

struct Buffer {
  int id = 0;
  int64_t offset = 0;  // bytes from the arena base (aligned)
  int64_t bytes = 0;   // batch * c * h * w * dtype size
  DType dtype = DType::kF32;
  Layout layout = Layout::kNCHW;  // options.layout, except network outputs (yolo etc.): always NCHW f32
  int c = 0, h = 0, w = 0;  // per-image shape of the whole buffer
  int first_step = 0;  // first step that writes it (-1: written before step 0, i.e. the input)
  int last_step = 0;   // last step that reads it (== steps.size() for network outputs)
  int owner_layer = -1;  // layer whose output created it (-1: network input)
};

// A channel slice [c_offset, c_offset + c) of a buffer.
struct ViewRef {
  int buffer = -1;  // -1: no buffer (the output of a route read through PlannerOptions::conv_over_concat)
  int c_offset = 0;
  int c = 0;
};

// Which way a sliced conv is cut (runtime/compile/slicing.h).
enum class SliceAxis : uint8_t {
  kFilters,   // slices of its output channels: each writes its channels of the output
  kChannels,  // slices of its input channels: each adds its partial sums into the whole output
};

struct Step {
  int index = 0;          // position in ExecutionPlan::steps (== layer unless a layer before it is sliced)
  int layer = 0;          // the network layer it runs (or a slice of)
  LayerKind kind = LayerKind::kConv;
  int cfg_line = 0;       // of the layer's [section] header, for messages
  Shape3 in;              // per-image shape of inputs[0] (route/shortcut: the previous layer, as Darknet prints)
  Shape3 out;             // per-image output shape
  LayerParams params;     // the op's parameters (kernels/op_params.h): engines read nothing else
  std::vector<ViewRef> inputs;  // conv/maxpool/upsample/yolo: 1; shortcut: prev then `from` layers
  ViewRef output;               // where this layer's output lives
  // route: (source, destination) channel copies still needed after in-place placement
  std::vector<std::pair<ViewRef, ViewRef>> copies;
  bool no_op = false;  // nothing to run (dropout, route that is a pure view or fully in place)
  int weight = -1;     // index into ExecutionPlan::weights, -1 for none
  // A slice of a conv layer (slice >= 0), cut along `axis`:
  //  - kFilters: it computes output channels [filter_begin, filter_begin + out.c) of the
  //    layer; params hold the slice's filter count. Where the output's layout cannot take
  //    a channel slice (NHWC), `output` is a packed scratch buffer and `copies` moves it
  //    into the layer's output after the conv.
  //  - kChannels: it reads input channels [channel_begin, channel_begin + in.c) and
  //    computes the whole output from them. The first slice writes the output, the others
  //    add into it (`accumulate`); only the last adds the bias and applies the activation
  //    (the others' params say linear and their blobs hold no bias). Where the input's
  //    layout cannot give a channel slice (NHWC), `packs` copies it into a packed scratch
  //    buffer before the conv and inputs[0] is that buffer.
  int slice = -1;
  int slices = 0;         // slices of the layer (0: not sliced)
  SliceAxis axis = SliceAxis::kFilters;
  int filter_begin = 0;
  int channel_begin = 0;
  bool accumulate = false;  // the op adds into its output instead of overwriting it
  std::vector<std::pair<ViewRef, ViewRef>> packs;  // (source, destination) copies before the op
  // A blob stored int8 (WeightBlob::format): the buffer its weights are expanded into, in
  // the blob's dtype, before the op; -1: none. Consecutive int8 steps form expansion
  // groups (dequant_group, numbered in step order), expanded together; a group's buffers
  // are live from the first step of the group before on (an engine may expand them while
  // that group runs: runtime/compile/dequant_buffers.h).
  int dequant = -1;
  int dequant_group = -1;
  // A shortcut folded into this conv (PlannerOptions::fold_shortcuts,
  // runtime/compile/fusion.h): after act(conv + bias), rounded to the output's dtype, the
  // conv adds `residual` and applies `residual_activation`, writing what the shortcut
  // step would have written (its output is this step's output, in place). buffer -1: none.
  ViewRef residual;
  Activation residual_activation = Activation::kLinear;
  int folded_into = -1;  // a shortcut step: the conv step that runs it (then no_op)
};

// Prepared weights of one conv layer (or slice) as one contiguous blob:
// [weights (weight_elems x dtype)] [pad] [bias (bias_elems x f32) at bias_offset] [pad to 256]
// (int8: scales between the weights and the bias); runtime/compile/blob_layout.h computes
// the offsets and bytes.
struct WeightBlob {
  int layer = 0;              // the network layer
  int step = 0;               // the step reading it (== layer unless the plan is sliced)
  int filter_begin = 0;       // a slice: output channels [filter_begin, filter_begin + filters)
  int filters = 0;            // of the layer; 0: every filter
  int channel_begin = 0;      // a slice: input channels [channel_begin, channel_begin + channels)
  int channels = 0;           // of the layer; 0: every input channel
  int64_t weight_elems = 0;  // prepared conv weights (layout chosen by the backend)
  int64_t bias_elems = 0;     // 0: no bias (an input-channel slice before the last)
  DType dtype = DType::kF32;  // the convolution computes with weights of this dtype; bias is always f32
  // kInt8: the weights are stored int8 with one f32 scale per filter of the blob
  // (weight = int8 x scale); the engine expands them into the step's dequant buffer
  WeightFormat format = WeightFormat::kFp;
  int64_t scale_elems = 0;    // int8: the blob's filters (a channel slice: every filter of the layer); fp: 0
  int64_t scale_offset = 0;   // int8: bytes from the blob start, 256-aligned; fp: 0
  int64_t bias_offset = 0;    // bytes from the blob start, 256-aligned
  int64_t bytes = 0;          // whole blob, a multiple of PlannerOptions::weight_align (>= 256)
  // Staged whole (runtime/compile/whole_staging.h): a conv blob above the slot kept whole
  // and copied, every inference a stream plan runs, into activation arena bytes
  // [arena_offset, arena_offset + bytes) that no buffer holds from the end of step
  // arena_wait to the end of its reader. -1: not.
  int64_t arena_offset = -1;
  int arena_wait = -1;
};

struct PlannerOptions {
  int batch = 1;
  Layout layout = Layout::kNCHW;
  DType activation_dtype = DType::kF32;  // yolo outputs are always f32
  DType weight_dtype = DType::kF32;
  // kInt8: conv blobs of filters of at least kInt8MinFilterWeights weights int8 (Step::dequant
  // buffers), the others fp (runtime/compile/blob_layout.h, conv_weight_format)
  WeightFormat weight_format = WeightFormat::kFp;
  bool concat_in_place = true;  // producers write straight into their slice of a route's buffer
  int64_t alignment = 256;      // of every buffer offset, bytes
  int64_t weight_align = 256;   // every weight blob's size is a multiple of this (4096 when weights come from storage)
  bool keep_all_outputs = false;  // debugging/tests: no reuse, every layer output readable after a run
  // Whether convolutions accept channel-slice views that are not packed (a slice is
  // packed only for NCHW with batch 1). When false, a conv never writes into a
  // route's buffer and a route view read by a conv becomes a copy.
  bool conv_strided_io = true;
  // A shortcut writes its output into its first input's buffer when it is that buffer's
  // last reader (same shape, dtype and layout): the residual add runs in place.
  bool in_place = true;
  // A conv whose input is a multi-input route (groups 1) that nothing else reads, with a
  // 1x1 kernel, stride 1, no padding and groups 1, reads the route's inputs directly:
  // its Step::inputs are the parts in channel order (each a whole buffer) and the route
  // step is a no-op whose output has no buffer (ViewRef::buffer == -1). Set only for a
  // backend that runs such a conv (CUDA NHWC: one GEMM per part); no copy, no concat
  // buffer. Off with keep_all_outputs.
  bool conv_over_concat = false;
  // A shortcut that adds one view to the output of the conv just before it, in place, runs
  // inside that conv's epilogue (runtime/compile/fusion.h): no kernel and no pass of its own.
  bool fold_shortcuts = false;
  // >= 0: the backend picks each [yolo] output's candidates (objectness > select_thresh,
  // strict like the decode) on the device and downloads only them (ExecutionPlan::selects);
  // < 0: every output is downloaded whole.
  float select_thresh = -1.f;
};

// A [yolo] output whose candidates the device picks (PlannerOptions::select_thresh): per
// image, how many it found and the first `capacity` of them, in any order, each as its key
// (cell * anchors + anchor: the decode's order) and its `entries` values (tx, ty, tw, th,
// objectness, classes) as the layer's output holds them. One block per head in the
// engine's selection buffer, the same on the device and in the host copy (bytes from the
// block's start): counts (batch int32), keys (batch x capacity int32), rows (batch x
// capacity x entries f32). A count above capacity means the rows are incomplete: the
// whole output is downloaded instead (Engine::download_output).
struct OutputSelect {
  int layer = -1;
  int anchors = 0;
  int entries = 0;   // 5 + classes
  int cells = 0;     // w x h
  int capacity = 0;  // rows kept per image
  int64_t offset = 0;        // of the block in the selection buffer
  int64_t keys_offset = 0;   // within the block
  int64_t rows_offset = 0;   // within the block
  int64_t bytes = 0;         // of the block
};

struct ExecutionPlan {
  PlannerOptions options;
  Shape3 input_shape;
  int input_buffer = -1;
  std::vector<Buffer> buffers;
  std::vector<Step> steps;        // steps[i].index == i; in layer order
  std::vector<int> layer_step;    // per layer: its first step
  std::vector<ViewRef> layer_out; // output view of every layer (== steps[i].output)
  // Layers whose outputs are the network outputs (is_output_kind: [yolo], [region],
  // [Gaussian_yolo]), in layer order: whole f32 NCHW buffers live to the end.
  std::vector<int> output_layers;
  std::vector<WeightBlob> weights;
  // The outputs selected on the device (PlannerOptions::select_thresh), in output order;
  // empty where none.
  std::vector<OutputSelect> selects;

  int64_t arena_bytes = 0;        // planned activation memory (max offset + bytes)
  int64_t naive_bytes = 0;        // sum of every layer output + input, no reuse
  int64_t weight_bytes() const;
  int expanded_steps() const;  // steps whose weights are stored int8 and expanded (Step::dequant >= 0)

  const Buffer& buffer(const ViewRef& v) const { return buffers[size_t(v.buffer)]; }
  std::string to_text() const;  // human-readable, one line per step
  // Parameters of a [yolo] output layer.
  const YoloParams& yolo(int layer) const { return std::get<YoloParams>(step_of(layer).params); }
  const Step& step_of(int layer) const { return steps[size_t(layer_step[size_t(layer)])]; }
  const OutputSelect* select_of(int layer) const;  // null: the layer is downloaded whole
  int64_t select_bytes() const;                     // the selection buffer's size (0: none)
};

struct NetworkDesc;

// Builds the plan. Fails only on inputs the planner cannot place (never for a
// NetworkDesc that parse_network_cfg accepted, with valid options).
Expected<ExecutionPlan> build_plan(const NetworkDesc& net, const PlannerOptions& options);

// The selection blocks of `net`'s [yolo] outputs for a batch (runtime/compile/output_select.cpp):
// capacity per image max(64, cells x anchors / 16), at most cells x anchors; none where
// select_thresh < 0.
std::vector<OutputSelect> plan_output_selects(const NetworkDesc& net, const PlannerOptions& options);

}  // namespace dlr
