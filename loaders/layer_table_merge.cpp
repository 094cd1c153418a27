// The layer table's rows (layer_table.h) of the kinds that combine other layers'
// outputs: [route], [shortcut], [scale_channels], [sam].
#include "loaders/layer_table_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dlr::layer_rows {
namespace {

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

}  // namespace

// ---- [route] -----------------------------------------------------------------------------

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

// ---- [scale_channels] --------------------------------------------------------------------

namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace dlr::layer_rows
