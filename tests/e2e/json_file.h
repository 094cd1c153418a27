// Reads a JSON file a tool wrote; a missing or malformed file gives a discarded value
// (json::is_discarded()), never an exception.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace dlr::test {

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

}  // namespace dlr::test
