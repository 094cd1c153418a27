// Files a dlbench run writes for itself (synthetic weights), removed when it ends.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace dlr::tools {

struct TempFiles {
  std::vector<std::string> paths;
  TempFiles() = default;
  TempFiles(const TempFiles&) = delete;
  TempFiles& operator=(const TempFiles&) = delete;
  ~TempFiles() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
};

}  // namespace dlr::tools
