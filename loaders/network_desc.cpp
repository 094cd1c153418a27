// NetworkDesc helpers: names, parameter/FLOP counts and the Darknet-like layer table.
#include <cstdarg>
#include <cstdio>
#include <string>

#include "loaders/checked_math.h"
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
  switch (kind) {
    case LayerKind::kConv: return gflops();
    case LayerKind::kMaxPool: {
      const MaxPoolParams& p = maxpool();
      return double(p.size) * p.size * in.c * out.h * out.w / 1e9;
    }
    case LayerKind::kShortcut: return double(out.count()) * double(shortcut().from.size()) / 1e9;
    case LayerKind::kRoute:
    case LayerKind::kUpsample:
    case LayerKind::kYolo:
    case LayerKind::kDropout:
    case LayerKind::kAvgPool:
    case LayerKind::kScaleChannels:
    case LayerKind::kSam:
    case LayerKind::kReorg:
    case LayerKind::kReorg3d:
    case LayerKind::kRegion:
    case LayerKind::kGaussianYolo: return 0.0;
  }
  return 0.0;
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

namespace {

std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* format, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  return buf;
}

std::string io_shapes(const Shape3& in, const Shape3& out) {
  return fmt("%4d x%4d x%4d -> %4d x%4d x%4d", in.w, in.h, in.c, out.w, out.h, out.c);
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::string layer_line(const LayerDesc& l) {
  std::string s = fmt("%4d ", l.index);
  switch (l.kind) {
    case LayerKind::kConv: {
      const ConvParams& p = l.conv();
      s += p.groups > 1 ? fmt("conv  %5d/%4d ", p.filters, p.groups) : fmt("conv  %5d      ", p.filters);
      if (p.stride_x != p.stride_y)
        s += fmt("%2dx%2d/%2dx%2d ", p.size, p.size, p.stride_x, p.stride_y);
      else if (p.dilation > 1)
        s += fmt("%2d x%2d/%2d(%1d)", p.size, p.size, p.stride_x, p.dilation);
      else
        s += fmt("%2d x%2d/%2d   ", p.size, p.size, p.stride_x);
      s += io_shapes(l.in, l.out) + fmt(" %5.3f BF %s%s", l.gflops(), p.batch_normalize ? "bn " : "",
                                        activation_name(p.activation));
      break;
    }
    case LayerKind::kMaxPool: {
      const MaxPoolParams& p = l.maxpool();
      if (p.stride_x == p.stride_y)
        s += fmt("max               %2dx%2d/%2d   ", p.size, p.size, p.stride_x);
      else
        s += fmt("max              %2dx%2d/%2dx%2d ", p.size, p.size, p.stride_x, p.stride_y);
      s += io_shapes(l.in, l.out) + fmt(" %5.3f BF", l.darknet_bflops());
      break;
    }
    case LayerKind::kRoute: {
      const RouteParams& p = l.route();
      std::string refs;
      for (int x : p.layers) refs += " " + std::to_string(x);
      s += fmt("route %-26s", refs.c_str());
      if (p.groups > 1) s += fmt("groups %d/%d ", p.group_id, p.groups);
      s += fmt("-> %4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
      break;
    }
    case LayerKind::kShortcut: {
      const ShortcutParams& p = l.shortcut();
      s += fmt("shortcut %-22s %s ", join(p.from).c_str(), activation_name(p.activation)) +
           fmt("-> %4d x%4d x%4d %5.3f BF", l.out.w, l.out.h, l.out.c, l.darknet_bflops());
      break;
    }
    case LayerKind::kUpsample:
      s += fmt("upsample             %2dx   ", l.upsample().stride) + io_shapes(l.in, l.out);
      break;
    case LayerKind::kYolo: {
      const YoloParams& p = l.yolo();
      s += fmt("yolo  classes %d mask %s sxy %.2f %s%s ", p.classes, join(p.mask).c_str(), p.scale_x_y,
               nms_kind_name(p.nms_kind), p.new_coords ? " new_coords" : "") +
           fmt("%4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
      break;
    }
    case LayerKind::kDropout:
      s += fmt("dropout    p = %.3f        ", l.dropout().probability) + io_shapes(l.in, l.out);
      break;
    case LayerKind::kAvgPool:
      s += "avg                          " + io_shapes(l.in, l.out);
      break;
    case LayerKind::kScaleChannels: {
      const ScaleChannelsParams& p = l.scale_channels();
      s += fmt("scale_channels %4d%s %-8s", p.from, p.scale_wh ? " wh" : "   ", activation_name(p.activation)) +
           io_shapes(l.in, l.out);
      break;
    }
    case LayerKind::kSam:
      s += fmt("sam            %4d    %-8s", l.sam().from, activation_name(l.sam().activation)) + io_shapes(l.in, l.out);
      break;
    case LayerKind::kReorg:
      s += fmt("reorg                /%2d     ", l.reorg().stride) + io_shapes(l.in, l.out);
      break;
    case LayerKind::kReorg3d:
      s += fmt("reorg3d              /%2d     ", l.reorg().stride) + io_shapes(l.in, l.out);
      break;
    case LayerKind::kRegion: {
      const RegionParams& p = l.region();
      s += fmt("region classes %d num %d%s ", p.classes, p.num, p.softmax ? " softmax" : "") +
           fmt("%4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
      break;
    }
    case LayerKind::kGaussianYolo: {
      const YoloParams& p = l.gaussian_yolo().yolo;
      s += fmt("Gaussian_yolo classes %d mask %s sxy %.2f %s ", p.classes, join(p.mask).c_str(), p.scale_x_y,
               nms_kind_name(p.nms_kind)) +
           fmt("%4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
      break;
    }
  }
  return s + "\n";
}

}  // namespace

std::string network_summary(const NetworkDesc& net) {
  std::string s = fmt("%s: input %d x %d x %d%s\n", net.cfg_path.c_str(), net.net.width, net.net.height,
                      net.net.channels, net.net.letter_box ? " (letter_box)" : "");
  s += "   layer   filters  size/strd(dil)      input                output\n";
  for (const LayerDesc& l : net.layers) s += layer_line(l);
  const int64_t floats = net.total_file_floats();
  s += fmt("Total BFLOPS %5.3f (conv only %5.3f)\n", net.total_darknet_bflops(), net.total_gflops());
  s += fmt("Weights: %lld floats, %lld bytes with the 20-byte header\n", static_cast<long long>(floats),
           static_cast<long long>(add_sat(20, mul_sat(4, floats))));
  return s;
}

}  // namespace dlr
