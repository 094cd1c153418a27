// ExecutionPlan::to_text: one line per step, then the buffers and totals.
#include <cstdio>
#include <string>

#include "runtime/compile/blob_layout.h"
#include "runtime/compile/plan.h"
#include "runtime/core/units.h"

namespace dlr {
namespace {

std::string view_text(const ViewRef& v, const ExecutionPlan& plan) {
  if (v.buffer < 0) return "-";  // a route its conv reads part by part (conv_over_concat)
  const Buffer& b = plan.buffer(v);
  if (v.c_offset == 0 && v.c == b.c) return "b" + std::to_string(v.buffer);
  return "b" + std::to_string(v.buffer) + "[" + std::to_string(v.c_offset) + ":" + std::to_string(v.c_offset + v.c) +
         "]";
}

}  // namespace

std::string ExecutionPlan::to_text() const {
  std::string s;
  char line[256];
  std::snprintf(line, sizeof(line),
                "plan: batch %d, %s activations %s, weights %s, concat in place %s, shortcuts in place %s, convs over "
                "concatenations %s, shortcuts folded into convs %s\n",
                options.batch, layout_name(options.layout), dtype_name(options.activation_dtype),
                dtype_name(options.weight_dtype), options.concat_in_place ? "on" : "off",
                options.in_place ? "on" : "off", options.conv_over_concat ? "on" : "off",
                options.fold_shortcuts ? "on" : "off");
  s += line;
  s += "step kind      output                 shape            reads                       weights\n";
  for (const Step& st : steps) {
    std::string reads;
    for (const ViewRef& v : st.inputs) reads += (reads.empty() ? "" : ",") + view_text(v, *this);
    for (const auto& cp : st.copies) reads += (reads.empty() ? "copy " : ",copy ") + view_text(cp.first, *this);
    for (const auto& cp : st.packs) reads += (reads.empty() ? "pack " : ",pack ") + view_text(cp.first, *this);
    std::string w = "-";
    if (st.weight >= 0) w = "w" + std::to_string(st.weight) + " " + mib_text(weights[size_t(st.weight)].bytes);
    if (st.weight >= 0 && weights[size_t(st.weight)].arena_offset >= 0)
      w += " staged whole @" + std::to_string(weights[size_t(st.weight)].arena_offset) + " after step " +
           std::to_string(weights[size_t(st.weight)].arena_wait);
    if (st.dequant >= 0) w += " int8 -> b" + std::to_string(st.dequant) + " (group " + std::to_string(st.dequant_group) + ")";
    if (st.slice >= 0 && st.axis == SliceAxis::kFilters)
      w += " slice " + std::to_string(st.slice + 1) + "/" + std::to_string(st.slices) + " of filters [" +
           std::to_string(st.filter_begin) + "," + std::to_string(st.filter_begin + st.out.c) + ")";
    if (st.slice >= 0 && st.axis == SliceAxis::kChannels)
      w += " slice " + std::to_string(st.slice + 1) + "/" + std::to_string(st.slices) + " of channels [" +
           std::to_string(st.channel_begin) + "," + std::to_string(st.channel_begin + st.in.c) + ")" +
           (st.accumulate ? " +=" : "");
    if (st.residual.buffer >= 0)
      reads += std::string(",+") + view_text(st.residual, *this) +
               (st.residual_activation != Activation::kLinear ? std::string(" ") + activation_name(st.residual_activation)
                                                               : std::string());
    std::string out = view_text(st.output, *this);
    if (st.folded_into >= 0)
      out += " (in step " + std::to_string(st.folded_into) + ")";
    else if (st.no_op)
      out += " (view)";
    std::snprintf(line, sizeof(line), "%4d %-9s %-22s %-16s %-27s %s\n", st.layer, layer_kind_name(st.kind),
                  out.c_str(), st.out.to_string().c_str(), reads.c_str(), w.c_str());
    s += line;
  }
  s += "buffers (id: offset, bytes, dtype layout, CxHxW, live steps, owner layer)\n";
  for (const Buffer& b : buffers) {
    std::snprintf(line, sizeof(line), "  b%-4d @%-12lld %12lld %s %s %dx%dx%d [%d, %d] owner %d\n", b.id,
                  static_cast<long long>(b.offset), static_cast<long long>(b.bytes), dtype_name(b.dtype),
                  layout_name(b.layout), b.c, b.h, b.w, b.first_step, b.last_step, b.owner_layer);
    s += line;
  }
  std::snprintf(line, sizeof(line), "activations: planned %s in %zu buffers (naive sum of all outputs %s, %.1f%%)\n",
                mib_text(arena_bytes).c_str(), buffers.size(), mib_text(naive_bytes).c_str(),
                naive_bytes > 0 ? 100.0 * double(arena_bytes) / double(naive_bytes) : 0.0);
  s += line;
  size_t int8 = 0;
  for (const WeightBlob& w : weights) int8 += w.format == WeightFormat::kInt8 ? 1 : 0;
  if (options.weight_format == WeightFormat::kInt8) {
    std::snprintf(line, sizeof(line),
                  "weights: %zu blobs, %s (compressed: int8 in %zu blobs, one f32 scale per filter, computed in "
                  "%s; %zu of filters under %lld weights stay %s)\n",
                  weights.size(), mib_text(weight_bytes()).c_str(), int8, dtype_name(options.weight_dtype),
                  weights.size() - int8, static_cast<long long>(kInt8MinFilterWeights),
                  dtype_name(options.weight_dtype));
  } else {
    std::snprintf(line, sizeof(line), "weights: %zu blobs, %s (%s)\n", weights.size(), mib_text(weight_bytes()).c_str(),
                  dtype_name(options.weight_dtype));
  }
  s += line;
  // Not the threshold itself: the text is the compiled model's identity in the kernel
  // caches, which the threshold does not change.
  if (!selects.empty()) {
    std::string caps;
    for (const OutputSelect& o : selects) caps += (caps.empty() ? "" : "/") + std::to_string(o.capacity);
    std::snprintf(line, sizeof(line),
                  "outputs: %zu [yolo] heads' candidates picked on the device, up to %s rows per image downloaded "
                  "(%s); more: that head whole\n",
                  selects.size(), caps.c_str(), mib_text(select_bytes()).c_str());
    s += line;
  }
  return s;
}

}  // namespace dlr
