// What the fault-injection tests share (runtime/core/fault_injection.h).
#pragma once

#include <string>

#include "runtime/core/fault_injection.h"

namespace dlr::test {

// The SITE of a message ending in " [fault injected at SITE]", or "" when it does not.
inline std::string fault_site_of(const std::string& message) {
  const std::string mark = " [fault injected at ";
  const size_t at = message.find(mark);
  if (at == std::string::npos || message.back() != ']') return "";
  return message.substr(at + mark.size(), message.size() - at - mark.size() - 1);
}

// Disarms fault injection when the test leaves its scope, whatever happened.
struct DisarmFaults {
  ~DisarmFaults() { fault::disarm(); }
};

}  // namespace dlr::test
