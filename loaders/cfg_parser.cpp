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

#include "loaders/cfg_lexer.h"
#include "loaders/checked_math.h"
#include "loaders/network_desc.h"

namespace dlr {
namespace {

constexpr int kMaxInputDim = 16384;
constexpr int kMaxFilters = 65536;
constexpr int kMaxClasses = 65536;
constexpr int kMaxAnchors = 65536;
constexpr int64_t kMaxTensorElements = INT32_MAX;  // per image

enum class KeyUse : uint8_t {
  kUsed,           // read by this parser
  kIgnored,        // training-only (or memory/scheduling only): accepted and ignored
  kRejectNonZero,  // unsupported unless its integer value is 0
  kRejectNotNone,  // unsupported unless its value is "none"
  kReject,         // unsupported whenever present
};

struct KeyRule {
  const char* key;
  KeyUse use;
  const char* why = nullptr;  // for rejected keys: what Darknet would do with it
};

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

const KeyRule kMaxPoolRules[] = {
    {"size", U::kUsed}, {"stride", U::kUsed}, {"stride_x", U::kUsed}, {"stride_y", U::kUsed},
    {"padding", U::kUsed},
    {"out_channels", U::kIgnored},  // only read with maxpool_depth, which is rejected
    {"maxpool_depth", U::kRejectNonZero, "max over channels instead of space"},
    {"antialiasing", U::kRejectNonZero, "adds a fixed blur convolution after the pooling"},
    {"maxpool_zero_nonmax", U::kRejectNonZero, "zeroes non-maximum outputs"},
};

const KeyRule kRouteRules[] = {{"layers", U::kUsed}, {"groups", U::kUsed}, {"group_id", U::kUsed}};

const KeyRule kShortcutRules[] = {
    {"from", U::kUsed}, {"activation", U::kUsed},
    {"weights_type", U::kRejectNotNone, "weighted (per_feature/per_channel) residual add"},
    {"weights_normalization", U::kRejectNotNone, "normalized residual weights"},
};

const KeyRule kUpsampleRules[] = {{"stride", U::kUsed}, {"scale", U::kUsed}};

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

const KeyRule kDropoutRules[] = {
    {"probability", U::kIgnored}, {"dropblock", U::kIgnored}, {"dropblock_size_rel", U::kIgnored},
    {"dropblock_size_abs", U::kIgnored},
};

// ---- sections added for issue 9 (parsers at the end of CfgParser) ----

const KeyRule kScaleChannelsRules[] = {{"from", U::kUsed}, {"scale_wh", U::kUsed}, {"activation", U::kUsed}};

const KeyRule kSamRules[] = {{"from", U::kUsed}, {"activation", U::kUsed}};

const KeyRule kReorgRules[] = {
    {"stride", U::kUsed},
    {"reverse", U::kRejectNonZero, "depth-to-space (reverse reorg)"},
};

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

struct RuleSet {
  const KeyRule* rules;
  size_t count;
};
template <size_t N>
constexpr RuleSet rules_of(const KeyRule (&r)[N]) {
  return {r, N};
}

const KeyRule* find_rule(RuleSet set, const std::string& key) {
  for (size_t i = 0; i < set.count; ++i)
    if (key == set.rules[i].key) return &set.rules[i];
  return nullptr;
}

struct SectionKind {
  const char* name;
  LayerKind kind;
};
const SectionKind kLayerSections[] = {
    {"convolutional", LayerKind::kConv}, {"conv", LayerKind::kConv},       {"maxpool", LayerKind::kMaxPool},
    {"max", LayerKind::kMaxPool},        {"route", LayerKind::kRoute},     {"shortcut", LayerKind::kShortcut},
    {"upsample", LayerKind::kUpsample},  {"yolo", LayerKind::kYolo},       {"dropout", LayerKind::kDropout},
    {"avgpool", LayerKind::kAvgPool},    {"avg", LayerKind::kAvgPool},     {"scale_channels", LayerKind::kScaleChannels},
    {"sam", LayerKind::kSam},            {"reorg", LayerKind::kReorg},     {"reorg3d", LayerKind::kReorg3d},
    {"region", LayerKind::kRegion},      {"Gaussian_yolo", LayerKind::kGaussianYolo},
};

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

class CfgParser {
 public:
  CfgParser(std::string name, const CfgOptions& options) : m_name(std::move(name)), m_options(options) {
    m_net.cfg_path = m_name;
  }

