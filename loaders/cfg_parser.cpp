// parse_network_cfg: Darknet .cfg -> validated, shape-inferred NetworkDesc.
//
// Semantics follow Darknet's parser.c (AlexeyAB/darknet src/parser.c);
// docs/cfg-support.md lists every section and key. Every key of a section is
// classified before its values are read: used, ignored (training-only),
// rejected (changes inference or the .weights layout in a way dlrun does not
// implement) or unknown (an error). Errors are values, one line each:
//   "FILE:LINE: [section] key=value: what was expected".
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "loaders/cfg_parser.h"

#include "loaders/cfg_lexer.h"
#include "loaders/checked_math.h"
#include "loaders/layer_table.h"
#include "loaders/network_desc.h"

namespace dlr {
namespace {

using U = KeyUse;

const KeyRule kNetRules[] = {
    {"width", U::kUsed}, {"height", U::kUsed}, {"channels", U::kUsed}, {"letter_box", U::kUsed},
    {"inputs", U::kReject, "non-image (flat vector) inputs are not supported; use width, height and channels"},
    // training / data augmentation / optimiser / memory: no effect on inference
    {"batch", U::kIgnored}, {"subdivisions", U::kIgnored}, {"max_batches", U::kIgnored},
    {"learning_rate", U::kIgnored}, {"learning_rate_min", U::kIgnored}, {"sgdr_cycle", U::kIgnored},
    {"sgdr_mult", U::kIgnored}, {"momentum", U::kIgnored}, {"decay", U::kIgnored}, {"time_steps", U::kIgnored},
    {"track", U::kIgnored}, {"augment_speed", U::kIgnored}, {"sequential_subdivisions", U::kIgnored},
    {"try_fix_nan", U::kIgnored}, {"weights_reject_freq", U::kIgnored}, {"equidistant_point", U::kIgnored},
    {"badlabels_rejection_percentage", U::kIgnored}, {"num_sigmas_reject_badlabels", U::kIgnored},
    {"ema_alpha", U::kIgnored}, {"loss_scale", U::kIgnored}, {"dynamic_minibatch", U::kIgnored},
    {"optimized_memory", U::kIgnored}, {"workspace_size_limit_MB", U::kIgnored}, {"use_cuda_graph", U::kIgnored},
    {"adam", U::kIgnored}, {"B1", U::kIgnored}, {"B2", U::kIgnored}, {"eps", U::kIgnored},
    {"max_crop", U::kIgnored}, {"min_crop", U::kIgnored}, {"flip", U::kIgnored}, {"blur", U::kIgnored},
    {"gaussian_noise", U::kIgnored}, {"mixup", U::kIgnored}, {"cutmix", U::kIgnored}, {"mosaic", U::kIgnored},
    {"mosaic_bound", U::kIgnored}, {"contrastive", U::kIgnored}, {"contrastive_jit_flip", U::kIgnored},
    {"contrastive_color", U::kIgnored}, {"unsupervised", U::kIgnored}, {"label_smooth_eps", U::kIgnored},
    {"resize_step", U::kIgnored}, {"attention", U::kIgnored}, {"adversarial_lr", U::kIgnored},
    {"max_chart_loss", U::kIgnored}, {"angle", U::kIgnored}, {"aspect", U::kIgnored},
    {"saturation", U::kIgnored}, {"exposure", U::kIgnored}, {"hue", U::kIgnored}, {"power", U::kIgnored},
    {"policy", U::kIgnored}, {"burn_in", U::kIgnored}, {"step", U::kIgnored}, {"scale", U::kIgnored},
    {"steps", U::kIgnored}, {"scales", U::kIgnored}, {"seq_scales", U::kIgnored}, {"gamma", U::kIgnored},
    {"center", U::kIgnored},
    // not read by Darknet's parse_net_options at all (it prints "Unused field"), found in its own cfgs
    {"max_epochs", U::kIgnored}, {"seen", U::kIgnored},
};

// Keys Darknet reads for every layer section (parse_network_cfg_custom).
const KeyRule kLayerCommonRules[] = {
    {"stopbackward", U::kIgnored}, {"onlyforward", U::kIgnored}, {"learning_rate", U::kIgnored},
    {"clip", U::kIgnored}, {"train_only_bn", U::kIgnored}, {"dont_update", U::kIgnored},
    {"burnin_update", U::kIgnored},
    {"dontload", U::kRejectNonZero, "skips this layer in the .weights file, changing its layout"},
    {"dontloadscales", U::kRejectNonZero, "skips the batch-norm scales in the .weights file, changing its layout"},
};

const KeyRule* find_rule(RuleSet set, const std::string& key) {
  for (size_t i = 0; i < set.count; ++i)
    if (key == set.rules[i].key) return &set.rules[i];
  return nullptr;
}

// Sections Darknet knows (parser.c:string_to_layer_type) that dlrun does not implement.
const char* const kUnsupportedSections[] = {
    "detection", "local_avgpool", "local_avg", "connected", "conn",
    "batchnorm", "activation", "implicit", "softmax", "soft",
    "local", "crop", "cost", "normalization", "lrn", "crnn", "rnn", "gru", "lstm", "conv_lstm", "history",
    "contrastive", "empty", "silence", "deconvolutional", "deconv", "iseg", "l2norm", "logistic", "xnor",
};

bool is_net_section(const std::string& n) { return n == "net" || n == "network"; }

std::string activation_choices() {
  std::string s;
  for (int a = 0; a <= static_cast<int>(Activation::kHardMish); ++a) {
    if (!s.empty()) s += ", ";
    s += activation_name(static_cast<Activation>(a));
  }
  return s;
}

}  // namespace

Status CfgParser::check_keys(const CfgSection& s, RuleSet rules, bool layer_section) {
  for (const CfgOption& o : s.options) {
    const KeyRule* r = find_rule(rules, o.key);
    if (r == nullptr && layer_section) r = find_rule(rules_of(kLayerCommonRules), o.key);
    if (r == nullptr)
      return parse_error(at(s, &o) + "unknown key (not a [" + s.name +
                         "] key Darknet uses for inference or training; check the spelling)");
    const std::string why = r->why ? r->why : "";
    switch (r->use) {
      case U::kUsed:
      case U::kIgnored:
        break;
      case U::kRejectNonZero: {
        int v = 0;
        if (!parse_cfg_int(o.value, &v)) return parse_error(at(s, &o) + "expected an integer");
        if (v != 0) return unsupported(at(s, &o) + "not supported by dlrun (" + why + "); expected 0 or no key");
        break;
      }
      case U::kRejectNotNone:
        if (o.value != "none")
          return unsupported(at(s, &o) + "not supported by dlrun (" + why + "); expected none or no key");
        break;
      case U::kReject:
        return unsupported(at(s, &o) + "not supported by dlrun (" + why + ")");
    }
  }
  for (const CfgOption& d : s.duplicates) {
    const CfgOption* first = s.find(d.key);
    m_net.warnings.push_back(at(s, &d) + "duplicate key ignored; the first one (line " + std::to_string(first->line) +
                             ", " + d.key + "=" + first->value + ") wins, as in Darknet");
  }
  return Status::ok_status();
}

Status CfgParser::get_int(const CfgSection& s, const char* key, int def, int* out) const {
  const CfgOption* o = s.find(key);
  if (o == nullptr) {
    *out = def;
    return Status::ok_status();
  }
  if (!parse_cfg_int(o->value, out)) return parse_error(at(s, o) + "expected an integer");
  return Status::ok_status();
}

Status CfgParser::get_float(const CfgSection& s, const char* key, float def, float* out) const {
  const CfgOption* o = s.find(key);
  if (o == nullptr) {
    *out = def;
    return Status::ok_status();
  }
  if (!parse_cfg_float(o->value, out)) return parse_error(at(s, o) + "expected a finite number");
  return Status::ok_status();
}

Status CfgParser::get_int_in(const CfgSection& s, const char* key, int def, int lo, int hi, int* out) const {
  DLR_RETURN_IF_ERROR(get_int(s, key, def, out));
  if (*out < lo || *out > hi) {
    std::string range = hi == INT32_MAX ? " >= " + std::to_string(lo)
                                        : " in " + std::to_string(lo) + ".." + std::to_string(hi);
    return parse_error(at_key(s, key) + "expected " + key + range);
  }
  return Status::ok_status();
}

Status CfgParser::get_activation(const CfgSection& s, const char* def, Activation* out) const {
  const CfgOption* o = s.find("activation");
  const std::string name = o ? o->value : def;
  if (!parse_activation(name, out))
    return parse_error(at(s, o) + "unknown activation (expected one of " + activation_choices() + ")");
  return Status::ok_status();
}

// Route/shortcut references: negative = relative to `cur`, others absolute;
// every reference must name an earlier layer.
Status CfgParser::resolve_refs(const CfgSection& s, const char* key, int cur, std::vector<int>* out) const {
  const CfgOption* o = s.find(key);
  if (o == nullptr)
    return parse_error(at(s, nullptr) + "missing required key " + key + "= (comma-separated layer indices)");
  std::vector<int> raw;
  if (!parse_cfg_int_list(o->value, &raw))
    return parse_error(at(s, o) + "expected a comma-separated list of layer indices");
  out->clear();
  for (int v : raw) {
    const int64_t idx = v < 0 ? int64_t(cur) + v : int64_t(v);
    if (v >= 0 && idx == cur)
      return parse_error(at(s, o) + "layer " + std::to_string(v) + " is this layer itself" + layer_note(cur));
    if (v >= 0 && idx > cur)
      return parse_error(at(s, o) + "layer " + std::to_string(v) + " does not exist yet" + layer_note(cur));
    if (idx < 0)
      return parse_error(at(s, o) + std::to_string(v) + " refers to layer " + std::to_string(idx) +
                         ", which does not exist" + layer_note(cur));
    out->push_back(static_cast<int>(idx));
  }
  return Status::ok_status();
}

Status CfgParser::check_output(const CfgSection& s, const char* key, const LayerDesc& l, const std::string& how) const {
  const Shape3& o = l.out;
  if (o.c <= 0 || o.h <= 0 || o.w <= 0)
    return parse_error(at_key(s, key) + "output would be " + o.to_string() + " for input " + l.in.to_string() + " (" +
                       how + "); expected a positive shape" + layer_note(l.index));
  if (o.count() > kMaxTensorElements)
    return parse_error(at_key(s, key) + "output " + o.to_string() + " exceeds 2^31-1 elements per image" +
                       layer_note(l.index));
  return Status::ok_status();
}

// filters*(c/groups)*size^2 in saturating arithmetic, against limits::kLayerWeights.
Status CfgParser::check_conv_weights(const CfgSection& s, const LayerDesc& l, const ConvParams& p) const {
  const int64_t n = mul_sat(mul_sat(mul_sat(p.filters, l.in.c / p.groups), p.size), p.size);
  if (n <= limits::kLayerWeights) return Status::ok_status();
  return parse_error(at(s, nullptr) + std::to_string(p.filters) + " filters x " + std::to_string(l.in.c / p.groups) +
                     " input channels per group x " + std::to_string(p.size) + "x" + std::to_string(p.size) +
                     " kernel = " + std::to_string(n) + " weights; expected at most " +
                     std::to_string(limits::kLayerWeights) + " per layer" + layer_note(l.index));
}

// width*height (after overrides) and channels*width*height, before any layer is sized.
Status CfgParser::check_input_size(const CfgSection& s) const {
  const NetParams& n = m_net.net;
  const int64_t pixels = int64_t(n.width) * n.height;
  const std::string size = std::to_string(n.width) + "x" + std::to_string(n.height);
  if (pixels > limits::kInputPixels) {
    std::string who;
    if (m_options.width > 0) who = "width override " + std::to_string(m_options.width);
    if (m_options.height > 0) who += (who.empty() ? "" : ", ") + std::string("height override ") +
                                     std::to_string(m_options.height);
    const std::string what = "input " + size + " is " + std::to_string(pixels) +
                             " pixels; expected width*height <= " + std::to_string(limits::kInputPixels) +
                             " (e.g. 4096x4096)";
    if (!who.empty()) return invalid_argument(m_name + ": " + who + ": " + what);
    return parse_error(at_key(s, "width") + what);
  }
  if (pixels * n.channels > kMaxTensorElements)
    return parse_error(at_key(s, "channels") + "input " + size + "x" + std::to_string(n.channels) +
                       " exceeds 2^31-1 elements per image");
  return Status::ok_status();
}

Status CfgParser::check_network_weights() const {
  const int64_t total = m_net.total_file_floats();
  if (total <= limits::kNetworkWeights) return Status::ok_status();
  return parse_error(m_name + ": the network has " + std::to_string(total) + " weights in total; expected at most " +
                     std::to_string(limits::kNetworkWeights));
}

Status CfgParser::parse_net(const CfgSection& s) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kNetRules), false));
  NetParams& n = m_net.net;
  const char* const dims[] = {"width", "height", "channels"};
  int* const vals[] = {&n.width, &n.height, &n.channels};
  for (int i = 0; i < 3; ++i) {
    if (s.find(dims[i]) == nullptr && !(i == 0 && m_options.width > 0) && !(i == 1 && m_options.height > 0))
      return parse_error(at(s, nullptr) + "missing " + dims[i] + "= (expected " + dims[i] + " in 1.." +
                         std::to_string(kMaxInputDim) + ")");
    DLR_RETURN_IF_ERROR(get_int(s, dims[i], 0, vals[i]));
  }
  if (m_options.width < 0 || m_options.width > kMaxInputDim)
    return invalid_argument(m_name + ": width override " + std::to_string(m_options.width) + ": expected 1.." +
                            std::to_string(kMaxInputDim) + " (or 0 for the cfg value)");
  if (m_options.height < 0 || m_options.height > kMaxInputDim)
    return invalid_argument(m_name + ": height override " + std::to_string(m_options.height) + ": expected 1.." +
                            std::to_string(kMaxInputDim) + " (or 0 for the cfg value)");
  if (m_options.width > 0) n.width = m_options.width;
  if (m_options.height > 0) n.height = m_options.height;
  for (int i = 0; i < 3; ++i)
    if (*vals[i] <= 0 || *vals[i] > kMaxInputDim)
      return parse_error(at_key(s, dims[i]) + "expected " + dims[i] + " in 1.." + std::to_string(kMaxInputDim));
  DLR_RETURN_IF_ERROR(check_input_size(s));
  int letter_box = 0;
  DLR_RETURN_IF_ERROR(get_int(s, "letter_box", 0, &letter_box));
  n.letter_box = letter_box != 0;
  return Status::ok_status();
}

