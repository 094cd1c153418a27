// What `dlrun --version` prints: the project version (CMake project()), the git
// commit the binary was built from, and the versions of CUDA, cuDNN and OpenCV
// it was built with, plus the GPU when one is present.
#pragma once

#include <string>

namespace dlr::tools {

const char* build_version();   // "0.1.0"
const char* build_git_hash();  // "abc123def456", "...-dirty" or "unknown" (generated at build time)
// Several lines, each "key: value", the first "dlrun VERSION (git HASH)".
std::string version_text(const std::string& tool);

}  // namespace dlr::tools