  Expected<NetworkDesc> parse(const std::vector<CfgSection>& sections);

 private:
  // "NAME:LINE: [section] key=value: " (or "NAME:LINE: [section]: " without an option).
  std::string at(const CfgSection& s, const CfgOption* o) const {
    if (o == nullptr) return m_name + ":" + std::to_string(s.line) + ": [" + s.name + "]: ";
    return m_name + ":" + std::to_string(o->line) + ": [" + s.name + "] " + o->key + "=" + o->value + ": ";
  }
  std::string at_key(const CfgSection& s, const char* key) const { return at(s, s.find(key)); }
  std::string layer_note(int index) const { return " (this is layer " + std::to_string(index) + ")"; }

  Status check_keys(const CfgSection& s, RuleSet rules, bool layer_section);
  Status get_int(const CfgSection& s, const char* key, int def, int* out) const;
  Status get_float(const CfgSection& s, const char* key, float def, float* out) const;
  // Integer key that must satisfy lo <= v <= hi ("expected KEY in LO..HI" / "expected KEY >= LO").
  Status get_int_in(const CfgSection& s, const char* key, int def, int lo, int hi, int* out) const;
  Status get_activation(const CfgSection& s, const char* def, Activation* out) const;
  Status resolve_refs(const CfgSection& s, const char* key, int cur, std::vector<int>* out) const;
  Status check_output(const CfgSection& s, const char* key, const LayerDesc& l, const std::string& how) const;
  Status check_conv_weights(const CfgSection& s, const LayerDesc& l, const ConvParams& p) const;
  Status check_input_size(const CfgSection& s) const;
  Status check_network_weights() const;

  Status parse_net(const CfgSection& s);
  Status parse_conv(const CfgSection& s, LayerDesc* l);
  Status parse_maxpool(const CfgSection& s, LayerDesc* l);
  Status parse_route(const CfgSection& s, LayerDesc* l);
  Status parse_shortcut(const CfgSection& s, LayerDesc* l);
  Status parse_upsample(const CfgSection& s, LayerDesc* l);
  Status parse_yolo(const CfgSection& s, LayerDesc* l);
  Status parse_dropout(const CfgSection& s, LayerDesc* l);
  // Sections added for issue 9 (defined at the end of the class's members).
  Status parse_avgpool(const CfgSection& s, LayerDesc* l);
  Status parse_scale_channels(const CfgSection& s, LayerDesc* l);
  Status parse_sam(const CfgSection& s, LayerDesc* l);
  Status parse_reorg(const CfgSection& s, LayerDesc* l);
  Status parse_region(const CfgSection& s, LayerDesc* l);
  Status parse_gaussian_yolo(const CfgSection& s, LayerDesc* l);
  Status resolve_one_ref(const CfgSection& s, const char* key, int cur, int* out) const;
  Status get_anchors(const CfgSection& s, int total, float def, std::vector<float>* out) const;
  Status get_yolo_mask(const CfgSection& s, int total, std::vector<int>* out) const;

  // Output shape of layer `index`; -1 is the network input.
  Shape3 shape_of(int index) const {
    return index < 0 ? m_net.input_shape() : m_net.layers[static_cast<size_t>(index)].out;
  }
  // Reads the previous layer (or the network input for layer 0).
  void read_previous(LayerDesc* l) const {
    l->inputs = {l->index - 1};
    l->in = shape_of(l->index - 1);
  }

