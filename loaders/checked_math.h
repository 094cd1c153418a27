// Saturating int64 arithmetic for sizes derived from untrusted counts: a
// product or sum that does not fit saturates at INT64_MAX instead of wrapping,
// so a limit check after it cannot be fooled. Inputs must be >= 0.
#pragma once

#include <cstdint>

namespace dlr {

inline int64_t mul_sat(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

inline int64_t add_sat(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

}  // namespace dlr
