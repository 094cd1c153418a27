// The layer table's rows (layer_table.h) of the kinds that move values without
// combining them: [upsample], [reorg], [reorg3d], [dropout].
#include "loaders/layer_table_rows.h"

#include <cstdint>
#include <string>

#include "loaders/cfg_lexer.h"

namespace dlr::layer_rows {
namespace {

// [reorg], [reorg3d]: a permutation: same values, channels repeated stride^2 times (approximately).
SyntheticMoments reorg_moments(const MomentsIn& m) {
  SyntheticMoments out;
  out.variance = m.in.variance;
  for (int k = 0; k < m.layer.out.c; ++k)
    out.mean.push_back(m.in.mean.empty() ? 0.0 : m.in.mean[static_cast<size_t>(k) % m.in.mean.size()]);
  return out;
}

}  // namespace

// ---- [upsample] --------------------------------------------------------------------------

namespace {

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

}  // namespace

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

// ---- [reorg] -----------------------------------------------------------------------------

namespace {

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

}  // namespace

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

// ---- [dropout] ---------------------------------------------------------------------------

namespace {

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

}  // namespace

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

}  // namespace dlr::layer_rows