  std::string m_name;
  CfgOptions m_options;
  NetworkDesc m_net;
};

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

Status CfgParser::parse_conv(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kConvRules), true));
  read_previous(l);
  ConvParams p;
  DLR_RETURN_IF_ERROR(get_int_in(s, "filters", 1, 1, kMaxFilters, &p.filters));
  DLR_RETURN_IF_ERROR(get_int_in(s, "size", 1, 1, limits::kKernelSize, &p.size));
  int stride = 1;
  DLR_RETURN_IF_ERROR(get_int_in(s, "stride", 1, 1, INT32_MAX, &stride));
  // Darknet: stride_x/stride_y default to -1 = "use stride".
  DLR_RETURN_IF_ERROR(get_int_in(s, "stride_x", stride, 1, INT32_MAX, &p.stride_x));
  DLR_RETURN_IF_ERROR(get_int_in(s, "stride_y", stride, 1, INT32_MAX, &p.stride_y));
  DLR_RETURN_IF_ERROR(get_int_in(s, "dilation", 1, 1, INT32_MAX, &p.dilation));
  if (p.size == 1) p.dilation = 1;
  int pad = 0;
  DLR_RETURN_IF_ERROR(get_int(s, "pad", 0, &pad));
  DLR_RETURN_IF_ERROR(get_int_in(s, "padding", 0, 0, INT32_MAX, &p.padding));
  if (pad != 0) p.padding = p.size / 2;  // pad overrides padding
  DLR_RETURN_IF_ERROR(get_int_in(s, "groups", 1, 1, kMaxFilters, &p.groups));
  if (l->in.c % p.groups != 0)
    return parse_error(at_key(s, "groups") + "the input has " + std::to_string(l->in.c) +
                       " channels, not divisible by groups" + layer_note(l->index));
  if (p.filters % p.groups != 0)
    return parse_error(at_key(s, "groups") + "filters=" + std::to_string(p.filters) + " is not divisible by groups" +
                       layer_note(l->index));
  DLR_RETURN_IF_ERROR(check_conv_weights(s, *l, p));
  int bn = 0;
  DLR_RETURN_IF_ERROR(get_int(s, "batch_normalize", 0, &bn));
  p.batch_normalize = bn != 0;
  DLR_RETURN_IF_ERROR(get_activation(s, "logistic", &p.activation));

  const int64_t num_h = int64_t(l->in.h) + 2 * int64_t(p.padding) - p.size;
  const int64_t num_w = int64_t(l->in.w) + 2 * int64_t(p.padding) - p.size;
  const std::string how = "size " + std::to_string(p.size) + ", stride " + std::to_string(p.stride_x) + "x" +
                          std::to_string(p.stride_y) + ", padding " + std::to_string(p.padding);
  if (num_h < 0 || num_w < 0)
    return parse_error(at_key(s, "size") + "the kernel does not fit the padded input " + l->in.to_string() + " (" + how +
                       ")" + layer_note(l->index));
  l->out = {p.filters, static_cast<int>(std::min<int64_t>(num_h / p.stride_y + 1, INT32_MAX)),
            static_cast<int>(std::min<int64_t>(num_w / p.stride_x + 1, INT32_MAX))};
  if (p.dilation > 1) {
    // Darknet computes with padding*d per side and a kernel span d*(size-1)+1.
    const int64_t span = int64_t(p.dilation) * (p.size - 1) + 1;
    const int64_t eh = int64_t(l->in.h) + 2 * int64_t(p.padding) * p.dilation - span;
    const int64_t ew = int64_t(l->in.w) + 2 * int64_t(p.padding) * p.dilation - span;
    if (eh < 0 || ew < 0 || eh / p.stride_y + 1 != l->out.h || ew / p.stride_x + 1 != l->out.w)
      return unsupported(at_key(s, "dilation") + "not supported by dlrun with size=" + std::to_string(p.size) +
                         " padding=" + std::to_string(p.padding) +
                         ": Darknet's output-size formula ignores dilation and disagrees with the computed "
                         "window (expected an odd size with pad=1)" + layer_note(l->index));
  }
  l->params = p;
  return check_output(s, "size", *l, how);
}

