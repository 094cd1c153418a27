// The layer table's rows (layer_table.h) of the pooling kinds: [maxpool], [avgpool].
#include "loaders/layer_table_rows.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace dlr::layer_rows {

// ---- [maxpool], [max] --------------------------------------------------------------------

namespace {

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

}  // namespace

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

// ---- [avgpool], [avg] --------------------------------------------------------------------

namespace {

Status parse_avgpool(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  l->out = {l->in.c, 1, 1};
  l->params = AvgPoolParams{};
  return P.check_output(s, "", *l, "global average pool");
}

}  // namespace

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

}  // namespace dlr::layer_rows
