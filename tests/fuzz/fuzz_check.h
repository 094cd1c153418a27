// Properties every fuzz harness asserts: an error is one printable line, and a
// broken property stops the fuzzer (abort, reported as a crash with its input).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/core/status.h"

namespace dlr::fuzz {

inline void require(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz property violated: %s %s\n", what, detail.c_str());
  std::abort();
}

// A Status message: non-empty, one line, no control characters.
inline void require_one_line(const Status& st) {
  if (st.ok()) return;
  const std::string& m = st.message();
  require(!m.empty(), "empty error message");
  for (char c : m) require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, "control character in message", m);
}

}  // namespace dlr::fuzz