Status CfgParser::parse_maxpool(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kMaxPoolRules), true));
  read_previous(l);
  MaxPoolParams p;
  int stride = 1;
  DLR_RETURN_IF_ERROR(get_int_in(s, "stride", 1, 1, INT32_MAX, &stride));
  DLR_RETURN_IF_ERROR(get_int_in(s, "stride_x", stride, 1, INT32_MAX, &p.stride_x));
  DLR_RETURN_IF_ERROR(get_int_in(s, "stride_y", stride, 1, INT32_MAX, &p.stride_y));
  DLR_RETURN_IF_ERROR(get_int_in(s, "size", stride, 1, limits::kKernelSize, &p.size));  // size defaults to stride
  DLR_RETURN_IF_ERROR(get_int_in(s, "padding", p.size - 1, 0, INT32_MAX, &p.padding));  // TOTAL padding
  if (int64_t(p.padding) > 2 * (int64_t(p.size) - 1))
    return unsupported(at_key(s, "padding") + "windows would lie entirely in the padding (expected padding <= " +
                       std::to_string(2 * (int64_t(p.size) - 1)) + " = 2*(size-1))" + layer_note(l->index));
  const int64_t num_h = int64_t(l->in.h) + p.padding - p.size;
  const int64_t num_w = int64_t(l->in.w) + p.padding - p.size;
  const std::string how = "size " + std::to_string(p.size) + ", stride " + std::to_string(p.stride_x) + "x" +
                          std::to_string(p.stride_y) + ", total padding " + std::to_string(p.padding);
  if (num_h < 0 || num_w < 0)
    return parse_error(at_key(s, "size") + "the window does not fit the padded input " + l->in.to_string() + " (" +
                       how + ")" + layer_note(l->index));
  l->out = {l->in.c, static_cast<int>(num_h / p.stride_y + 1), static_cast<int>(num_w / p.stride_x + 1)};
  l->params = p;
  return check_output(s, "size", *l, how);
}

Status CfgParser::parse_route(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kRouteRules), true));
  RouteParams p;
  DLR_RETURN_IF_ERROR(resolve_refs(s, "layers", l->index, &p.layers));
  DLR_RETURN_IF_ERROR(get_int_in(s, "groups", 1, 1, kMaxFilters, &p.groups));
  DLR_RETURN_IF_ERROR(get_int(s, "group_id", 0, &p.group_id));
  if (p.group_id < 0 || p.group_id >= p.groups)
    return parse_error(at_key(s, "group_id") + "expected 0 <= group_id < groups (" + std::to_string(p.groups) + ")");
  l->inputs = p.layers;
  l->in = shape_of(l->index - 1);
  const Shape3 first = shape_of(p.layers[0]);
  int64_t channels = 0;
  for (int idx : p.layers) {
    const Shape3 sh = shape_of(idx);
    if (sh.h != first.h || sh.w != first.w)
      return parse_error(at_key(s, "layers") + "inputs differ in width/height: layer " + std::to_string(p.layers[0]) +
                         " is " + first.to_string() + " but layer " + std::to_string(idx) + " is " + sh.to_string() +
                         " (expected equal height and width)" + layer_note(l->index));
    if (sh.c % p.groups != 0)
      return parse_error(at_key(s, "groups") + "layer " + std::to_string(idx) + " has " + std::to_string(sh.c) +
                         " channels, not divisible by groups" + layer_note(l->index));
    channels += sh.c;
  }
  l->out = {static_cast<int>(std::min<int64_t>(channels / p.groups, INT32_MAX)), first.h, first.w};
  l->params = std::move(p);
  return check_output(s, "layers", *l, "route");
}

Status CfgParser::parse_shortcut(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kShortcutRules), true));
  if (l->index == 0) return parse_error(at(s, nullptr) + "a shortcut needs a previous layer" + layer_note(0));
  ShortcutParams p;
  DLR_RETURN_IF_ERROR(resolve_refs(s, "from", l->index, &p.from));
  DLR_RETURN_IF_ERROR(get_activation(s, "linear", &p.activation));
  read_previous(l);
  // Any shape is accepted, as in Darknet: the output has the previous layer's shape and
  // a `from` layer adds its flat NCHW element i to output element i where i < its
  // element count (its first channels when the spatial sizes match).
  for (int idx : p.from) l->inputs.push_back(idx);
  l->out = l->in;
  l->params = std::move(p);
  return check_output(s, "from", *l, "shortcut");
}

