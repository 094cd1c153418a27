// The cost model of simulator.h's model_layer_ms: layer times when none are measured.
#include <algorithm>

#include "loaders/network_desc.h"
#include "runtime/streaming/simulator.h"

namespace dlr {

std::vector<double> model_layer_ms(const NetworkDesc& net, const ExecutionPlan& plan, double gflops_per_s,
                                   double mem_gbps, double kernel_us) {
  std::vector<double> ms(plan.steps.size(), 0.0);
  const double batch = double(std::max(1, plan.options.batch));
  auto view_bytes = [&](const ViewRef& v) {
    const Buffer& b = plan.buffer(v);
    return double(v.c) * b.h * b.w * double(dtype_size(b.dtype)) * batch;
  };
  for (const Step& st : plan.steps) {
    if (st.no_op && st.copies.empty()) continue;
    double t = kernel_us * 1e-3;
    if (st.kind == LayerKind::kConv) {
      // A slice does its share of the layer's work (its filters', or its input channels').
      const LayerDesc& whole = net.layers[size_t(st.layer)];
      const double share = st.slice < 0 ? 1.0
                           : st.axis == SliceAxis::kChannels ? double(st.in.c) / whole.in.c
                                                             : double(st.out.c) / whole.out.c;
      t += net.layers[size_t(st.layer)].gflops() * share * batch / gflops_per_s * 1e3;
    } else {
      double bytes = 0;
      if (st.kind == LayerKind::kRoute) {
        for (const auto& c : st.copies) bytes += 2 * view_bytes(c.first);
      } else {
        for (const ViewRef& v : st.inputs) bytes += view_bytes(v);
        bytes += view_bytes(st.output);
      }
      t += bytes / (mem_gbps * 1e9) * 1e3;
    }
    ms[size_t(st.index)] = t;
  }
  return ms;
}

}  // namespace dlr
