// build_plan: execution order, activation placement and weight blobs.
//
// Algorithm (design notes: docs/architecture.md, "Activation planning"):
//  1. Walk layers in order and give every output a location {proto buffer, channel offset}:
//     - dropout aliases its input; a single-input route is a channel-slice view of its input;
//     - a multi-input route (groups == 1) read only by a 1x1 conv is no buffer at all with
//       conv_over_concat: the conv reads its inputs (pinned: never moved into another route);
//     - any other multi-input route (groups == 1) gets a proto buffer; with concat_in_place each
//       input that owns a whole root proto buffer is re-parented into its slice of the
//       route's buffer (the producer then writes there directly); other inputs are copied;
//     - every other layer gets a fresh proto buffer.
//  2. Resolve proto buffers to roots (following re-parenting, summing channel offsets).
//  3. Liveness per root: first writing step .. last reading step (network outputs live
//     to the end, the input from step -1).
//  4. In place (PlannerOptions::in_place): a shortcut's output buffer is merged into its
//     first input's when the shortcut is that buffer's last reader.
//  5. Offsets (runtime/compile/arena_placement.h): no two buffers whose lifetimes intersect
//     share bytes (inclusive intervals: apart from step 4, a step's inputs and output never share memory);
//     several greedy placements are tried, down to the most bytes live at one step.
#include <algorithm>
#include <numeric>

