// NetworkDesc helpers: parameter/FLOP counts and the Darknet-like layer table (per-kind
// parts: loaders/layer_table.cpp).
#include <string>

#include "loaders/checked_math.h"
#include "loaders/layer_table.h"
#include "loaders/network_desc.h"

namespace dlr {

int64_t LayerDesc::weight_count() const {
  if (kind != LayerKind::kConv) return 0;
  const ConvParams& p = conv();
  if (p.filters < 0 || in.c < 0 || p.groups < 1 || p.size < 0) return INT64_MAX;  // not from the parser
  return mul_sat(mul_sat(mul_sat(p.filters, in.c / p.groups), p.size), p.size);
}

int64_t LayerDesc::bias_count() const { return kind == LayerKind::kConv ? conv().filters : 0; }

int64_t LayerDesc::file_floats() const {
  if (kind != LayerKind::kConv) return 0;
  const int64_t bn = conv().batch_normalize ? 3 * int64_t(conv().filters) : 0;  // scale, mean, variance
  return add_sat(add_sat(bias_count(), bn), weight_count());
}

double LayerDesc::gflops() const {
  if (kind != LayerKind::kConv) return 0.0;
  return 2.0 * double(weight_count()) * double(out.h) * double(out.w) / 1e9;
}

double LayerDesc::darknet_bflops() const {
  double (*const bflops)(const LayerDesc&) = layer_row(kind).bflops;
  return bflops ? bflops(*this) : 0.0;
}

std::vector<int> NetworkDesc::yolo_layers() const {
  std::vector<int> out;
  for (const LayerDesc& l : layers)
    if (l.kind == LayerKind::kYolo) out.push_back(l.index);
  return out;
}

std::vector<int> NetworkDesc::output_layers() const {
  std::vector<int> out;
  for (const LayerDesc& l : layers)
    if (is_output_kind(l.kind)) out.push_back(l.index);
  return out;
}

int64_t NetworkDesc::total_file_floats() const {
  int64_t n = 0;
  for (const LayerDesc& l : layers) n = add_sat(n, l.file_floats());
  return n;
}

double NetworkDesc::total_gflops() const {
  double g = 0;
  for (const LayerDesc& l : layers) g += l.gflops();
  return g;
}

double NetworkDesc::total_darknet_bflops() const {
  double g = 0;
  for (const LayerDesc& l : layers) g += l.darknet_bflops();
  return g;
}

std::string network_summary(const NetworkDesc& net) {
  std::string s = strfmt("%s: input %d x %d x %d%s\n", net.cfg_path.c_str(), net.net.width, net.net.height,
                         net.net.channels, net.net.letter_box ? " (letter_box)" : "");
  s += "   layer   filters  size/strd(dil)      input                output\n";
  for (const LayerDesc& l : net.layers) s += strfmt("%4d ", l.index) + layer_row(l.kind).summary(l) + "\n";
  const int64_t floats = net.total_file_floats();
  s += strfmt("Total BFLOPS %5.3f (conv only %5.3f)\n", net.total_darknet_bflops(), net.total_gflops());
  s += strfmt("Weights: %lld floats, %lld bytes with the 20-byte header\n", static_cast<long long>(floats),
              static_cast<long long>(add_sat(20, mul_sat(4, floats))));
  return s;
}

}  // namespace dlr
