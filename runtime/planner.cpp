// build_plan: execution order, activation placement and weight blobs.
//
// Algorithm (design notes: docs/architecture.md, "Activation planning"):
//  1. Walk layers in order and give every output a location {proto buffer, channel offset}:
//     - dropout aliases its input; a single-input route is a channel-slice view of its input;
//     - a multi-input route (groups == 1) gets a proto buffer; with concat_in_place each
//       input that owns a whole root proto buffer is re-parented into its slice of the
//       route's buffer (the producer then writes there directly); other inputs are copied;
//     - every other layer gets a fresh proto buffer.
//  2. Resolve proto buffers to roots (following re-parenting, summing channel offsets).
//  3. Liveness per root: first writing step .. last reading step (network outputs live
//     to the end, the input from step -1).
//  4. Offsets (runtime/arena_placement.h): no two buffers whose lifetimes intersect
//     share bytes (inclusive intervals: a step's inputs and output never share memory);
//     several greedy placements are tried, down to the most bytes live at one step.
#include <algorithm>
#include <numeric>

#include "loaders/network_desc.h"
#include "runtime/arena_placement.h"
#include "runtime/plan.h"

namespace dlr {
namespace {

struct Proto {
  Shape3 shape;
  DType dtype = DType::kF32;
  Layout layout = Layout::kNCHW;
  int owner = -1;        // layer, -1 for the network input
  int parent = -1;       // proto this one was placed into
  int parent_c_off = 0;  // channel offset inside the parent
  bool conv_io = false;  // a conv writes it or reads it (directly or through an alias), or a child's
};

struct Loc {
  int proto = -1;
  int c_off = 0;
  int c = 0;
};

class Planner {
 public:
  Planner(const NetworkDesc& net, const PlannerOptions& opt) : m_net(net), m_opt(opt) {}

  Expected<ExecutionPlan> run() {
    const int n_layers = int(m_net.layers.size());
    m_loc.resize(size_t(n_layers));
    mark_conv_readers();
    m_input = new_proto(m_net.input_shape(), m_opt.activation_dtype, -1);
    // Per step: the locations it reads, writes, and copies (resolved after step 1).
    std::vector<std::vector<Loc>> reads{size_t(n_layers)};
    std::vector<std::vector<std::pair<Loc, Loc>>> copies{size_t(n_layers)};
    std::vector<char> no_op(size_t(n_layers), 0);  // vector<bool> has no addressable elements

    for (const LayerDesc& l : m_net.layers) {
      const size_t i = size_t(l.index);
      for (int in : l.inputs) reads[i].push_back(loc_of(in));
      switch (op_role(l.kind)) {  // DLR_OPS (kernels/op_params.h)
        case OpRole::kAlias:
          m_loc[i] = loc_of(l.inputs[0]);
          no_op[i] = 1;
          break;
        case OpRole::kRoute:
          plan_route(l, &copies[i], &no_op[i]);
          break;
        case OpRole::kOutput:  // network outputs: f32
          m_loc[i] = Loc{new_proto(l.out, DType::kF32, l.index), 0, l.out.c};
          break;
        case OpRole::kCompute:
          m_loc[i] = Loc{new_proto(l.out, m_opt.activation_dtype, l.index), 0, l.out.c};
          break;
      }
      // A route's reads are its copy sources only (in-place inputs are not read by it).
      if (op_role(l.kind) == OpRole::kRoute) {
        reads[i].clear();
        for (const auto& cp : copies[i]) reads[i].push_back(cp.first);
      }
      if (op_role(l.kind) == OpRole::kAlias) reads[i].clear();
    }

    ExecutionPlan plan;
    plan.options = m_opt;
    plan.input_shape = m_net.input_shape();
    make_buffers(&plan);
    plan.steps.resize(size_t(n_layers));
    plan.layer_out.resize(size_t(n_layers));
    for (const LayerDesc& l : m_net.layers) {
      const size_t i = size_t(l.index);
      Step& s = plan.steps[i];
      s.layer = l.index;
      s.kind = l.kind;
      s.cfg_line = l.cfg_line;
      s.in = l.in;
      s.out = l.out;
      s.params = l.params;
      s.no_op = no_op[i] != 0;
      s.output = resolve(m_loc[i]);
      plan.layer_out[i] = s.output;
      if (op_role(l.kind) != OpRole::kRoute && op_role(l.kind) != OpRole::kAlias)
        for (int in : l.inputs) s.inputs.push_back(resolve(loc_of(in)));
      for (const auto& cp : copies[i]) s.copies.emplace_back(resolve(cp.first), resolve(cp.second));
    }
    plan.input_buffer = resolve(Loc{m_input, 0, m_net.net.channels}).buffer;
    plan.output_layers = m_net.output_layers();
    compute_liveness(&plan, reads);
    assign_offsets(&plan);
    plan_weights(&plan);
    plan.naive_bytes = int64_t(m_opt.batch) * m_net.input_shape().count() * int64_t(dtype_size(m_opt.activation_dtype));
    for (const LayerDesc& l : m_net.layers) {
      const DType t = is_output_kind(l.kind) ? DType::kF32 : m_opt.activation_dtype;
      plan.naive_bytes += int64_t(m_opt.batch) * l.out.count() * int64_t(dtype_size(t));
    }
    return plan;
  }

