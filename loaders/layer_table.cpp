// The layer table: one row per LayerKind with everything the loaders know about it
// (layer_table.h). A kind's block below holds its cfg key rules, its parse (keys ->
// params, inputs and shape inference) and its row (sections, FLOPs, summary line,
// synthetic-weights moments, head layout); kRows at the end is generated from
// DLR_OPS (kernels/op_params.h), so a kind without a row does not compile.
// Semantics follow Darknet's parser.c (shared docs DARKNET.md section 1); every
// message is one line in the format of network_desc.h.
#include "loaders/layer_table.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "loaders/cfg_lexer.h"

namespace dlr {

std::string strfmt(const char* format, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  return buf;
}

namespace {

using U = KeyUse;

std::string io_shapes(const Shape3& in, const Shape3& out) {
  return strfmt("%4d x%4d x%4d -> %4d x%4d x%4d", in.w, in.h, in.c, out.w, out.h, out.c);
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// Moments shared by several kinds.
SyntheticMoments same_as_input(const MomentsIn& m) { return m.in; }

// Product of two roughly independent signals ([scale_channels], [sam]): E[ab] = Ea Eb,
// Var ~ Va Vb + Va Eb^2 + Vb Ea^2.
SyntheticMoments product_moments(const MomentsIn& m, int from) {
  const SyntheticMoments& in = m.in;
  const SyntheticMoments& f = m.of(from);
  double ma = 0, mb = 0;
  for (double v : in.mean) ma += v / static_cast<double>(in.mean.size());
  for (double v : f.mean) mb += v / static_cast<double>(f.mean.size());
  SyntheticMoments out;
  out.mean.assign(static_cast<size_t>(m.layer.out.c), ma * mb);
  out.variance = in.variance * f.variance + in.variance * mb * mb + f.variance * ma * ma;
  return out;
}

// [reorg], [reorg3d]: a permutation: same values, channels repeated stride^2 times (approximately).
SyntheticMoments reorg_moments(const MomentsIn& m) {
  SyntheticMoments out;
  out.variance = m.in.variance;
  for (int k = 0; k < m.layer.out.c; ++k)
    out.mean.push_back(m.in.mean.empty() ? 0.0 : m.in.mean[static_cast<size_t>(k) % m.in.mean.size()]);
  return out;
}

// ---- [convolutional], [conv] -------------------------------------------------------------

const KeyRule kConvRules[] = {
    {"filters", U::kUsed}, {"size", U::kUsed}, {"stride", U::kUsed}, {"stride_x", U::kUsed},
    {"stride_y", U::kUsed}, {"dilation", U::kUsed}, {"pad", U::kUsed}, {"padding", U::kUsed},
    {"groups", U::kUsed}, {"batch_normalize", U::kUsed}, {"activation", U::kUsed},
    {"assisted_excitation", U::kIgnored}, {"dot", U::kIgnored}, {"grad_centr", U::kIgnored},
    {"stream", U::kIgnored}, {"wait_stream", U::kIgnored},
    {"angle", U::kIgnored}, {"reverse", U::kIgnored},  // only read by the rejected sway/rotate modes
    {"binary", U::kRejectNonZero, "binarized weights"},
    {"xnor", U::kRejectNonZero, "XNOR (binary) convolution"},
    {"bin_output", U::kRejectNonZero, "binary output of XNOR convolution"},
    {"share_index", U::kReject, "shares another layer's weights; this layer then has none in the .weights file"},
    {"flipped", U::kRejectNonZero, "transposes the weights after loading"},
    {"antialiasing", U::kRejectNonZero, "adds a fixed blur convolution after this one"},
    {"coordconv", U::kRejectNonZero, "adds coordinate channels"},
    {"sway", U::kRejectNonZero, "deformable (sway) weights"},
    {"rotate", U::kRejectNonZero, "deformable (rotate) weights"},
    {"stretch", U::kRejectNonZero, "deformable (stretch) weights"},
    {"stretch_sway", U::kRejectNonZero, "deformable (stretch_sway) weights"},
    {"cbn", U::kRejectNonZero, "cross-iteration batch normalization"},
};

Status parse_conv(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  ConvParams p;
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "filters", 1, 1, kMaxFilters, &p.filters));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "size", 1, 1, limits::kKernelSize, &p.size));
  int stride = 1;
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "stride", 1, 1, INT32_MAX, &stride));
  // Darknet: stride_x/stride_y default to -1 = "use stride".
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "stride_x", stride, 1, INT32_MAX, &p.stride_x));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "stride_y", stride, 1, INT32_MAX, &p.stride_y));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "dilation", 1, 1, INT32_MAX, &p.dilation));
  if (p.size == 1) p.dilation = 1;
  int pad = 0;
  DLR_RETURN_IF_ERROR(P.get_int(s, "pad", 0, &pad));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "padding", 0, 0, INT32_MAX, &p.padding));
  if (pad != 0) p.padding = p.size / 2;  // pad overrides padding
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "groups", 1, 1, kMaxFilters, &p.groups));
  if (l->in.c % p.groups != 0)
    return parse_error(P.at_key(s, "groups") + "the input has " + std::to_string(l->in.c) +
                       " channels, not divisible by groups" + P.layer_note(l->index));
  if (p.filters % p.groups != 0)
    return parse_error(P.at_key(s, "groups") + "filters=" + std::to_string(p.filters) + " is not divisible by groups" +
                       P.layer_note(l->index));
  DLR_RETURN_IF_ERROR(P.check_conv_weights(s, *l, p));
  int bn = 0;
  DLR_RETURN_IF_ERROR(P.get_int(s, "batch_normalize", 0, &bn));
  p.batch_normalize = bn != 0;
  DLR_RETURN_IF_ERROR(P.get_activation(s, "logistic", &p.activation));

  const int64_t num_h = int64_t(l->in.h) + 2 * int64_t(p.padding) - p.size;
  const int64_t num_w = int64_t(l->in.w) + 2 * int64_t(p.padding) - p.size;
  const std::string how = "size " + std::to_string(p.size) + ", stride " + std::to_string(p.stride_x) + "x" +
                          std::to_string(p.stride_y) + ", padding " + std::to_string(p.padding);
  if (num_h < 0 || num_w < 0)
    return parse_error(P.at_key(s, "size") + "the kernel does not fit the padded input " + l->in.to_string() + " (" + how +
                       ")" + P.layer_note(l->index));
  l->out = {p.filters, static_cast<int>(std::min<int64_t>(num_h / p.stride_y + 1, INT32_MAX)),
            static_cast<int>(std::min<int64_t>(num_w / p.stride_x + 1, INT32_MAX))};
  if (p.dilation > 1) {
    // Darknet computes with padding*d per side and a kernel span d*(size-1)+1.
    const int64_t span = int64_t(p.dilation) * (p.size - 1) + 1;
    const int64_t eh = int64_t(l->in.h) + 2 * int64_t(p.padding) * p.dilation - span;
    const int64_t ew = int64_t(l->in.w) + 2 * int64_t(p.padding) * p.dilation - span;
    if (eh < 0 || ew < 0 || eh / p.stride_y + 1 != l->out.h || ew / p.stride_x + 1 != l->out.w)
      return unsupported(P.at_key(s, "dilation") + "not supported by dlrun with size=" + std::to_string(p.size) +
                         " padding=" + std::to_string(p.padding) +
                         ": Darknet's output-size formula ignores dilation and disagrees with the computed "
                         "window (expected an odd size with pad=1)" + P.layer_note(l->index));
  }
  l->params = p;
  return P.check_output(s, "size", *l, how);
}

