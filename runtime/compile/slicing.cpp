#include "runtime/compile/slicing.h"

#include <algorithm>
#include <string>

#include "runtime/compile/arena_placement.h"

namespace dlr {

int64_t conv_blob_bytes(int filters, int64_t filter_elems, DType dtype, int64_t weight_align, WeightFormat format) {
  return blob_bytes(int64_t(filters) * filter_elems, filters, dtype, weight_align, format, filters);
}

namespace {

// Sizes of the fewest slices of `units` units whose blob (`bytes(n)` for n units, growing
// with n) fits max_blob_bytes, then as even as multiples of `multiple` allow.
template <class Bytes>
std::vector<int> even_slices(int units, Bytes bytes, int64_t max_blob_bytes, int multiple, int fallback = 1) {
  auto fits = [&](int n) { return bytes(n) <= max_blob_bytes; };
  if (max_blob_bytes <= 0 || fits(units)) return {units};
  if (!fits(1)) return {};
  int largest = 1;  // the most units a slice can hold
  for (int lo = 1, hi = units; lo <= hi;) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(mid)) largest = mid, lo = mid + 1;
    else hi = mid - 1;
  }
  const int m = std::max(1, largest >= multiple ? multiple : fallback);
  if (largest >= m) largest -= largest % m;
  const int slices = (units + largest - 1) / largest;
  int n = (units + slices - 1) / slices;
  if (largest >= m) n = std::min(largest, (n + m - 1) / m * m);
  std::vector<int> sizes;
  for (int begin = 0; begin < units; begin += n) sizes.push_back(std::min(n, units - begin));
  return sizes;
}

}  // namespace

std::vector<int> slice_sizes(int filters, int64_t filter_elems, DType dtype, int64_t weight_align,
                             int64_t max_blob_bytes, int filter_multiple, WeightFormat format,
                             int fallback_multiple) {
  auto bytes = [&](int n) { return conv_blob_bytes(n, filter_elems, dtype, weight_align, format); };
  return even_slices(filters, bytes, max_blob_bytes, filter_multiple, fallback_multiple);
}

std::vector<int> channel_slice_sizes(int channels, int filters, int64_t kernel_elems, DType dtype,
                                     int64_t weight_align, int64_t max_blob_bytes, int channel_multiple,
                                     WeightFormat format) {
  // Every slice is sized as if it held the bias (the last one does); int8: each holds every filter's scale.
  auto bytes = [&](int n) {
    return blob_bytes(int64_t(n) * filters * kernel_elems, filters, dtype, weight_align, format, filters);
  };
  return even_slices(channels, bytes, max_blob_bytes, channel_multiple);
}