Status CfgParser::parse_upsample(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kUpsampleRules), true));
  read_previous(l);
  UpsampleParams p;
  DLR_RETURN_IF_ERROR(get_int(s, "stride", 2, &p.stride));
  if (p.stride < 0)
    return unsupported(at_key(s, "stride") + "a negative stride (downsampling) is not supported by dlrun" +
                       layer_note(l->index));
  if (p.stride == 0) return parse_error(at_key(s, "stride") + "expected stride >= 1" + layer_note(l->index));
  DLR_RETURN_IF_ERROR(get_float(s, "scale", 1.0f, &p.scale));
  const int64_t h = int64_t(l->in.h) * p.stride;
  const int64_t w = int64_t(l->in.w) * p.stride;
  // Ordered so that no product overflows: h, w <= 2^31 before h*w; h*w <= 2^31 before c*h*w.
  if (h > kMaxTensorElements || w > kMaxTensorElements || h * w > kMaxTensorElements ||
      l->in.c * h * w > kMaxTensorElements)
    return parse_error(at_key(s, "stride") + "output would exceed 2^31-1 elements per image" + layer_note(l->index));
  l->out = {l->in.c, static_cast<int>(h), static_cast<int>(w)};
  l->params = p;
  return check_output(s, "stride", *l, "upsample");
}

Status CfgParser::parse_yolo(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kYoloRules), true));
  read_previous(l);
  YoloParams p;
  DLR_RETURN_IF_ERROR(get_int_in(s, "classes", 20, 1, kMaxClasses, &p.classes));
  DLR_RETURN_IF_ERROR(get_int_in(s, "num", 1, 1, kMaxAnchors, &p.total));
  if (const CfgOption* o = s.find("mask")) {
    if (!parse_cfg_int_list(o->value, &p.mask))
      return parse_error(at(s, o) + "expected a comma-separated list of anchor indices");
    for (int m : p.mask)
      if (m < 0 || m >= p.total)
        return parse_error(at(s, o) + "anchor index " + std::to_string(m) + " out of range (expected 0 <= index < num=" +
                           std::to_string(p.total) + ")");
  } else {
    for (int i = 0; i < p.total; ++i) p.mask.push_back(i);
  }
  if (const CfgOption* o = s.find("anchors")) {
    std::vector<float> a;
    if (!parse_cfg_float_list(o->value, &a))
      return parse_error(at(s, o) + "expected a comma-separated list of numbers (w,h pairs)");
    if (a.size() < 2 * size_t(p.total))
      return parse_error(at(s, o) + "expected at least 2*num = " + std::to_string(2 * p.total) + " values, got " +
                         std::to_string(a.size()));
    a.resize(2 * size_t(p.total));  // Darknet reads the first 2*num values
    p.anchors = std::move(a);
  } else {
    p.anchors.assign(2 * size_t(p.total), 0.5f);
  }
  DLR_RETURN_IF_ERROR(get_float(s, "scale_x_y", 1.0f, &p.scale_x_y));
  int new_coords = 0;
  DLR_RETURN_IF_ERROR(get_int(s, "new_coords", 0, &new_coords));
  if (new_coords != 0 && new_coords != 1)
    return unsupported(at_key(s, "new_coords") + "expected 0 or 1");
  p.new_coords = new_coords == 1;
  const CfgOption* nk = s.find("nms_kind");
  const std::string nms = nk ? nk->value : "default";
  if (nms == "greedynms") {
    p.nms_kind = NmsKind::kGreedy;
  } else if (nms == "diounms") {
    p.nms_kind = NmsKind::kDiou;
  } else {
    p.nms_kind = NmsKind::kDefault;
    if (nms != "default")
      m_net.warnings.push_back(at(s, nk) + "unrecognised nms_kind; Darknet uses the default NMS (as does dlrun)");
  }
  DLR_RETURN_IF_ERROR(get_float(s, "beta_nms", 0.6f, &p.beta_nms));
  const int64_t expect_c = int64_t(p.mask.size()) * (int64_t(p.classes) + 5);
  if (l->in.c != expect_c) {
    const CfgOption* key = s.find("classes") ? s.find("classes") : s.find("mask");
    return parse_error(at(s, key) + "the previous layer " + std::to_string(l->index - 1) + " outputs " +
                       std::to_string(l->in.c) + " channels but len(mask)*(classes+5) = " +
                       std::to_string(p.mask.size()) + "*(" + std::to_string(p.classes) + "+5) = " +
                       std::to_string(expect_c) + " (expected filters=" + std::to_string(expect_c) +
                       " in that [convolutional])" + layer_note(l->index));
  }
  l->out = l->in;
  l->params = std::move(p);
  return check_output(s, "classes", *l, "yolo");
}

