// The .cfg parser's building blocks, for the rows of loaders/layer_table_*.cpp: key
// rules, size limits and CfgParser's helpers (messages in the error format of
// network_desc.h: "NAME:LINE: [section] key=value: what was expected").
// Internal to dlr_loaders: use parse_network_cfg() (network_desc.h) from outside.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loaders/cfg_lexer.h"
#include "loaders/network_desc.h"

namespace dlr {

constexpr int kMaxInputDim = 16384;
constexpr int kMaxFilters = 65536;
constexpr int kMaxClasses = 65536;
constexpr int kMaxAnchors = 65536;
constexpr int64_t kMaxTensorElements = INT32_MAX;  // per image

// Every key of a section is classified before its values are read.
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

struct RuleSet {
  const KeyRule* rules;
  size_t count;
};
template <size_t N>
constexpr RuleSet rules_of(const KeyRule (&r)[N]) {
  return {r, N};
}

class CfgParser {
 public:
  CfgParser(std::string name, const CfgOptions& options) : m_name(std::move(name)), m_options(options) {
    m_net.cfg_path = m_name;
  }

  Expected<NetworkDesc> parse(const std::vector<CfgSection>& sections);

  // ---- helpers for the layer rows (loaders/layer_table_*.cpp) ----
  // "NAME:LINE: [section] key=value: " (or "NAME:LINE: [section]: " without an option).
  std::string at(const CfgSection& s, const CfgOption* o) const {
    if (o == nullptr) return m_name + ":" + std::to_string(s.line) + ": [" + s.name + "]: ";
    return m_name + ":" + std::to_string(o->line) + ": [" + s.name + "] " + o->key + "=" + o->value + ": ";
  }
  std::string at_key(const CfgSection& s, const char* key) const { return at(s, s.find(key)); }
  std::string layer_note(int index) const { return " (this is layer " + std::to_string(index) + ")"; }
  // A non-fatal finding, one line (NetworkDesc::warnings).
  void warn(std::string line) { m_net.warnings.push_back(std::move(line)); }

  Status get_int(const CfgSection& s, const char* key, int def, int* out) const;
  Status get_float(const CfgSection& s, const char* key, float def, float* out) const;
  // Integer key that must satisfy lo <= v <= hi ("expected KEY in LO..HI" / "expected KEY >= LO").
  Status get_int_in(const CfgSection& s, const char* key, int def, int lo, int hi, int* out) const;
  Status get_activation(const CfgSection& s, const char* def, Activation* out) const;
  Status resolve_refs(const CfgSection& s, const char* key, int cur, std::vector<int>* out) const;
  Status resolve_one_ref(const CfgSection& s, const char* key, int cur, int* out) const;
  Status get_anchors(const CfgSection& s, int total, float def, std::vector<float>* out) const;
  Status get_yolo_mask(const CfgSection& s, int total, std::vector<int>* out) const;
  Status check_output(const CfgSection& s, const char* key, const LayerDesc& l, const std::string& how) const;
  Status check_conv_weights(const CfgSection& s, const LayerDesc& l, const ConvParams& p) const;

  // Output shape of layer `index`; -1 is the network input.
  Shape3 shape_of(int index) const {
    return index < 0 ? m_net.input_shape() : m_net.layers[static_cast<size_t>(index)].out;
  }
  // Reads the previous layer (or the network input for layer 0).
  void read_previous(LayerDesc* l) const {
    l->inputs = {l->index - 1};
    l->in = shape_of(l->index - 1);
  }

 private:
  Status check_keys(const CfgSection& s, RuleSet rules, bool layer_section);
  Status check_input_size(const CfgSection& s) const;
  Status check_network_weights() const;
  Status parse_net(const CfgSection& s);

  std::string m_name;
  CfgOptions m_options;
  NetworkDesc m_net;
};

}  // namespace dlr
