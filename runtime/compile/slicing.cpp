#include "runtime/compile/slicing.h"

#include <algorithm>
#include <string>

#include "runtime/compile/arena_placement.h"

namespace dlr {

int64_t conv_blob_bytes(int filters, int64_t filter_elems, DType dtype, int64_t weight_align) {
  const int64_t bias_offset = align_up(int64_t(filters) * filter_elems * int64_t(dtype_size(dtype)), 256);
  return align_up(bias_offset + int64_t(filters) * 4, std::max<int64_t>(256, weight_align));
}

std::vector<int> slice_sizes(int filters, int64_t filter_elems, DType dtype, int64_t weight_align,
                             int64_t max_blob_bytes, int filter_multiple) {
  auto fits = [&](int n) { return conv_blob_bytes(n, filter_elems, dtype, weight_align) <= max_blob_bytes; };
  if (max_blob_bytes <= 0 || fits(filters)) return {filters};
  if (!fits(1)) return {};
  int largest = 1;  // the most filters a slice can hold (blob bytes grow with n)
  for (int lo = 1, hi = filters; lo <= hi;) {
    const int mid = lo + (hi - lo) / 2;
    if (fits(mid)) largest = mid, lo = mid + 1;
    else hi = mid - 1;
  }
  const int m = std::max(1, filter_multiple);
  if (largest >= m) largest -= largest % m;
  const int slices = (filters + largest - 1) / largest;
  int n = (filters + slices - 1) / slices;
  if (largest >= m) n = std::min(largest, (n + m - 1) / m * m);
  std::vector<int> sizes;
  for (int begin = 0; begin < filters; begin += n) sizes.push_back(std::min(n, filters - begin));
  return sizes;
}

namespace {

// Where the slices of one layer write: straight into the output's channels when the
// plan's convs take channel-slice views, else a packed scratch buffer per slice.
bool writes_in_place(const ExecutionPlan& plan) {
  return plan.options.conv_strided_io || (plan.options.layout == Layout::kNCHW && plan.options.batch == 1);
}

struct Expansion {
  std::vector<Step> steps;
  std::vector<WeightBlob> weights;
  std::vector<int> first, last;  // per old step: its first and last new step
};

// The steps of one sliced conv `st` (blob `w`), appended to *x; scratch buffers appended
// to *scratch, numbered after the plan's buffers.
void expand_conv(const ExecutionPlan& plan, const Step& st, const WeightBlob& w, const std::vector<int>& sizes,
                 std::vector<Buffer>* scratch, Expansion* x) {
  const ConvParams& p = std::get<ConvParams>(st.params);
  const int64_t per_filter = w.weight_elems / p.filters;
  const Buffer& ob = plan.buffer(st.output);
  int begin = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int n = sizes[k];
    Step s = st;
    s.index = int(x->steps.size());
    s.slice = int(k);
    s.slices = int(sizes.size());
    s.filter_begin = begin;
    std::get<ConvParams>(s.params).filters = n;
    s.out.c = n;
    const ViewRef dst{st.output.buffer, st.output.c_offset + begin, n};
    if (writes_in_place(plan)) {
      s.output = dst;
    } else {
      Buffer b;
      b.id = int(plan.buffers.size() + scratch->size());
      b.dtype = ob.dtype;
      b.layout = ob.layout;
      b.c = n;
      b.h = ob.h;
      b.w = ob.w;
      b.bytes = int64_t(plan.options.batch) * n * ob.h * ob.w * int64_t(dtype_size(ob.dtype));
      b.first_step = b.last_step = s.index;
      b.owner_layer = st.layer;
      scratch->push_back(b);
      s.output = ViewRef{b.id, 0, n};
      s.copies = {{s.output, dst}};
    }
    WeightBlob sw = w;
    sw.step = s.index;
    sw.filter_begin = begin;
    sw.filters = n;
    sw.weight_elems = int64_t(n) * per_filter;
    sw.bias_elems = n;
    sw.bias_offset = align_up(sw.weight_elems * int64_t(dtype_size(sw.dtype)), 256);
    sw.bytes = conv_blob_bytes(n, per_filter, sw.dtype, plan.options.weight_align);
    s.weight = int(x->weights.size());
    x->weights.push_back(sw);
    x->steps.push_back(std::move(s));
    begin += n;
  }
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
    std::vector<int> sizes;
    if (st.weight >= 0 && plan->weights[size_t(st.weight)].bytes > options.max_blob_bytes) {
      const WeightBlob& w = plan->weights[size_t(st.weight)];
      const ConvParams& p = std::get<ConvParams>(st.params);
      const std::string where = cfg_path + ": layer " + std::to_string(st.layer) + " (cfg line " +
                                std::to_string(st.cfg_line) + ")";
      if (p.groups != 1)
        return invalid_argument(where + ": a grouped convolution (groups=" + std::to_string(p.groups) + ") of " +
                                std::to_string(w.bytes) + " weight bytes cannot be sliced to the slot of " +
                                std::to_string(options.max_blob_bytes) + " bytes; expected a larger slot_bytes");
      sizes = slice_sizes(p.filters, w.weight_elems / p.filters, w.dtype, plan->options.weight_align,
                          options.max_blob_bytes, options.filter_multiple);
      if (sizes.empty())
        return invalid_argument(where + ": one filter's weights do not fit the slot of " +
                                std::to_string(options.max_blob_bytes) + " bytes; expected a larger slot_bytes");
    }
    if (sizes.size() > 1) {
      expand_conv(*plan, st, plan->weights[size_t(st.weight)], sizes, &scratch, &x);
      sliced = true;
    } else {
      Step s = st;
      s.index = int(x.steps.size());
      if (s.weight >= 0) {
        WeightBlob w = plan->weights[size_t(st.weight)];
        w.step = s.index;
        s.weight = int(x.weights.size());
        x.weights.push_back(w);
      }
      x.steps.push_back(std::move(s));
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