Status CfgParser::parse_dropout(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kDropoutRules), true));
  read_previous(l);
  DropoutParams p;
  p.probability = 0.2f;  // Darknet's default; identity at inference either way
  if (const CfgOption* o = s.find("probability")) {
    float v = 0;
    if (parse_cfg_float(o->value, &v)) p.probability = v;  // training-only: a bad value is ignored
  }
  l->out = l->in;
  l->params = p;
  return check_output(s, "probability", *l, "dropout");
}

// ---- sections added for issue 9 ----

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

Status CfgParser::parse_avgpool(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, RuleSet{nullptr, 0}, true));
  read_previous(l);
  l->out = {l->in.c, 1, 1};
  l->params = AvgPoolParams{};
  return check_output(s, "", *l, "global average pool");
}

Status CfgParser::parse_scale_channels(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kScaleChannelsRules), true));
  if (l->index == 0) return parse_error(at(s, nullptr) + "[scale_channels] needs a previous layer" + layer_note(0));
  ScaleChannelsParams p;
  DLR_RETURN_IF_ERROR(resolve_one_ref(s, "from", l->index, &p.from));
  int wh = 0;
  DLR_RETURN_IF_ERROR(get_int_in(s, "scale_wh", 0, 0, 1, &wh));
  p.scale_wh = wh != 0;
  DLR_RETURN_IF_ERROR(get_activation(s, "linear", &p.activation));
  if (p.activation == Activation::kSwish || p.activation == Activation::kMish || p.activation == Activation::kHardMish)
    return unsupported(at_key(s, "activation") + "Darknet's [scale_channels] does not apply " +
                       activation_name(p.activation) + " (expected another activation)" + layer_note(l->index));
  read_previous(l);
  const Shape3 from = shape_of(p.from);
  const bool ok = p.scale_wh ? (l->in.c == 1 && l->in.h == from.h && l->in.w == from.w)
                             : (l->in.h == 1 && l->in.w == 1 && l->in.c == from.c);
  if (!ok)
    return parse_error(at_key(s, "from") + "the previous layer outputs " + l->in.to_string() + " and layer " +
                       std::to_string(p.from) + " outputs " + from.to_string() + " (expected " +
                       (p.scale_wh ? "1 x H x W scales for a C x H x W layer" : "C x 1 x 1 scales for a C x H x W layer") +
                       ")" + layer_note(l->index));
  l->inputs.push_back(p.from);
  l->out = from;
  l->params = p;
  return check_output(s, "from", *l, "scale_channels");
}

Status CfgParser::parse_sam(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kSamRules), true));
  if (l->index == 0) return parse_error(at(s, nullptr) + "[sam] needs a previous layer" + layer_note(0));
  SamParams p;
  DLR_RETURN_IF_ERROR(resolve_one_ref(s, "from", l->index, &p.from));
  DLR_RETURN_IF_ERROR(get_activation(s, "linear", &p.activation));
  if (p.activation == Activation::kSwish || p.activation == Activation::kMish || p.activation == Activation::kHardMish)
    return unsupported(at_key(s, "activation") + "Darknet's [sam] does not apply " + activation_name(p.activation) +
                       " (expected another activation)" + layer_note(l->index));
  read_previous(l);
  const Shape3 from = shape_of(p.from);
  if (from != l->in)
    return parse_error(at_key(s, "from") + "layer " + std::to_string(p.from) + " outputs " + from.to_string() +
                       " but the previous layer outputs " + l->in.to_string() + " (expected equal shapes)" +
                       layer_note(l->index));
  l->inputs.push_back(p.from);
  l->out = from;
  l->params = p;
  return check_output(s, "from", *l, "sam");
}