 private:
  int new_proto(Shape3 shape, DType dtype, int owner) {
    Proto p;
    p.shape = shape;
    p.dtype = dtype;
    p.owner = owner;
    // Network outputs are read by the host post-processing: always packed f32 NCHW.
    p.layout = owner >= 0 && is_output_kind(m_net.layers[size_t(owner)].kind) ? Layout::kNCHW : m_opt.layout;
    p.conv_io = owner >= 0 && (m_net.layers[size_t(owner)].kind == LayerKind::kConv || m_read_by_conv[size_t(owner)]);
    m_protos.push_back(p);
    return int(m_protos.size()) - 1;
  }

  Loc loc_of(int layer) const {
    if (layer < 0) return Loc{m_input, 0, m_net.net.channels};
    return m_loc[size_t(layer)];
  }

  // A channel slice of a buffer is a packed tensor only for NCHW with batch 1.
  bool slices_packed() const { return m_opt.layout == Layout::kNCHW && m_opt.batch == 1; }

  bool read_by_conv(int index) const { return !m_opt.conv_strided_io && m_read_by_conv[size_t(index)]; }

  // m_read_by_conv[l]: a conv reads layer l's output directly or through aliases: a
  // dropout, or a single-input route that takes all channels (groups == 1), which is a view
  // of the whole input. (A partial view is the route's own concern: plan_route copies it.)
  void mark_conv_readers() {
    m_read_by_conv.assign(m_net.layers.size(), 0);
    for (const LayerDesc& c : m_net.layers) {
      if (c.kind != LayerKind::kConv) continue;
      for (int src = c.inputs[0]; src >= 0;) {
        m_read_by_conv[size_t(src)] = 1;
        const LayerDesc& l = m_net.layers[size_t(src)];
        const bool whole_view = op_role(l.kind) == OpRole::kRoute && l.route().layers.size() == 1 && l.route().groups == 1;
        src = op_role(l.kind) == OpRole::kAlias || whole_view ? l.inputs[0] : -1;
      }
    }
  }

  // True when `loc` is the whole of a root proto produced by a layer, so it can be moved
  // into a slice of a route's buffer (which a conv may not read or write when slices are strided).
  bool movable(const Loc& loc) const {
    const Proto& p = m_protos[size_t(loc.proto)];
    if (p.parent >= 0 || p.owner < 0 || loc.c_off != 0 || loc.c != p.shape.c || p.dtype != m_opt.activation_dtype)
      return false;
    if (is_output_kind(m_net.layers[size_t(p.owner)].kind)) return false;  // outputs stay whole buffers
    return slices_packed() || m_opt.conv_strided_io || !p.conv_io;
  }

  void plan_route(const LayerDesc& l, std::vector<std::pair<Loc, Loc>>* copies, char* no_op) {
    const RouteParams& r = l.route();
    const size_t i = size_t(l.index);
    if (r.layers.size() == 1) {  // a view: channels [group_id*C/groups, (group_id+1)*C/groups)
      const Loc in = loc_of(r.layers[0]);
      const int part = in.c / r.groups;
      const Loc view{in.proto, in.c_off + r.group_id * part, part};
      const bool whole = view.c_off == 0 && view.c == m_protos[size_t(in.proto)].shape.c;
      if (whole || slices_packed() || !read_by_conv(l.index)) {
        m_loc[i] = view;
        *no_op = 1;
        return;
      }
      const int out = new_proto(l.out, m_protos[size_t(in.proto)].dtype, l.index);  // conv cannot read a strided slice
      m_loc[i] = Loc{out, 0, l.out.c};
      copies->emplace_back(view, m_loc[i]);
      return;
    }
    const int out = new_proto(l.out, m_opt.activation_dtype, l.index);
    m_loc[i] = Loc{out, 0, l.out.c};
    int c_off = 0;
    bool all_in_place = true;
    for (int src_layer : r.layers) {
      const Loc in = loc_of(src_layer);
      const int part = in.c / r.groups;
      const Loc src{in.proto, in.c_off + r.group_id * part, part};
      const Loc dst{out, c_off, part};
      if (m_opt.concat_in_place && r.groups == 1 && movable(in)) {
        Proto& p = m_protos[size_t(in.proto)];
        p.parent = out;
        p.parent_c_off = c_off;
        m_protos[size_t(out)].conv_io = m_protos[size_t(out)].conv_io || p.conv_io;
      } else {
        copies->emplace_back(src, dst);
        all_in_place = false;
      }
      c_off += part;
    }
    *no_op = all_in_place ? 1 : 0;
  }