const LayerRow row_conv = {
    LayerKind::kConv,
    {"convolutional", "conv"},
    rules_of(kConvRules),
    parse_conv,
    [](const LayerDesc& l) { return l.gflops(); },  // bflops
    [](const LayerDesc& l) {
      const ConvParams& p = l.conv();
      std::string s = p.groups > 1 ? strfmt("conv  %5d/%4d ", p.filters, p.groups) : strfmt("conv  %5d      ", p.filters);
      if (p.stride_x != p.stride_y)
        s += strfmt("%2dx%2d/%2dx%2d ", p.size, p.size, p.stride_x, p.stride_y);
      else if (p.dilation > 1)
        s += strfmt("%2d x%2d/%2d(%1d)", p.size, p.size, p.stride_x, p.dilation);
      else
        s += strfmt("%2d x%2d/%2d   ", p.size, p.size, p.stride_x);
      return s + io_shapes(l.in, l.out) +
             strfmt(" %5.3f BF %s%s", l.gflops(), p.batch_normalize ? "bn " : "", activation_name(p.activation));
    },
    [](const MomentsIn& m) {
      // Pre-activations ~ N(~0, target) by construction of the weights and BN means.
      const ActMoments a = activation_moments(m.layer.conv().activation);
      SyntheticMoments out;
      out.mean.assign(static_cast<size_t>(m.layer.out.c), a.mean * std::sqrt(m.conv_target));
      out.variance = a.variance * m.conv_target;
      return out;
    },
    nullptr,  // head
};

// ---- [maxpool], [max] --------------------------------------------------------------------

const KeyRule kMaxPoolRules[] = {
    {"size", U::kUsed}, {"stride", U::kUsed}, {"stride_x", U::kUsed}, {"stride_y", U::kUsed},
    {"padding", U::kUsed},
    {"out_channels", U::kIgnored},  // only read with maxpool_depth, which is rejected
    {"maxpool_depth", U::kRejectNonZero, "max over channels instead of space"},
    {"antialiasing", U::kRejectNonZero, "adds a fixed blur convolution after the pooling"},
    {"maxpool_zero_nonmax", U::kRejectNonZero, "zeroes non-maximum outputs"},
};

