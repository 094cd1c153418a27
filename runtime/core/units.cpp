#include "runtime/core/units.h"

#include <cstdio>

namespace dlr {

std::string mib_text(int64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.2f MiB", mib(bytes));
  return buf;
}

}  // namespace dlr
