// What prepared_file.cpp (identity, writing, cache) and prepared_read.cpp (opening,
// verifying, the weight source) share: the format's constants (prepared_file.h has
// the byte table), little-endian encoding and exact reads (the owned descriptor, Fd, is
// posix_fd.h's).
// Private to runtime/storage.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/core/status.h"
#include "runtime/storage/posix_fd.h"
#include "runtime/storage/prepared_file.h"

namespace dlr::prepared_detail {

constexpr char kMagic[8] = {'D', 'L', 'R', 'W', 'P', 'R', 'E', 'P'};
constexpr int64_t kFixedHeader = 72;  // bytes before the blob table
constexpr int64_t kEntryBytes = 40;   // one blob's table entry
constexpr int64_t kCrcField = 12;     // offset of the header CRC32C
constexpr size_t kIoChunk = size_t(8) << 20;  // hashing and verification read this much at a time

inline std::string hex(uint64_t v, int digits) {
  static const char* d = "0123456789abcdef";
  std::string s(size_t(digits), '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) s[size_t(i)] = d[v & 15];
  return s;
}
inline std::string hex32(uint32_t v) { return "0x" + hex(v, 8); }
inline std::string errno_text() { return std::strerror(errno); }

// ---- little-endian encoding ----
inline void put_u16(unsigned char* p, uint16_t v) {
  for (int i = 0; i < 2; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline void put_u32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline void put_u64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline int64_t header_bytes_for(int64_t blobs) { return align_up(kFixedHeader + kEntryBytes * blobs, kPreparedAlign); }

// Reads exactly n bytes at off (retrying short reads and EINTR); errors name `path`.
inline Status pread_all(int fd, void* dst, size_t n, int64_t off, const std::string& path) {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return io_error(path + ": read at offset " + std::to_string(off) + " failed: " + errno_text());
    if (r == 0)
      return io_error(path + ": unexpected end of file at offset " + std::to_string(off) + " (" + std::to_string(n) +
                      " more bytes expected)");
    p += r;
    n -= size_t(r);
    off += r;
  }
  return Status();
}

}  // namespace dlr::prepared_detail