Status CfgParser::resolve_one_ref(const CfgSection& s, const char* key, int cur, int* out) const {
  std::vector<int> refs;
  DLR_RETURN_IF_ERROR(resolve_refs(s, key, cur, &refs));
  if (refs.size() != 1) return parse_error(at_key(s, key) + "expected exactly one layer index" + layer_note(cur));
  *out = refs[0];
  return Status::ok_status();
}

// Darknet reads the first 2*total values; missing values keep the default `def`.
Status CfgParser::get_anchors(const CfgSection& s, int total, float def, std::vector<float>* out) const {
  out->assign(2 * size_t(total), def);
  const CfgOption* o = s.find("anchors");
  if (o == nullptr) return Status::ok_status();
  std::vector<float> a;
  if (!parse_cfg_float_list(o->value, &a))
    return parse_error(at(s, o) + "expected a comma-separated list of numbers (w,h pairs)");
  if (a.size() < 2 * size_t(total))
    return parse_error(at(s, o) + "expected at least 2*num = " + std::to_string(2 * int64_t(total)) + " values, got " +
                       std::to_string(a.size()));
  std::copy(a.begin(), a.begin() + 2 * total, out->begin());
  return Status::ok_status();
}

Status CfgParser::get_yolo_mask(const CfgSection& s, int total, std::vector<int>* out) const {
  out->clear();
  const CfgOption* o = s.find("mask");
  if (o == nullptr) {
    for (int i = 0; i < total; ++i) out->push_back(i);
    return Status::ok_status();
  }
  if (!parse_cfg_int_list(o->value, out))
    return parse_error(at(s, o) + "expected a comma-separated list of anchor indices");
  for (int m : *out)
    if (m < 0 || m >= total)
      return parse_error(at(s, o) + "anchor index " + std::to_string(m) + " out of range (expected 0 <= index < num=" +
                         std::to_string(total) + ")");
  return Status::ok_status();
}

