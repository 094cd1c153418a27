// One row per layer kind: everything the loaders know about a kind, in one place
// (loaders/layer_table_<group>.cpp; the table: layer_table.cpp). The kernel half of
// a kind (its LayerKind, name, params struct, planner role and both backends' entry
// points) is its DLR_OPS line in kernels/op_params.h. docs/architecture.md "Adding an op".
//
// Readers: the cfg parser (sections, keys, parse + shape inference), NetworkDesc
// (FLOPs, the summary line) and the synthetic weights generator (moments of the
// output, head layout). None of them switches on LayerKind.
#pragma once

#include <string>
#include <vector>

#include "loaders/cfg_parser.h"
#include "loaders/network_desc.h"
#include "loaders/synthetic_weights.h"

namespace dlr {

// Mean and variance of act(z) for z ~ N(0, 1) (synthetic_weights.cpp).
struct ActMoments {
  double mean;
  double variance;
};
ActMoments activation_moments(Activation a);

// Layer `src`'s output estimate among `done`; -1 (or out of range): the network input.
inline const SyntheticMoments& synthetic_moments_of(const std::vector<SyntheticMoments>& done,
                                                    const SyntheticMoments& input, int src) {
  if (src < 0 || static_cast<size_t>(src) >= done.size()) return input;
  return done[static_cast<size_t>(src)];
}

// What a row's moments() sees: the layer and the estimates of the layers before it.
struct MomentsIn {
  const LayerDesc& layer;
  const SyntheticMoments& in;  // of the first input (layer.inputs[0], or the previous layer)
  double conv_target;          // pre-activation variance a conv aims at (head or hidden)
  const std::vector<SyntheticMoments>& done;  // layers before this one
  const SyntheticMoments& input;              // the network input's
  // Layer `src`'s output estimate; -1 (or out of range): the network input.
  const SyntheticMoments& of(int src) const { return synthetic_moments_of(done, input, src); }
};

// How a network output lays out its channels, for the conv that feeds it.
struct HeadLayout {
  int anchors = 0;    // anchor blocks
  int entries = 0;    // entries per anchor
  int obj_entry = 4;  // objectness entry within an anchor's entries
};

struct LayerRow {
  LayerKind kind;
  // cfg section names; the first is the canonical one (messages, docs), then aliases.
  const char* sections[3];
  RuleSet keys;  // the section's own keys (the keys every layer takes are the parser's)
  // Reads the keys (already classified against `keys`), sets params, inputs, in and
  // out (shape inference); one-line errors through the parser's helpers.
  Status (*parse)(CfgParser& p, const CfgSection& s, LayerDesc* l);
  // Darknet's share of "Total BFLOPS" (LayerDesc::darknet_bflops); nullptr: 0.
  double (*bflops)(const LayerDesc& l);
  // The summary line after the index column (network_summary), without the newline.
  std::string (*summary)(const LayerDesc& l);
  // Estimated moments of the output (synthetic_moment_estimates; mean resized to out.c after).
  SyntheticMoments (*moments)(const MomentsIn& m);
  // Network outputs only (OpRole::kOutput): the layout the synthetic head conv gets; nullptr otherwise.
  HeadLayout (*head)(const LayerDesc& l);
};

// The row of a kind (every LayerKind has one).
const LayerRow& layer_row(LayerKind kind);
// The row whose sections include `name` (case-sensitive, as Darknet), or nullptr.
const LayerRow* find_layer_section(const std::string& name);

// printf into a std::string (at most 511 characters): the summary lines' format.
std::string strfmt(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace dlr
