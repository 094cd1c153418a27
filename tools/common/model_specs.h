// Model specs on the command line, CFG[:WEIGHTS][@SIZE]: dlbench --models (a
// comma-separated list) and dlrun --model (one per option). Errors are one line
// naming the option and what it expects.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/status.h"

namespace dlr::tools {

struct ModelSpec {
  std::string cfg, weights;  // weights: "" when the spec gives none
  std::string name;          // the cfg's base name without .cfg, "@SIZE" added when given
  int size = 0;              // @SIZE: network width and height (multiple of 32); 0: the cfg's
  bool synthetic = false;    // no WEIGHTS in the spec
};

// One CFG[:WEIGHTS][@SIZE]; `option` names the option in errors (e.g. "--model").
Expected<ModelSpec> parse_model_spec(const std::string& text, const std::string& option);
// Comma-separated specs (at least one); `option` as above.
Expected<std::vector<ModelSpec>> parse_model_specs(const std::string& text, const std::string& option);
// Names unique among `specs`: the second and later models of one name get "#2", "#3", ...
void make_names_unique(std::vector<ModelSpec>* specs);

}  // namespace dlr::tools