Status CfgParser::parse_reorg(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kReorgRules), true));
  read_previous(l);
  ReorgParams p;
  DLR_RETURN_IF_ERROR(get_int_in(s, "stride", 1, 1, 64, &p.stride));
  const int st = p.stride;
  if (l->in.h % st != 0 || l->in.w % st != 0 || (l->kind == LayerKind::kReorg && l->in.c % (st * st) != 0))
    return parse_error(at_key(s, "stride") + "the input " + l->in.to_string() + " is not divisible by the stride " +
                       std::to_string(st) + " (expected H and W divisible by stride" +
                       (l->kind == LayerKind::kReorg ? std::string(" and C by stride*stride") : std::string()) + ")" +
                       layer_note(l->index));
  const int64_t c = int64_t(l->in.c) * st * st;
  if (c > kMaxTensorElements) return parse_error(at_key(s, "stride") + "too many output channels" + layer_note(l->index));
  l->out = {int(c), l->in.h / st, l->in.w / st};
  l->params = p;
  return check_output(s, "stride", *l, "reorg");
}

Status CfgParser::parse_region(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kRegionRules), true));
  read_previous(l);
  RegionParams p;
  DLR_RETURN_IF_ERROR(get_int_in(s, "classes", 20, 1, kMaxClasses, &p.classes));
  DLR_RETURN_IF_ERROR(get_int_in(s, "coords", 4, 4, 4, &p.coords));
  DLR_RETURN_IF_ERROR(get_int_in(s, "num", 1, 1, kMaxAnchors, &p.num));
  int softmax = 0;
  DLR_RETURN_IF_ERROR(get_int(s, "softmax", 0, &softmax));
  p.softmax = softmax != 0;
  int classfix = 0;
  DLR_RETURN_IF_ERROR(get_int(s, "classfix", 0, &classfix));
  if (classfix == -1)
    return unsupported(at_key(s, "classfix") + "not supported by dlrun (zeroes objectness below 0.5); expected "
                                               "classfix >= 0" + layer_note(l->index));
  DLR_RETURN_IF_ERROR(get_anchors(s, p.num, 0.5f, &p.anchors));
  const int64_t expect_c = int64_t(p.num) * (int64_t(p.classes) + p.coords + 1);
  if (l->in.c != expect_c)
    return parse_error(at(s, s.find("classes") ? s.find("classes") : s.find("num")) + "the previous layer " +
                       std::to_string(l->index - 1) + " outputs " + std::to_string(l->in.c) +
                       " channels but num*(classes+coords+1) = " + std::to_string(p.num) + "*(" +
                       std::to_string(p.classes) + "+" + std::to_string(p.coords) + "+1) = " +
                       std::to_string(expect_c) + " (expected filters=" + std::to_string(expect_c) +
                       " in that [convolutional])" + layer_note(l->index));
  l->out = l->in;
  l->params = std::move(p);
  return check_output(s, "classes", *l, "region");
}