namespace {

// Whether the plan's convs take channel-slice views of their buffers (else a slice
// writes, or reads, a packed scratch buffer).
bool views_in_place(const ExecutionPlan& plan) {
  return plan.options.conv_strided_io || (plan.options.layout == Layout::kNCHW && plan.options.batch == 1);
}

struct Expansion {
  std::vector<Step> steps;
  std::vector<WeightBlob> weights;
  std::vector<int> first, last;  // per old step: its first and last new step
};

// A packed scratch buffer of `like`'s dtype, layout and plane, `c` channels, live for
// step `step` only; appended to *scratch (ids after the plan's buffers). Returns its view.
ViewRef add_scratch(const ExecutionPlan& plan, const Buffer& like, int c, int step, int layer,
                    std::vector<Buffer>* scratch) {
  Buffer b;
  b.id = int(plan.buffers.size() + scratch->size());
  b.dtype = like.dtype;
  b.layout = like.layout;
  b.c = c;
  b.h = like.h;
  b.w = like.w;
  b.bytes = int64_t(plan.options.batch) * c * like.h * like.w * int64_t(dtype_size(like.dtype));
  b.first_step = b.last_step = step;
  b.owner_layer = layer;
  scratch->push_back(b);
  return ViewRef{b.id, 0, c};
}

Step slice_step(const Step& st, SliceAxis axis, size_t k, size_t count, int index) {
  Step s = st;
  s.index = index;
  s.slice = int(k);
  s.slices = int(count);
  s.axis = axis;
  return s;
}

void add_slice_blob(const ExecutionPlan& plan, WeightBlob sw, Step* s, Expansion* x) {
  sw.step = s->index;
  lay_out_blob(&sw, plan.options.weight_align);
  s->weight = int(x->weights.size());
  x->weights.push_back(sw);
}

// The steps of conv `st` (blob `w`) cut into slices of its filters, appended to *x.
void expand_filters(const ExecutionPlan& plan, const Step& st, const WeightBlob& w, const std::vector<int>& sizes,
                    std::vector<Buffer>* scratch, Expansion* x) {
  const ConvParams& p = std::get<ConvParams>(st.params);
  const int64_t per_filter = w.weight_elems / p.filters;
  int begin = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int n = sizes[k];
    Step s = slice_step(st, SliceAxis::kFilters, k, sizes.size(), int(x->steps.size()));
    s.filter_begin = begin;
    std::get<ConvParams>(s.params).filters = n;
    s.out.c = n;
    const ViewRef dst{st.output.buffer, st.output.c_offset + begin, n};
    if (views_in_place(plan)) {
      s.output = dst;
    } else {
      s.output = add_scratch(plan, plan.buffer(st.output), n, s.index, st.layer, scratch);
      s.copies = {{s.output, dst}};
    }
    WeightBlob sw = w;
    sw.filter_begin = begin;
    sw.filters = n;
    sw.weight_elems = int64_t(n) * per_filter;
    sw.bias_elems = n;
    sw.scale_elems = n;  // int8: the slice's filters' scales (lay_out_blob drops them for fp)
    add_slice_blob(plan, sw, &s, x);
    x->steps.push_back(std::move(s));
    begin += n;
  }
}

// The steps of conv `st` (blob `w`) cut into slices of its input channels, appended to *x.
void expand_channels(const ExecutionPlan& plan, const Step& st, const WeightBlob& w, const std::vector<int>& sizes,
                     std::vector<Buffer>* scratch, Expansion* x) {
  const ConvParams& p = std::get<ConvParams>(st.params);
  const int64_t per_channel = w.weight_elems / st.in.c;  // filters x k x k
  int begin = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int n = sizes[k];
    const bool last = k + 1 == sizes.size();
    Step s = slice_step(st, SliceAxis::kChannels, k, sizes.size(), int(x->steps.size()));
    s.channel_begin = begin;
    s.in.c = n;
    s.accumulate = k > 0;
    if (!last) std::get<ConvParams>(s.params).activation = Activation::kLinear;
    const ViewRef src{st.inputs[0].buffer, st.inputs[0].c_offset + begin, n};
    if (views_in_place(plan)) {
      s.inputs = {src};
    } else {
      s.inputs = {add_scratch(plan, plan.buffer(st.inputs[0]), n, s.index, st.layer, scratch)};
      s.packs = {{src, s.inputs[0]}};
    }
    WeightBlob sw = w;
    sw.channel_begin = begin;
    sw.channels = n;
    sw.weight_elems = int64_t(n) * per_channel;
    sw.bias_elems = last ? p.filters : 0;
    add_slice_blob(plan, sw, &s, x);
    x->steps.push_back(std::move(s));
    begin += n;
  }
}

// The axis conv `st` is cut along: the options' choice for its layer, except that a
// conv reading several buffers (a concatenation's parts) is cut by filters.
SliceAxis axis_for(const Step& st, const SliceOptions& options) {
  if (st.inputs.size() != 1 || st.inputs[0].buffer < 0) return SliceAxis::kFilters;
  const auto it = options.layer_axis.find(st.layer);
  return it != options.layer_axis.end() ? it->second : options.axis;
}