Status parse_maxpool(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  MaxPoolParams p;
  int stride = 1;
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "stride", 1, 1, INT32_MAX, &stride));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "stride_x", stride, 1, INT32_MAX, &p.stride_x));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "stride_y", stride, 1, INT32_MAX, &p.stride_y));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "size", stride, 1, limits::kKernelSize, &p.size));  // size defaults to stride
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "padding", p.size - 1, 0, INT32_MAX, &p.padding));  // TOTAL padding
  if (int64_t(p.padding) > 2 * (int64_t(p.size) - 1))
    return unsupported(P.at_key(s, "padding") + "windows would lie entirely in the padding (expected padding <= " +
                       std::to_string(2 * (int64_t(p.size) - 1)) + " = 2*(size-1))" + P.layer_note(l->index));
  const int64_t num_h = int64_t(l->in.h) + p.padding - p.size;
  const int64_t num_w = int64_t(l->in.w) + p.padding - p.size;
  const std::string how = "size " + std::to_string(p.size) + ", stride " + std::to_string(p.stride_x) + "x" +
                          std::to_string(p.stride_y) + ", total padding " + std::to_string(p.padding);
  if (num_h < 0 || num_w < 0)
    return parse_error(P.at_key(s, "size") + "the window does not fit the padded input " + l->in.to_string() + " (" +
                       how + ")" + P.layer_note(l->index));
  l->out = {l->in.c, static_cast<int>(num_h / p.stride_y + 1), static_cast<int>(num_w / p.stride_x + 1)};
  l->params = p;
  return P.check_output(s, "size", *l, how);
}

const LayerRow row_maxpool = {
    LayerKind::kMaxPool,
    {"maxpool", "max"},
    rules_of(kMaxPoolRules),
    parse_maxpool,
    [](const LayerDesc& l) {
      const MaxPoolParams& p = l.maxpool();
      return double(p.size) * p.size * l.in.c * l.out.h * l.out.w / 1e9;
    },  // bflops
    [](const LayerDesc& l) {
      const MaxPoolParams& p = l.maxpool();
      std::string s = p.stride_x == p.stride_y
                          ? strfmt("max               %2dx%2d/%2d   ", p.size, p.size, p.stride_x)
                          : strfmt("max              %2dx%2d/%2dx%2d ", p.size, p.size, p.stride_x, p.stride_y);
      return s + io_shapes(l.in, l.out) + strfmt(" %5.3f BF", l.darknet_bflops());
    },
    [](const MomentsIn& m) {
      // Max of s*s correlated, right-skewed values: the mean moves up and the variance
      // grows (measured ~x1.25 for 2x2 windows after leaky).
      const double r = std::sqrt(static_cast<double>(m.layer.maxpool().size - 1));
      const double shift = 0.5 * r * std::sqrt(m.in.variance);
      SyntheticMoments out = m.in;
      for (double& v : out.mean) v += shift;
      out.variance *= 1.0 + 0.25 * r;
      return out;
    },
    nullptr,  // head
};

// ---- [route] -----------------------------------------------------------------------------

const KeyRule kRouteRules[] = {{"layers", U::kUsed}, {"groups", U::kUsed}, {"group_id", U::kUsed}};

Status parse_route(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  RouteParams p;
  DLR_RETURN_IF_ERROR(P.resolve_refs(s, "layers", l->index, &p.layers));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "groups", 1, 1, kMaxFilters, &p.groups));
  DLR_RETURN_IF_ERROR(P.get_int(s, "group_id", 0, &p.group_id));
  if (p.group_id < 0 || p.group_id >= p.groups)
    return parse_error(P.at_key(s, "group_id") + "expected 0 <= group_id < groups (" + std::to_string(p.groups) + ")");
  l->inputs = p.layers;
  l->in = P.shape_of(l->index - 1);
  const Shape3 first = P.shape_of(p.layers[0]);
  int64_t channels = 0;
  for (int idx : p.layers) {
    const Shape3 sh = P.shape_of(idx);
    if (sh.h != first.h || sh.w != first.w)
      return parse_error(P.at_key(s, "layers") + "inputs differ in width/height: layer " + std::to_string(p.layers[0]) +
                         " is " + first.to_string() + " but layer " + std::to_string(idx) + " is " + sh.to_string() +
                         " (expected equal height and width)" + P.layer_note(l->index));
    if (sh.c % p.groups != 0)
      return parse_error(P.at_key(s, "groups") + "layer " + std::to_string(idx) + " has " + std::to_string(sh.c) +
                         " channels, not divisible by groups" + P.layer_note(l->index));
    channels += sh.c;
  }
  l->out = {static_cast<int>(std::min<int64_t>(channels / p.groups, INT32_MAX)), first.h, first.w};
  l->params = std::move(p);
  return P.check_output(s, "layers", *l, "route");
}

const LayerRow row_route = {
    LayerKind::kRoute,
    {"route"},
    rules_of(kRouteRules),
    parse_route,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      const RouteParams& p = l.route();
      std::string refs;
      for (int x : p.layers) refs += " " + std::to_string(x);
      std::string s = strfmt("route %-26s", refs.c_str());
      if (p.groups > 1) s += strfmt("groups %d/%d ", p.group_id, p.groups);
      return s + strfmt("-> %4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
    },
    [](const MomentsIn& m) {
      const RouteParams& r = m.layer.route();
      SyntheticMoments out;
      double weighted = 0;
      for (int src : r.layers) {
        const SyntheticMoments& s = m.of(src);
        const size_t part = s.mean.size() / static_cast<size_t>(r.groups > 0 ? r.groups : 1);
        const size_t from = part * static_cast<size_t>(r.group_id);
        for (size_t c = from; c < from + part && c < s.mean.size(); ++c) out.mean.push_back(s.mean[c]);
        weighted += s.variance * static_cast<double>(part);
      }
      out.variance = out.mean.empty() ? m.in.variance : weighted / static_cast<double>(out.mean.size());
      return out;
    },
    nullptr,  // head
};

