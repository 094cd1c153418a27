#include "runtime/storage/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <nmmintrin.h>
#define DLR_CRC32C_X86 1
#elif defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#define DLR_CRC32C_ARM 1
#endif

namespace dlr {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

using Tables = std::array<std::array<uint32_t, 256>, 8>;

Tables make_tables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i)
    for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  return t;
}

const Tables& tables() {
  static const Tables t = make_tables();
  return t;
}

// Raw (not inverted) table update.
uint32_t update_table(uint32_t c, const unsigned char* p, size_t n) {
  const Tables& t = tables();
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian hosts only (x86-64, aarch64): the file format is little-endian too
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][hi & 0xFF] ^
        t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
  return c;
}

#if DLR_CRC32C_X86
// Multiplication of two polynomials modulo the CRC polynomial, in the reflected bit
// order CRCs use (bit 31 is x^0). Linearity of the CRC then gives, for raw (not
// inverted) CRC states: state after A then B = times_x8n(state after A, |B|) ^ raw CRC
// of B from state 0, with times_x8n(s, n) = s * x^(8n) mod P.
uint32_t multiply_mod_p(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
    if (a & bit) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;  // b *= x
  }
  return product;
}

// x^(8n) mod P, reflected.
uint32_t x_to_8n(size_t n) {
  uint32_t v = 1u << 31;  // x^0
  for (size_t i = 0; i < 8 * n; ++i) v = (v & 1) ? (v >> 1) ^ kPoly : v >> 1;
  return v;
}

// The instruction has a 3-cycle latency and a 1-cycle throughput, so one dependent
// chain runs at a third of the possible speed: blocks of 3 x kLane bytes run as three
// independent chains joined with multiply_mod_p (two multiplications per block).
constexpr size_t kLane = 4096;

__attribute__((target("sse4.2"))) uint32_t update_sse42_chain(uint64_t c, const unsigned char* p, size_t n) {
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = uint32_t(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

__attribute__((target("sse4.2"))) uint32_t update_sse42(uint32_t c, const unsigned char* p, size_t n) {
  static const uint32_t shift_lane = x_to_8n(kLane);
  while (n >= 3 * kLane) {
    uint64_t a = c, b = 0, d = 0;
    const unsigned char* pa = p;
    const unsigned char* pb = p + kLane;
    const unsigned char* pd = p + 2 * kLane;
    for (size_t i = 0; i < kLane; i += 8) {
      uint64_t va, vb, vd;
      std::memcpy(&va, pa + i, 8);
      std::memcpy(&vb, pb + i, 8);
      std::memcpy(&vd, pd + i, 8);
      a = _mm_crc32_u64(a, va);
      b = _mm_crc32_u64(b, vb);
      d = _mm_crc32_u64(d, vd);
    }
    c = multiply_mod_p(shift_lane, multiply_mod_p(shift_lane, uint32_t(a)) ^ uint32_t(b)) ^ uint32_t(d);
    p += 3 * kLane;
    n -= 3 * kLane;
  }
  return update_sse42_chain(c, p, n);
}

bool have_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

#if DLR_CRC32C_ARM
uint32_t update_arm(uint32_t c, const unsigned char* p, size_t n) {
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __crc32cd(c, v);
    p += 8;
    n -= 8;
  }
  while (n--) c = __crc32cb(c, *p++);
  return c;
}
#endif

}  // namespace

uint32_t crc32c_portable(const void* data, size_t bytes, uint32_t seed) {
  return ~update_table(~seed, static_cast<const unsigned char*>(data), bytes);
}

uint32_t crc32c(const void* data, size_t bytes, uint32_t seed) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
#if DLR_CRC32C_X86
  if (have_sse42()) return ~update_sse42(~seed, p, bytes);
#elif DLR_CRC32C_ARM
  return ~update_arm(~seed, p, bytes);
#endif
  return ~update_table(~seed, p, bytes);
}

namespace {
#if DLR_CRC32C_X86
uint32_t crc32c_sse42_one_chain(const void* data, size_t bytes, uint32_t seed) {
  return ~update_sse42_chain(~seed, static_cast<const unsigned char*>(data), bytes);
}
uint32_t crc32c_sse42_three_chains(const void* data, size_t bytes, uint32_t seed) {
  return ~update_sse42(~seed, static_cast<const unsigned char*>(data), bytes);
}
#endif
#if DLR_CRC32C_ARM
uint32_t crc32c_arm(const void* data, size_t bytes, uint32_t seed) {
  return ~update_arm(~seed, static_cast<const unsigned char*>(data), bytes);
}
#endif
}  // namespace

std::vector<Crc32cImpl> crc32c_implementations() {
  std::vector<Crc32cImpl> v{{"table", &crc32c_portable}};
#if DLR_CRC32C_X86
  if (have_sse42()) {
    v.push_back({"sse4.2-1x", &crc32c_sse42_one_chain});
    v.push_back({"sse4.2", &crc32c_sse42_three_chains});
  }
#elif DLR_CRC32C_ARM
  v.push_back({"armv8-crc", &crc32c_arm});
#endif
  return v;
}

const char* crc32c_implementation() {
#if DLR_CRC32C_X86
  if (have_sse42()) return "sse4.2";
#elif DLR_CRC32C_ARM
  return "armv8-crc";
#endif
  return "table";
}

}  // namespace dlr
