// Byte counts for people: MiB (2^20 bytes) as a number and as text, for reports,
// plans and messages.
#pragma once

#include <cstdint>
#include <string>

namespace dlr {

inline double mib(int64_t bytes) { return double(bytes) / (1024.0 * 1024.0); }
std::string mib_text(int64_t bytes);  // "12.34 MiB"

}  // namespace dlr