// ---- [shortcut] --------------------------------------------------------------------------

const KeyRule kShortcutRules[] = {
    {"from", U::kUsed}, {"activation", U::kUsed},
    {"weights_type", U::kRejectNotNone, "weighted (per_feature/per_channel) residual add"},
    {"weights_normalization", U::kRejectNotNone, "normalized residual weights"},
};

Status parse_shortcut(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  if (l->index == 0) return parse_error(P.at(s, nullptr) + "a shortcut needs a previous layer" + P.layer_note(0));
  ShortcutParams p;
  DLR_RETURN_IF_ERROR(P.resolve_refs(s, "from", l->index, &p.from));
  DLR_RETURN_IF_ERROR(P.get_activation(s, "linear", &p.activation));
  P.read_previous(l);
  // Any shape is accepted, as in Darknet: the output has the previous layer's shape and
  // a `from` layer adds its flat NCHW element i to output element i where i < its
  // element count (its first channels when the spatial sizes match).
  for (int idx : p.from) l->inputs.push_back(idx);
  l->out = l->in;
  l->params = std::move(p);
  return P.check_output(s, "from", *l, "shortcut");
}

const LayerRow row_shortcut = {
    LayerKind::kShortcut,
    {"shortcut"},
    rules_of(kShortcutRules),
    parse_shortcut,
    [](const LayerDesc& l) { return double(l.out.count()) * double(l.shortcut().from.size()) / 1e9; },  // bflops
    [](const LayerDesc& l) {
      const ShortcutParams& p = l.shortcut();
      return strfmt("shortcut %-22s %s ", join(p.from).c_str(), activation_name(p.activation)) +
             strfmt("-> %4d x%4d x%4d %5.3f BF", l.out.w, l.out.h, l.out.c, l.darknet_bflops());
    },
    [](const MomentsIn& m) {
      const ShortcutParams& p = m.layer.shortcut();
      SyntheticMoments out = m.of(m.layer.index - 1);
      for (int src : p.from) {
        const SyntheticMoments& s = m.of(src);
        for (size_t c = 0; c < out.mean.size() && c < s.mean.size(); ++c) out.mean[c] += s.mean[c];
        out.variance += s.variance;
      }
      if (p.activation != Activation::kLinear) {  // crude: as if the sum were N(0, power)
        double power = out.variance;
        for (double v : out.mean) power += v * v / static_cast<double>(out.mean.size());
        const ActMoments a = activation_moments(p.activation);
        out.mean.assign(out.mean.size(), a.mean * std::sqrt(power));
        out.variance = a.variance * power;
      }
      return out;
    },
    nullptr,  // head
};

// ---- [upsample] --------------------------------------------------------------------------

const KeyRule kUpsampleRules[] = {{"stride", U::kUsed}, {"scale", U::kUsed}};

Status parse_upsample(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  UpsampleParams p;
  DLR_RETURN_IF_ERROR(P.get_int(s, "stride", 2, &p.stride));
  if (p.stride < 0)
    return unsupported(P.at_key(s, "stride") + "a negative stride (downsampling) is not supported by dlrun" +
                       P.layer_note(l->index));
  if (p.stride == 0) return parse_error(P.at_key(s, "stride") + "expected stride >= 1" + P.layer_note(l->index));
  DLR_RETURN_IF_ERROR(P.get_float(s, "scale", 1.0f, &p.scale));
  const int64_t h = int64_t(l->in.h) * p.stride;
  const int64_t w = int64_t(l->in.w) * p.stride;
  // Ordered so that no product overflows: h, w <= 2^31 before h*w; h*w <= 2^31 before c*h*w.
  if (h > kMaxTensorElements || w > kMaxTensorElements || h * w > kMaxTensorElements ||
      l->in.c * h * w > kMaxTensorElements)
    return parse_error(P.at_key(s, "stride") + "output would exceed 2^31-1 elements per image" + P.layer_note(l->index));
  l->out = {l->in.c, static_cast<int>(h), static_cast<int>(w)};
  l->params = p;
  return P.check_output(s, "stride", *l, "upsample");
}

const LayerRow row_upsample = {
    LayerKind::kUpsample,
    {"upsample"},
    rules_of(kUpsampleRules),
    parse_upsample,
    nullptr,  // bflops
    [](const LayerDesc& l) { return strfmt("upsample             %2dx   ", l.upsample().stride) + io_shapes(l.in, l.out); },
    [](const MomentsIn& m) {
      const double s = m.layer.upsample().scale;
      SyntheticMoments out = m.in;
      for (double& v : out.mean) v *= s;
      out.variance *= s * s;
      return out;
    },
    nullptr,  // head
};

// ---- [yolo] ------------------------------------------------------------------------------