Expected<NetworkDesc> CfgParser::parse(const std::vector<CfgSection>& sections) {
  if (sections.empty()) return parse_error(m_name + ": no sections (expected [net] first, then layers)");
  const CfgSection& first = sections[0];
  if (!is_net_section(first.name))
    return parse_error(at(first, nullptr) + "expected [net] or [network] as the first section");
  DLR_RETURN_IF_ERROR(parse_net(first));

  for (size_t i = 1; i < sections.size(); ++i) {
    const CfgSection& s = sections[i];
    if (is_net_section(s.name))
      return parse_error(at(s, nullptr) + "[net] may only be the first section");
    const LayerRow* row = find_layer_section(s.name);
    if (row == nullptr) {
      for (const char* u : kUnsupportedSections)
        if (s.name == u) {
          std::string known = "net";
          for (int k = 0; k < kLayerKindCount; ++k)
            known += std::string(", ") + layer_row(static_cast<LayerKind>(k)).sections[0];
          return unsupported(at(s, nullptr) + "section not supported by dlrun (expected one of " + known + ")");
        }
      return parse_error(at(s, nullptr) + "unknown section (not a Darknet layer type)");
    }
    if (m_net.layers.size() >= size_t(limits::kLayers))
      return parse_error(at(s, nullptr) + "more than " + std::to_string(limits::kLayers) +
                         " layers; expected at most " + std::to_string(limits::kLayers));
    LayerDesc l;
    l.index = static_cast<int>(m_net.layers.size());
    l.kind = row->kind;
    l.cfg_line = s.line;
    DLR_RETURN_IF_ERROR(check_keys(s, row->keys, true));
    DLR_RETURN_IF_ERROR(row->parse(*this, s, &l));
    m_net.layers.push_back(std::move(l));
  }
  if (m_net.layers.empty())
    return parse_error(at(first, nullptr) + "the network has no layers (expected layer sections after [net])");
  DLR_RETURN_IF_ERROR(check_network_weights());
  const NetParams& n = m_net.net;
  if (is_output_kind(m_net.layers.back().kind) && (n.width % 32 != 0 || n.height % 32 != 0))
    m_net.warnings.push_back(m_name + ": input " + std::to_string(n.width) + "x" + std::to_string(n.height) +
                             " is not divisible by 32 (Darknet warns: detection may be worse)");
  return std::move(m_net);
}