Status CfgParser::parse_gaussian_yolo(const CfgSection& s, LayerDesc* l) {
  DLR_RETURN_IF_ERROR(check_keys(s, rules_of(kGaussianYoloRules), true));
  read_previous(l);
  GaussianYoloParams g;
  YoloParams& p = g.yolo;
  DLR_RETURN_IF_ERROR(get_int_in(s, "classes", 20, 1, kMaxClasses, &p.classes));
  DLR_RETURN_IF_ERROR(get_int_in(s, "num", 1, 1, kMaxAnchors, &p.total));
  DLR_RETURN_IF_ERROR(get_yolo_mask(s, p.total, &p.mask));
  DLR_RETURN_IF_ERROR(get_anchors(s, p.total, 0.5f, &p.anchors));
  DLR_RETURN_IF_ERROR(get_float(s, "scale_x_y", 1.0f, &p.scale_x_y));
  const CfgOption* nk = s.find("nms_kind");
  const std::string nms = nk ? nk->value : "default";
  if (nms == "greedynms") {
    p.nms_kind = NmsKind::kGreedy;
  } else if (nms == "diounms") {
    p.nms_kind = NmsKind::kDiou;
  } else if (nms == "cornersnms") {
    return unsupported(at(s, nk) + "not supported by dlrun (corners NMS); expected default, greedynms or diounms");
  } else {
    p.nms_kind = NmsKind::kDefault;
    if (nms != "default")
      m_net.warnings.push_back(at(s, nk) + "unrecognised nms_kind; Darknet uses the default NMS (as does dlrun)");
  }
  DLR_RETURN_IF_ERROR(get_float(s, "beta_nms", 0.6f, &p.beta_nms));
  const CfgOption* yp = s.find("yolo_point");
  const std::string point = yp ? yp->value : "center";
  g.point = point == "left_top" ? YoloPoint::kLeftTop
                                : point == "right_bottom" ? YoloPoint::kRightBottom : YoloPoint::kCenter;
  const int64_t expect_c = int64_t(p.mask.size()) * (int64_t(p.classes) + 9);
  if (l->in.c != expect_c)
    return parse_error(at(s, s.find("classes") ? s.find("classes") : s.find("mask")) + "the previous layer " +
                       std::to_string(l->index - 1) + " outputs " + std::to_string(l->in.c) +
                       " channels but len(mask)*(classes+9) = " + std::to_string(p.mask.size()) + "*(" +
                       std::to_string(p.classes) + "+9) = " + std::to_string(expect_c) + " (expected filters=" +
                       std::to_string(expect_c) + " in that [convolutional])" + layer_note(l->index));
  l->out = l->in;
  l->params = std::move(g);
  return check_output(s, "classes", *l, "Gaussian_yolo");
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
    const SectionKind* sk = nullptr;
    for (const SectionKind& k : kLayerSections)
      if (s.name == k.name) sk = &k;
    if (sk == nullptr) {
      for (const char* u : kUnsupportedSections)
        if (s.name == u)
          return unsupported(at(s, nullptr) + "section not supported by dlrun (expected one of net, convolutional, "
                                              "maxpool, route, shortcut, upsample, yolo, dropout, avgpool, "
                                              "scale_channels, sam, reorg, reorg3d, region, Gaussian_yolo)");
      return parse_error(at(s, nullptr) + "unknown section (not a Darknet layer type)");
    }
    if (m_net.layers.size() >= size_t(limits::kLayers))
      return parse_error(at(s, nullptr) + "more than " + std::to_string(limits::kLayers) +
                         " layers; expected at most " + std::to_string(limits::kLayers));
    LayerDesc l;
    l.index = static_cast<int>(m_net.layers.size());
    l.kind = sk->kind;
    l.cfg_line = s.line;
    switch (sk->kind) {
      case LayerKind::kConv: DLR_RETURN_IF_ERROR(parse_conv(s, &l)); break;
      case LayerKind::kMaxPool: DLR_RETURN_IF_ERROR(parse_maxpool(s, &l)); break;
      case LayerKind::kRoute: DLR_RETURN_IF_ERROR(parse_route(s, &l)); break;
      case LayerKind::kShortcut: DLR_RETURN_IF_ERROR(parse_shortcut(s, &l)); break;
      case LayerKind::kUpsample: DLR_RETURN_IF_ERROR(parse_upsample(s, &l)); break;
      case LayerKind::kYolo: DLR_RETURN_IF_ERROR(parse_yolo(s, &l)); break;
      case LayerKind::kDropout: DLR_RETURN_IF_ERROR(parse_dropout(s, &l)); break;
      case LayerKind::kAvgPool: DLR_RETURN_IF_ERROR(parse_avgpool(s, &l)); break;
      case LayerKind::kScaleChannels: DLR_RETURN_IF_ERROR(parse_scale_channels(s, &l)); break;
      case LayerKind::kSam: DLR_RETURN_IF_ERROR(parse_sam(s, &l)); break;
      case LayerKind::kReorg:
      case LayerKind::kReorg3d: DLR_RETURN_IF_ERROR(parse_reorg(s, &l)); break;
      case LayerKind::kRegion: DLR_RETURN_IF_ERROR(parse_region(s, &l)); break;
      case LayerKind::kGaussianYolo: DLR_RETURN_IF_ERROR(parse_gaussian_yolo(s, &l)); break;
    }
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

}  // namespace

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