#include "loaders/network_desc.h"
#include "runtime/compile/arena_placement.h"
#include "runtime/compile/blob_layout.h"
#include "runtime/compile/plan.h"

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
  bool pinned = false;   // a part of a conv_over_concat route: stays a whole root buffer
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
    m_parts.resize(size_t(n_layers));
    m_readers.assign(size_t(n_layers), {});
    for (const LayerDesc& l : m_net.layers)
      for (int in : l.inputs)
        if (in >= 0) m_readers[size_t(in)].push_back(l.index);
    mark_conv_readers();
    m_input = new_proto(m_net.input_shape(), m_opt.activation_dtype, -1);
    // Per step: the locations it reads, writes, and copies (resolved after step 1).
    std::vector<std::vector<Loc>> reads{size_t(n_layers)};
    std::vector<std::vector<std::pair<Loc, Loc>>> copies{size_t(n_layers)};
    std::vector<char> no_op(size_t(n_layers), 0);  // vector<bool> has no addressable elements

    for (const LayerDesc& l : m_net.layers) {
      const size_t i = size_t(l.index);
      for (int in : l.inputs) append_locs(in, &reads[i]);
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
    plan.layer_step.resize(size_t(n_layers));
    for (const LayerDesc& l : m_net.layers) {
      const size_t i = size_t(l.index);
      Step& s = plan.steps[i];
      s.index = l.index;
      s.layer = l.index;
      plan.layer_step[i] = l.index;
      s.kind = l.kind;
      s.cfg_line = l.cfg_line;
      s.in = l.in;
      s.out = l.out;
      s.params = l.params;
      s.no_op = no_op[i] != 0;
      s.output = m_loc[i].proto < 0 ? ViewRef{-1, 0, l.out.c} : resolve(m_loc[i]);
      plan.layer_out[i] = s.output;
      if (op_role(l.kind) != OpRole::kRoute && op_role(l.kind) != OpRole::kAlias) {
        std::vector<Loc> ins;
        for (int in : l.inputs) append_locs(in, &ins);
        for (const Loc& in : ins) s.inputs.push_back(resolve(in));
      }
      for (const auto& cp : copies[i]) s.copies.emplace_back(resolve(cp.first), resolve(cp.second));
    }
    plan.input_buffer = resolve(Loc{m_input, 0, m_net.net.channels}).buffer;
    plan.output_layers = m_net.output_layers();
    plan.selects = plan_output_selects(m_net, m_opt);
    compute_liveness(&plan, reads);
    if (m_opt.in_place && !m_opt.keep_all_outputs) merge_in_place(&plan);
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

  // What reading `layer` reads: its location, or the parts of a conv_over_concat route.
  void append_locs(int layer, std::vector<Loc>* out) const {
    if (layer >= 0 && !m_parts[size_t(layer)].empty()) {
      out->insert(out->end(), m_parts[size_t(layer)].begin(), m_parts[size_t(layer)].end());
      return;
    }
    out->push_back(loc_of(layer));
  }

  // True when the multi-input route `l` may be read by its only reader, a 1x1 conv,
  // part by part (PlannerOptions::conv_over_concat): every part a whole root buffer in
  // the activation dtype and layout.
  bool concat_into_conv(const LayerDesc& l) const {
    const RouteParams& r = l.route();
    if (!m_opt.conv_over_concat || m_opt.keep_all_outputs || r.groups != 1 || r.layers.size() < 2) return false;
    const std::vector<int>& readers = m_readers[size_t(l.index)];
    if (readers.size() != 1) return false;
    const LayerDesc& c = m_net.layers[size_t(readers[0])];
    if (c.kind != LayerKind::kConv || c.inputs.size() != 1) return false;
    const ConvParams& p = c.conv();
    if (p.size != 1 || p.stride_x != 1 || p.stride_y != 1 || p.padding != 0 || p.groups != 1) return false;
    for (int src : r.layers) {
      if (src < 0) return false;  // the network input stays a buffer of its own
      const Loc in = loc_of(src);
      if (in.proto < 0) return false;
      const Proto& pr = m_protos[size_t(in.proto)];
      if (pr.parent >= 0 || in.c_off != 0 || in.c != pr.shape.c || pr.dtype != m_opt.activation_dtype ||
          pr.layout != m_opt.layout)
        return false;
    }
    return true;
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
    if (p.pinned || p.parent >= 0 || p.owner < 0 || loc.c_off != 0 || loc.c != p.shape.c || p.dtype != m_opt.activation_dtype)
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
    if (concat_into_conv(l)) {
      for (int src : r.layers) {
        const Loc in = loc_of(src);
        m_protos[size_t(in.proto)].pinned = true;
        m_parts[i].push_back(in);
      }
      m_loc[i] = Loc{-1, 0, l.out.c};
      *no_op = 1;
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

  // A shortcut whose first input is a whole buffer read last by it, of the output's
  // shape, dtype and layout, writes into that buffer (both kernels allow out == prev):
  // the output's buffer is dropped and every view of it moved to the input's.
  void merge_in_place(ExecutionPlan* plan) const {
    std::vector<int> into(plan->buffers.size());
    std::iota(into.begin(), into.end(), 0);
    auto root = [&](int k) {
      while (into[size_t(k)] != k) k = into[size_t(k)];
      return k;
    };
    for (const Step& s : plan->steps) {
      if (s.kind != LayerKind::kShortcut || s.no_op || s.inputs.empty()) continue;
      const ViewRef& in = s.inputs[0];
      const ViewRef& out = s.output;
      if (out.buffer < 0 || in.buffer < 0) continue;
      const int target = root(in.buffer);  // an earlier merge may have moved the input
      Buffer& a = plan->buffers[size_t(target)];
      const Buffer& b = plan->buffers[size_t(out.buffer)];
      const bool whole = in.c_offset == 0 && in.c == a.c && out.c_offset == 0 && out.c == b.c;
      const bool same = a.bytes == b.bytes && a.dtype == b.dtype && a.layout == b.layout && a.c == b.c &&
                        a.h == b.h && a.w == b.w;
      const bool fresh = b.owner_layer == s.layer && b.first_step == s.layer;
      bool read_by_from = false;  // the kernels' contract: a `from` view never overlaps out
      for (size_t k = 1; k < s.inputs.size(); ++k)
        read_by_from = read_by_from || (s.inputs[k].buffer >= 0 && root(s.inputs[k].buffer) == target);
      if (!whole || !same || !fresh || read_by_from || a.last_step != s.layer || a.first_step < 0 ||
          target == plan->input_buffer)
        continue;
      a.last_step = b.last_step;
      into[size_t(out.buffer)] = target;
    }
    for (size_t k = 0; k < into.size(); ++k)  // flatten chains
      while (into[k] != into[size_t(into[k])]) into[k] = into[size_t(into[k])];
    // Drop the merged buffers, renumber the others, and move every view.
    std::vector<int> id(plan->buffers.size(), -1);
    std::vector<Buffer> kept;
    for (size_t k = 0; k < plan->buffers.size(); ++k) {
      if (into[k] != int(k)) continue;
      id[k] = int(kept.size());
      kept.push_back(plan->buffers[k]);
      kept.back().id = id[k];
    }
    if (kept.size() == plan->buffers.size()) return;
    auto move = [&](ViewRef& v) {
      if (v.buffer >= 0) v.buffer = id[size_t(into[size_t(v.buffer)])];
    };
    for (Step& s : plan->steps) {
      for (ViewRef& v : s.inputs) move(v);
      move(s.output);
      for (auto& cp : s.copies) {
        move(cp.first);
        move(cp.second);
      }
    }
    for (ViewRef& v : plan->layer_out) move(v);
    plan->input_buffer = id[size_t(plan->input_buffer)];
    plan->buffers = std::move(kept);
  }

  void assign_offsets(ExecutionPlan* plan) const {
    plan->arena_bytes = place_buffers(&plan->buffers, m_opt.alignment);
  }

  void plan_weights(ExecutionPlan* plan) const {
    for (const LayerDesc& l : m_net.layers) {
      if (l.kind != LayerKind::kConv) continue;
      WeightBlob w;
      w.layer = l.index;
      w.step = l.index;
      w.weight_elems = l.weight_count();
      w.bias_elems = l.bias_count();
      w.dtype = m_opt.weight_dtype;
      w.format = conv_weight_format(m_opt.weight_format, l.weight_count() / l.conv().filters);
      w.scale_elems = l.conv().filters;  // int8 only (lay_out_blob drops it for fp)
      lay_out_blob(&w, m_opt.weight_align);
      plan->steps[size_t(l.index)].weight = int(plan->weights.size());
      plan->weights.push_back(w);
    }
  }

  const NetworkDesc& m_net;
  const PlannerOptions& m_opt;
  std::vector<Proto> m_protos;
  std::vector<Loc> m_loc;
  std::vector<std::vector<Loc>> m_parts;    // per layer: a conv_over_concat route's inputs (else empty)
  std::vector<std::vector<int>> m_readers;  // per layer: the layers that list it as an input
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

int ExecutionPlan::expanded_steps() const {
  int n = 0;
  for (const Step& st : steps) n += st.dequant >= 0;
  return n;
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
