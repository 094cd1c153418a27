#include "tools/common/model_specs.h"

#include <cstdlib>
#include <map>
#include <sstream>

namespace dlr::tools {

Expected<ModelSpec> parse_model_spec(const std::string& text, const std::string& option) {
  std::string item = text;
  ModelSpec s;
  const size_t at = item.rfind('@');
  if (at != std::string::npos) {
    const std::string size = item.substr(at + 1);
    char* end = nullptr;
    const long v = std::strtol(size.c_str(), &end, 10);
    if (size.empty() || *end != '\0' || v < 32 || v > 8192 || v % 32 != 0)
      return invalid_argument(option + " " + text + ": the size after @ must be a multiple of 32 from 32 to 8192");
    s.size = int(v);
    item = item.substr(0, at);
  }
  const size_t colon = item.find(':');
  s.cfg = item.substr(0, colon);
  if (colon != std::string::npos) s.weights = item.substr(colon + 1);
  if (s.cfg.empty()) return invalid_argument(option + " \"" + text + "\": expected CFG[:WEIGHTS][@SIZE]");
  s.synthetic = s.weights.empty();
  const size_t slash = s.cfg.find_last_of('/');
  s.name = (slash == std::string::npos ? s.cfg : s.cfg.substr(slash + 1));
  if (s.name.size() > 4 && s.name.substr(s.name.size() - 4) == ".cfg") s.name.resize(s.name.size() - 4);
  if (s.size) s.name += "@" + std::to_string(s.size);
  return s;
}

Expected<std::vector<ModelSpec>> parse_model_specs(const std::string& text, const std::string& option) {
  std::vector<ModelSpec> specs;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    DLR_ASSIGN_OR_RETURN(ModelSpec s, parse_model_spec(item, option));
    specs.push_back(s);
  }
  if (specs.empty()) return invalid_argument(option + ": expected CFG[:WEIGHTS][@SIZE],...");
  return specs;
}

void make_names_unique(std::vector<ModelSpec>* specs) {
  std::map<std::string, int> seen;
  for (ModelSpec& s : *specs) {
    const int n = ++seen[s.name];
    if (n > 1) s.name += "#" + std::to_string(n);
  }
}

}  // namespace dlr::tools