const KeyRule kYoloRules[] = {
    {"classes", U::kUsed}, {"num", U::kUsed}, {"mask", U::kUsed}, {"anchors", U::kUsed},
    {"scale_x_y", U::kUsed}, {"new_coords", U::kUsed}, {"nms_kind", U::kUsed}, {"beta_nms", U::kUsed},
    {"jitter", U::kIgnored}, {"ignore_thresh", U::kIgnored}, {"truth_thresh", U::kIgnored},
    {"iou_thresh", U::kIgnored}, {"random", U::kIgnored}, {"iou_loss", U::kIgnored},
    {"iou_normalizer", U::kIgnored}, {"obj_normalizer", U::kIgnored}, {"cls_normalizer", U::kIgnored},
    {"delta_normalizer", U::kIgnored}, {"max_delta", U::kIgnored}, {"label_smooth_eps", U::kIgnored},
    {"objectness_smooth", U::kIgnored}, {"resize", U::kIgnored}, {"focal_loss", U::kIgnored},
    {"iou_thresh_kind", U::kIgnored}, {"counters_per_class", U::kIgnored}, {"max", U::kIgnored},
    {"show_details", U::kIgnored}, {"embedding_layer", U::kIgnored}, {"track_history_size", U::kIgnored},
    {"sim_thresh", U::kIgnored}, {"dets_for_track", U::kIgnored}, {"dets_for_show", U::kIgnored},
    {"track_ciou_norm", U::kIgnored},
    // not read by parse_yolo (Darknet prints "Unused field"), found in Darknet's own cfgs
    {"uc_normalizer", U::kIgnored}, {"beta1", U::kIgnored},
    {"map", U::kReject, "remaps class ids through a file"},
};

// ---- what [yolo] and [Gaussian_yolo] share ----

// classes, num, mask, anchors (pixels) and scale_x_y, in this order.
Status parse_yolo_head(CfgParser& P, const CfgSection& s, YoloParams* p) {
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "classes", 20, 1, kMaxClasses, &p->classes));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "num", 1, 1, kMaxAnchors, &p->total));
  DLR_RETURN_IF_ERROR(P.get_yolo_mask(s, p->total, &p->mask));
  DLR_RETURN_IF_ERROR(P.get_anchors(s, p->total, 0.5f, &p->anchors));
  return P.get_float(s, "scale_x_y", 1.0f, &p->scale_x_y);
}

// nms_kind and beta_nms. An unknown nms_kind is Darknet's default NMS (a warning);
// cornersnms is refused where Darknet would run it ([Gaussian_yolo]).
Status parse_yolo_nms(CfgParser& P, const CfgSection& s, bool refuse_corners, YoloParams* p) {
  const CfgOption* nk = s.find("nms_kind");
  const std::string nms = nk ? nk->value : "default";
  if (nms == "greedynms") {
    p->nms_kind = NmsKind::kGreedy;
  } else if (nms == "diounms") {
    p->nms_kind = NmsKind::kDiou;
  } else if (refuse_corners && nms == "cornersnms") {
    return unsupported(P.at(s, nk) + "not supported by dlrun (corners NMS); expected default, greedynms or diounms");
  } else {
    p->nms_kind = NmsKind::kDefault;
    if (nms != "default")
      P.warn(P.at(s, nk) + "unrecognised nms_kind; Darknet uses the default NMS (as does dlrun)");
  }
  return P.get_float(s, "beta_nms", 0.6f, &p->beta_nms);
}

// The previous layer must output len(mask)*(classes+entries) channels.
Status check_yolo_channels(CfgParser& P, const CfgSection& s, const LayerDesc& l, const YoloParams& p, int entries) {
  const int64_t expect_c = int64_t(p.mask.size()) * (int64_t(p.classes) + entries);
  if (l.in.c == expect_c) return Status::ok_status();
  const std::string e = std::to_string(entries);
  return parse_error(P.at(s, s.find("classes") ? s.find("classes") : s.find("mask")) + "the previous layer " +
                     std::to_string(l.index - 1) + " outputs " + std::to_string(l.in.c) +
                     " channels but len(mask)*(classes+" + e + ") = " + std::to_string(p.mask.size()) + "*(" +
                     std::to_string(p.classes) + "+" + e + ") = " + std::to_string(expect_c) +
                     " (expected filters=" + std::to_string(expect_c) + " in that [convolutional])" +
                     P.layer_note(l.index));
}

Status parse_yolo(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  YoloParams p;
  DLR_RETURN_IF_ERROR(parse_yolo_head(P, s, &p));
  int new_coords = 0;
  DLR_RETURN_IF_ERROR(P.get_int(s, "new_coords", 0, &new_coords));
  if (new_coords != 0 && new_coords != 1)
    return unsupported(P.at_key(s, "new_coords") + "expected 0 or 1");
  p.new_coords = new_coords == 1;
  DLR_RETURN_IF_ERROR(parse_yolo_nms(P, s, false, &p));
  DLR_RETURN_IF_ERROR(check_yolo_channels(P, s, *l, p, 5));
  l->out = l->in;
  l->params = std::move(p);
  return P.check_output(s, "classes", *l, "yolo");
}