// The slice sizes of conv `st` (blob `w`) along `axis`, or an error naming the layer.
Expected<std::vector<int>> sizes_for(const ExecutionPlan& plan, const Step& st, const WeightBlob& w, SliceAxis axis,
                                     const SliceOptions& options, const std::string& cfg_path) {
  const ConvParams& p = std::get<ConvParams>(st.params);
  const std::string where =
      cfg_path + ": layer " + std::to_string(st.layer) + " (cfg line " + std::to_string(st.cfg_line) + ")";
  if (p.groups != 1)
    return invalid_argument(where + ": a grouped convolution (groups=" + std::to_string(p.groups) + ") of " +
                            std::to_string(w.bytes) + " weight bytes cannot be sliced to the slot of " +
                            std::to_string(options.max_blob_bytes) + " bytes; expected a larger slot_bytes");
  const int64_t kk = int64_t(p.size) * p.size;
  std::vector<int> sizes =
      axis == SliceAxis::kChannels
          ? channel_slice_sizes(st.in.c, p.filters, kk, w.dtype, plan.options.weight_align, options.max_blob_bytes,
                                options.unit_multiple, w.format)
          : slice_sizes(p.filters, w.weight_elems / p.filters, w.dtype, plan.options.weight_align,
                        options.max_blob_bytes, options.unit_multiple, w.format, options.unit_fallback);
  if (sizes.empty())
    return invalid_argument(where + ": one " + (axis == SliceAxis::kChannels ? "input channel" : "filter") +
                            "'s weights do not fit the slot of " + std::to_string(options.max_blob_bytes) +
                            " bytes; expected a larger slot_bytes");
  return sizes;
}

// Step `st` unchanged but for its index (and its blob's), appended to *x.
void keep_step(const ExecutionPlan& plan, const Step& st, Expansion* x) {
  Step s = st;
  s.index = int(x->steps.size());
  if (s.weight >= 0) {
    WeightBlob w = plan.weights[size_t(st.weight)];
    w.step = s.index;
    s.weight = int(x->weights.size());
    x->weights.push_back(w);
  }
  x->steps.push_back(std::move(s));
}

}  // namespace

Status slice_plan(ExecutionPlan* plan, const SliceOptions& options, const std::string& cfg_path) {
  if (options.max_blob_bytes <= 0) return Status();
  Expansion x;
  std::vector<Buffer> scratch;  // ids after the plan's buffers
  const int n_old = int(plan->steps.size());
  x.first.resize(size_t(n_old));
  x.last.resize(size_t(n_old));
  bool sliced = false;
  for (const Step& st : plan->steps) {
    x.first[size_t(st.index)] = int(x.steps.size());
    const bool over = st.weight >= 0 && plan->weights[size_t(st.weight)].bytes > options.max_blob_bytes &&
                      options.whole_layers.count(st.layer) == 0;
    std::vector<int> sizes;
    const SliceAxis axis = axis_for(st, options);
    if (over) {
      DLR_ASSIGN_OR_RETURN(sizes, sizes_for(*plan, st, plan->weights[size_t(st.weight)], axis, options, cfg_path));
    }
    if (sizes.size() > 1) {
      const WeightBlob& w = plan->weights[size_t(st.weight)];
      if (axis == SliceAxis::kChannels) expand_channels(*plan, st, w, sizes, &scratch, &x);
      else expand_filters(*plan, st, w, sizes, &scratch, &x);
      sliced = true;
    } else {
      keep_step(*plan, st, &x);
    }
    x.last[size_t(st.index)] = int(x.steps.size()) - 1;
  }
  if (!sliced) return Status();
  const int n_new = int(x.steps.size());
  auto remap_first = [&](int s) { return s < 0 ? s : s >= n_old ? n_new : x.first[size_t(s)]; };
  auto remap_last = [&](int s) { return s < 0 ? s : s >= n_old ? n_new : x.last[size_t(s)]; };
  for (Buffer& b : plan->buffers) {
    b.first_step = remap_first(b.first_step);
    b.last_step = remap_last(b.last_step);
  }
  for (Buffer& b : scratch) plan->buffers.push_back(b);
  plan->steps = std::move(x.steps);
  plan->weights = std::move(x.weights);
  for (size_t l = 0; l < plan->layer_step.size(); ++l) plan->layer_step[l] = x.first[size_t(plan->layer_step[l])];
  plan->arena_bytes = place_buffers(&plan->buffers, plan->options.alignment);
  return Status();
}

}  // namespace dlr
