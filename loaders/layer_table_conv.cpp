// The layer table's rows (layer_table.h) of [convolutional], the one weighted kind.
#include "loaders/layer_table_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace dlr::layer_rows {

// ---- [convolutional], [conv] -------------------------------------------------------------

namespace {

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

}  // namespace

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

}  // namespace dlr::layer_rows