const LayerRow row_yolo = {
    LayerKind::kYolo,
    {"yolo"},
    rules_of(kYoloRules),
    parse_yolo,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      const YoloParams& p = l.yolo();
      return strfmt("yolo  classes %d mask %s sxy %.2f %s%s ", p.classes, join(p.mask).c_str(), p.scale_x_y,
                    nms_kind_name(p.nms_kind), p.new_coords ? " new_coords" : "") +
             strfmt("%4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
    },
    same_as_input,
    [](const LayerDesc& l) {
      return HeadLayout{static_cast<int>(l.yolo().mask.size()), 5 + l.yolo().classes, 4};
    },  // head
};

// ---- [dropout] ---------------------------------------------------------------------------

const KeyRule kDropoutRules[] = {
    {"probability", U::kIgnored}, {"dropblock", U::kIgnored}, {"dropblock_size_rel", U::kIgnored},
    {"dropblock_size_abs", U::kIgnored},
};

Status parse_dropout(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  DropoutParams p;
  p.probability = 0.2f;  // Darknet's default; identity at inference either way
  if (const CfgOption* o = s.find("probability")) {
    float v = 0;
    if (parse_cfg_float(o->value, &v)) p.probability = v;  // training-only: a bad value is ignored
  }
  l->out = l->in;
  l->params = p;
  return P.check_output(s, "probability", *l, "dropout");
}

const LayerRow row_dropout = {
    LayerKind::kDropout,
    {"dropout"},
    rules_of(kDropoutRules),
    parse_dropout,
    nullptr,  // bflops
    [](const LayerDesc& l) { return strfmt("dropout    p = %.3f        ", l.dropout().probability) + io_shapes(l.in, l.out); },
    same_as_input,
    nullptr,  // head
};

// ---- [avgpool], [avg] --------------------------------------------------------------------

Status parse_avgpool(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  l->out = {l->in.c, 1, 1};
  l->params = AvgPoolParams{};
  return P.check_output(s, "", *l, "global average pool");
}

const LayerRow row_avgpool = {
    LayerKind::kAvgPool,
    {"avgpool", "avg"},
    RuleSet{nullptr, 0},
    parse_avgpool,
    nullptr,  // bflops
    [](const LayerDesc& l) { return "avg                          " + io_shapes(l.in, l.out); },
    [](const MomentsIn& m) {  // the mean survives; the spatial part of the variance averages out
      SyntheticMoments out;
      out.mean = m.in.mean;
      out.variance = 0.1 * m.in.variance;
      return out;
    },
    nullptr,  // head
};

// ---- [scale_channels] --------------------------------------------------------------------

const KeyRule kScaleChannelsRules[] = {{"from", U::kUsed}, {"scale_wh", U::kUsed}, {"activation", U::kUsed}};

Status parse_scale_channels(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  if (l->index == 0) return parse_error(P.at(s, nullptr) + "[scale_channels] needs a previous layer" + P.layer_note(0));
  ScaleChannelsParams p;
  DLR_RETURN_IF_ERROR(P.resolve_one_ref(s, "from", l->index, &p.from));
  int wh = 0;
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "scale_wh", 0, 0, 1, &wh));
  p.scale_wh = wh != 0;
  DLR_RETURN_IF_ERROR(P.get_activation(s, "linear", &p.activation));
  if (p.activation == Activation::kSwish || p.activation == Activation::kMish || p.activation == Activation::kHardMish)
    return unsupported(P.at_key(s, "activation") + "Darknet's [scale_channels] does not apply " +
                       activation_name(p.activation) + " (expected another activation)" + P.layer_note(l->index));
  P.read_previous(l);
  const Shape3 from = P.shape_of(p.from);
  const bool ok = p.scale_wh ? (l->in.c == 1 && l->in.h == from.h && l->in.w == from.w)
                             : (l->in.h == 1 && l->in.w == 1 && l->in.c == from.c);
  if (!ok)
    return parse_error(P.at_key(s, "from") + "the previous layer outputs " + l->in.to_string() + " and layer " +
                       std::to_string(p.from) + " outputs " + from.to_string() + " (expected " +
                       (p.scale_wh ? "1 x H x W scales for a C x H x W layer" : "C x 1 x 1 scales for a C x H x W layer") +
                       ")" + P.layer_note(l->index));
  l->inputs.push_back(p.from);
  l->out = from;
  l->params = p;
  return P.check_output(s, "from", *l, "scale_channels");
}

const LayerRow row_scale_channels = {
    LayerKind::kScaleChannels,
    {"scale_channels"},
    rules_of(kScaleChannelsRules),
    parse_scale_channels,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      const ScaleChannelsParams& p = l.as<ScaleChannelsParams>();
      return strfmt("scale_channels %4d%s %-8s", p.from, p.scale_wh ? " wh" : "   ", activation_name(p.activation)) +
             io_shapes(l.in, l.out);
    },
    [](const MomentsIn& m) { return product_moments(m, m.layer.as<ScaleChannelsParams>().from); },
    nullptr,  // head
};

// ---- [sam] -------------------------------------------------------------------------------

const KeyRule kSamRules[] = {{"from", U::kUsed}, {"activation", U::kUsed}};