  // Root proto and absolute channel offset of a proto-relative location.
  std::pair<int, int> root_of(int proto, int c_off) const {
    while (m_protos[size_t(proto)].parent >= 0) {
      c_off += m_protos[size_t(proto)].parent_c_off;
      proto = m_protos[size_t(proto)].parent;
    }
    return {proto, c_off};
  }

  ViewRef resolve(const Loc& loc) const {
    auto [root, c_off] = root_of(loc.proto, loc.c_off);
    return ViewRef{m_buffer_of_root[size_t(root)], c_off, loc.c};
  }

  void make_buffers(ExecutionPlan* plan) {
    m_buffer_of_root.assign(m_protos.size(), -1);
    for (size_t p = 0; p < m_protos.size(); ++p) {
      const Proto& pr = m_protos[p];
      if (pr.parent >= 0) continue;
      Buffer b;
      b.id = int(plan->buffers.size());
      b.dtype = pr.dtype;
      b.layout = pr.layout;
      b.c = pr.shape.c;
      b.h = pr.shape.h;
      b.w = pr.shape.w;
      b.owner_layer = pr.owner;
      b.bytes = int64_t(m_opt.batch) * pr.shape.count() * int64_t(dtype_size(pr.dtype));
      m_buffer_of_root[p] = b.id;
      plan->buffers.push_back(b);
    }
  }

  void compute_liveness(ExecutionPlan* plan, const std::vector<std::vector<Loc>>& reads) const {
    const int n_steps = int(plan->steps.size());
    for (Buffer& b : plan->buffers) {
      b.first_step = b.owner_layer;  // overwritten below by the earliest writer
      b.last_step = b.owner_layer;
    }
    auto touch = [&](const ViewRef& v, int step, bool write) {
      Buffer& b = plan->buffers[size_t(v.buffer)];
      if (write) b.first_step = std::min(b.first_step, step);
      b.last_step = std::max(b.last_step, step);
    };
    plan->buffers[size_t(plan->input_buffer)].first_step = -1;
    for (const Step& s : plan->steps) {
      if (!s.no_op || !s.copies.empty()) touch(s.output, s.layer, true);
      for (const auto& cp : s.copies) touch(cp.second, s.layer, true);
      for (const Loc& r : reads[size_t(s.layer)]) touch(resolve(r), s.layer, false);
    }
    for (int y : plan->output_layers) plan->buffers[size_t(plan->layer_out[size_t(y)].buffer)].last_step = n_steps;
    if (m_opt.keep_all_outputs)
      for (Buffer& b : plan->buffers) b.last_step = n_steps;
  }

  void assign_offsets(ExecutionPlan* plan) const {
    plan->arena_bytes = place_buffers(&plan->buffers, m_opt.alignment);
  }

  void plan_weights(ExecutionPlan* plan) const {
    for (const LayerDesc& l : m_net.layers) {
      if (l.kind != LayerKind::kConv) continue;
      WeightBlob w;
      w.layer = l.index;
      w.weight_elems = l.weight_count();
      w.bias_elems = l.bias_count();
      w.dtype = m_opt.weight_dtype;
      w.bias_offset = align_up(w.weight_elems * int64_t(dtype_size(w.dtype)), 256);
      w.bytes = align_up(w.bias_offset + w.bias_elems * 4, std::max<int64_t>(256, m_opt.weight_align));
      plan->steps[size_t(l.index)].weight = int(plan->weights.size());
      plan->weights.push_back(w);
    }
  }

  const NetworkDesc& m_net;
  const PlannerOptions& m_opt;
  std::vector<Proto> m_protos;
  std::vector<Loc> m_loc;
  std::vector<int> m_buffer_of_root;
  std::vector<char> m_read_by_conv;
  int m_input = -1;
};

}  // namespace

int64_t ExecutionPlan::weight_bytes() const {
  int64_t total = 0;
  for (const WeightBlob& w : weights) total += w.bytes;
  return total;
}

Expected<ExecutionPlan> build_plan(const NetworkDesc& net, const PlannerOptions& options) {
  if (options.batch < 1 || options.batch > 1024)
    return invalid_argument("batch " + std::to_string(options.batch) + " is out of range (1..1024)");
  if (options.alignment < 16 || (options.alignment & (options.alignment - 1)) != 0)
    return invalid_argument("plan alignment must be a power of two >= 16");
  if (options.weight_align < 256 || (options.weight_align & (options.weight_align - 1)) != 0)
    return invalid_argument("weight blob alignment must be a power of two >= 256");
  if (net.layers.empty()) return invalid_argument(net.cfg_path + ": network has no layers");
  return Planner(net, options).run();
}

}  // namespace dlr