// The largest power of two dividing the cfg's input size that every layer's output
// width and height divide into (32 for YOLO detectors): the step input sizes should take.
static int input_size_step(const NetworkDesc& net) {
  int step = 1;
  for (const LayerDesc& l : net.layers)
    for (int k = 2; k <= 1024; k *= 2)
      if (net.net.width % k == 0 && net.net.height % k == 0 && net.net.width / k == l.out.w &&
          net.net.height / k == l.out.h)
        step = std::max(step, k);
  return step;
}

Expected<NetworkDesc> parse_network_cfg_text(const std::string& text, const std::string& name,
                                            const CfgOptions& options) {
  DLR_ASSIGN_OR_RETURN(std::vector<CfgSection> sections, lex_cfg_text(text, name));
  Expected<NetworkDesc> net = CfgParser(name, options).parse(sections);
  if (net.ok() || (options.width <= 0 && options.height <= 0) || net.status().code() == StatusCode::kInvalidArgument)
    return net;
  // A layer that fails only with the overridden size: the override is to blame, not the cfg line.
  Expected<NetworkDesc> as_cfg = CfgParser(name, CfgOptions{}).parse(sections);
  if (!as_cfg.ok()) return net;
  std::string who;
  if (options.width > 0) who = "width override " + std::to_string(options.width);
  if (options.height > 0) who += (who.empty() ? "" : ", ") + std::string("height override ") + std::to_string(options.height);
  const int step = input_size_step(*as_cfg);
  return invalid_argument(who + ": this network does not accept that input size" +
                          (step > 1 ? " (expected multiples of " + std::to_string(step) + ", as the cfg's " +
                                          std::to_string(as_cfg->net.width) + "x" +
                                          std::to_string(as_cfg->net.height) + ")"
                                    : "") +
                          ": " + net.status().message());
}

Expected<NetworkDesc> parse_network_cfg(const std::string& path, const CfgOptions& options) {
  std::string text;
  DLR_RETURN_IF_ERROR(read_text_file(path, &text, kMaxCfgBytes));
  return parse_network_cfg_text(text, path, options);
}

}  // namespace dlr