Status parse_sam(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  if (l->index == 0) return parse_error(P.at(s, nullptr) + "[sam] needs a previous layer" + P.layer_note(0));
  SamParams p;
  DLR_RETURN_IF_ERROR(P.resolve_one_ref(s, "from", l->index, &p.from));
  DLR_RETURN_IF_ERROR(P.get_activation(s, "linear", &p.activation));
  if (p.activation == Activation::kSwish || p.activation == Activation::kMish || p.activation == Activation::kHardMish)
    return unsupported(P.at_key(s, "activation") + "Darknet's [sam] does not apply " + activation_name(p.activation) +
                       " (expected another activation)" + P.layer_note(l->index));
  P.read_previous(l);
  const Shape3 from = P.shape_of(p.from);
  if (from != l->in)
    return parse_error(P.at_key(s, "from") + "layer " + std::to_string(p.from) + " outputs " + from.to_string() +
                       " but the previous layer outputs " + l->in.to_string() + " (expected equal shapes)" +
                       P.layer_note(l->index));
  l->inputs.push_back(p.from);
  l->out = from;
  l->params = p;
  return P.check_output(s, "from", *l, "sam");
}

const LayerRow row_sam = {
    LayerKind::kSam,
    {"sam"},
    rules_of(kSamRules),
    parse_sam,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      const SamParams& p = l.as<SamParams>();
      return strfmt("sam            %4d    %-8s", p.from, activation_name(p.activation)) + io_shapes(l.in, l.out);
    },
    [](const MomentsIn& m) { return product_moments(m, m.layer.as<SamParams>().from); },
    nullptr,  // head
};

// ---- [reorg] -----------------------------------------------------------------------------

const KeyRule kReorgRules[] = {
    {"stride", U::kUsed},
    {"reverse", U::kRejectNonZero, "depth-to-space (reverse reorg)"},
};

Status parse_reorg(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  ReorgParams p;
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "stride", 1, 1, 64, &p.stride));
  const int st = p.stride;
  if (l->in.h % st != 0 || l->in.w % st != 0 || (l->kind == LayerKind::kReorg && l->in.c % (st * st) != 0))
    return parse_error(P.at_key(s, "stride") + "the input " + l->in.to_string() + " is not divisible by the stride " +
                       std::to_string(st) + " (expected H and W divisible by stride" +
                       (l->kind == LayerKind::kReorg ? std::string(" and C by stride*stride") : std::string()) + ")" +
                       P.layer_note(l->index));
  const int64_t c = int64_t(l->in.c) * st * st;
  if (c > kMaxTensorElements) return parse_error(P.at_key(s, "stride") + "too many output channels" + P.layer_note(l->index));
  l->out = {int(c), l->in.h / st, l->in.w / st};
  l->params = p;
  return P.check_output(s, "stride", *l, "reorg");
}

const LayerRow row_reorg = {
    LayerKind::kReorg,
    {"reorg"},
    rules_of(kReorgRules),
    parse_reorg,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      return strfmt("reorg                /%2d     ", l.as<ReorgParams>().stride) + io_shapes(l.in, l.out);
    },
    reorg_moments,
    nullptr,  // head
};

// ---- [reorg3d] ---------------------------------------------------------------------------

const LayerRow row_reorg3d = {
    LayerKind::kReorg3d,
    {"reorg3d"},
    rules_of(kReorgRules),
    parse_reorg,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      return strfmt("reorg3d              /%2d     ", l.as<ReorgParams>().stride) + io_shapes(l.in, l.out);
    },
    reorg_moments,
    nullptr,  // head
};

// ---- [region] ----------------------------------------------------------------------------

const KeyRule kRegionRules[] = {
    {"classes", U::kUsed}, {"coords", U::kUsed}, {"num", U::kUsed}, {"softmax", U::kUsed}, {"anchors", U::kUsed},
    {"classfix", U::kUsed},
    {"max", U::kIgnored}, {"log", U::kIgnored}, {"sqrt", U::kIgnored}, {"focal_loss", U::kIgnored},
    {"jitter", U::kIgnored}, {"resize", U::kIgnored}, {"rescore", U::kIgnored}, {"thresh", U::kIgnored},
    {"absolute", U::kIgnored}, {"random", U::kIgnored}, {"coord_scale", U::kIgnored},
    {"object_scale", U::kIgnored}, {"noobject_scale", U::kIgnored}, {"mask_scale", U::kIgnored},
    {"class_scale", U::kIgnored}, {"bias_match", U::kIgnored},
    {"tree", U::kReject, "hierarchical softmax tree (yolo9000's 9k.tree)"},
    {"map", U::kReject, "remaps class ids through a file"},
};

Status parse_region(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  RegionParams p;
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "classes", 20, 1, kMaxClasses, &p.classes));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "coords", 4, 4, 4, &p.coords));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "num", 1, 1, kMaxAnchors, &p.num));
  int softmax = 0;
  DLR_RETURN_IF_ERROR(P.get_int(s, "softmax", 0, &softmax));
  p.softmax = softmax != 0;
  int classfix = 0;
  DLR_RETURN_IF_ERROR(P.get_int(s, "classfix", 0, &classfix));
  if (classfix == -1)
    return unsupported(P.at_key(s, "classfix") + "not supported by dlrun (zeroes objectness below 0.5); expected "
                                               "classfix >= 0" + P.layer_note(l->index));
  DLR_RETURN_IF_ERROR(P.get_anchors(s, p.num, 0.5f, &p.anchors));
  const int64_t expect_c = int64_t(p.num) * (int64_t(p.classes) + p.coords + 1);
  if (l->in.c != expect_c)
    return parse_error(P.at(s, s.find("classes") ? s.find("classes") : s.find("num")) + "the previous layer " +
                       std::to_string(l->index - 1) + " outputs " + std::to_string(l->in.c) +
                       " channels but num*(classes+coords+1) = " + std::to_string(p.num) + "*(" +
                       std::to_string(p.classes) + "+" + std::to_string(p.coords) + "+1) = " +
                       std::to_string(expect_c) + " (expected filters=" + std::to_string(expect_c) +
                       " in that [convolutional])" + P.layer_note(l->index));
  l->out = l->in;
  l->params = std::move(p);
  return P.check_output(s, "classes", *l, "region");
}

const LayerRow row_region = {
    LayerKind::kRegion,
    {"region"},
    rules_of(kRegionRules),
    parse_region,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      const RegionParams& p = l.region();
      return strfmt("region classes %d num %d%s ", p.classes, p.num, p.softmax ? " softmax" : "") +
             strfmt("%4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
    },
    same_as_input,
    [](const LayerDesc& l) {
      const RegionParams& p = l.region();
      return HeadLayout{p.num, p.coords + 1 + p.classes, p.coords};
    },  // head
};

// ---- [Gaussian_yolo] ---------------------------------------------------------------------

const KeyRule kGaussianYoloRules[] = {
    {"classes", U::kUsed}, {"num", U::kUsed}, {"mask", U::kUsed}, {"anchors", U::kUsed},
    {"scale_x_y", U::kUsed}, {"nms_kind", U::kUsed}, {"beta_nms", U::kUsed}, {"yolo_point", U::kUsed},
    {"max", U::kIgnored}, {"max_delta", U::kIgnored}, {"counters_per_class", U::kIgnored},
    {"label_smooth_eps", U::kIgnored}, {"objectness_smooth", U::kIgnored}, {"uc_normalizer", U::kIgnored},
    {"iou_normalizer", U::kIgnored}, {"obj_normalizer", U::kIgnored}, {"cls_normalizer", U::kIgnored},
    {"delta_normalizer", U::kIgnored}, {"iou_loss", U::kIgnored}, {"iou_thresh_kind", U::kIgnored},
    {"jitter", U::kIgnored}, {"resize", U::kIgnored}, {"ignore_thresh", U::kIgnored},
    {"truth_thresh", U::kIgnored}, {"iou_thresh", U::kIgnored}, {"random", U::kIgnored},
    {"map", U::kReject, "remaps class ids through a file"},
};

Status parse_gaussian_yolo(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  GaussianYoloParams g;
  YoloParams& p = g.yolo;
  DLR_RETURN_IF_ERROR(parse_yolo_head(P, s, &p));
  DLR_RETURN_IF_ERROR(parse_yolo_nms(P, s, true, &p));
  const CfgOption* yp = s.find("yolo_point");
  const std::string point = yp ? yp->value : "center";
  g.point = point == "left_top" ? YoloPoint::kLeftTop
                                : point == "right_bottom" ? YoloPoint::kRightBottom : YoloPoint::kCenter;
  DLR_RETURN_IF_ERROR(check_yolo_channels(P, s, *l, p, 9));
  l->out = l->in;
  l->params = std::move(g);
  return P.check_output(s, "classes", *l, "Gaussian_yolo");
}

const LayerRow row_gaussian_yolo = {
    LayerKind::kGaussianYolo,
    {"Gaussian_yolo"},
    rules_of(kGaussianYoloRules),
    parse_gaussian_yolo,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      const YoloParams& p = l.gaussian_yolo().yolo;
      return strfmt("Gaussian_yolo classes %d mask %s sxy %.2f %s ", p.classes, join(p.mask).c_str(), p.scale_x_y,
                    nms_kind_name(p.nms_kind)) +
             strfmt("%4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
    },
    same_as_input,
    [](const LayerDesc& l) {
      const YoloParams& p = l.gaussian_yolo().yolo;
      return HeadLayout{static_cast<int>(p.mask.size()), 9 + p.classes, 8};
    },  // head
};

// ---- the table ------------------------------------------------------------------------

#define DLR_LAYER_ROW_(K, ident, name, P, role) &row_##ident,
const LayerRow* const kRows[] = {DLR_OPS(DLR_LAYER_ROW_)};
#undef DLR_LAYER_ROW_
static_assert(sizeof(kRows) / sizeof(kRows[0]) == size_t(kLayerKindCount), "one row per LayerKind");

}  // namespace

const LayerRow& layer_row(LayerKind kind) { return *kRows[static_cast<size_t>(kind)]; }

const LayerRow* find_layer_section(const std::string& name) {
  for (const LayerRow* row : kRows)
    for (const char* section : row->sections)
      if (section != nullptr && name == section) return row;
  return nullptr;
}

}  // namespace dlr
