#include "runtime/core/half.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define DLR_HALF_F16C 1
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#include <arm_neon.h>
#define DLR_HALF_NEON 1
#endif

namespace dlr {

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan
    return uint16_t(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0u));
  }
  if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (absx < 0x38800000u) {                                   // result is subnormal or zero
    if (absx < 0x33000000u) return uint16_t(sign);            // < 2^-25: rounds to zero
    const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    const int shift = 126 - int(absx >> 23);  // 14..24
    const uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    uint32_t r = q;
    if (rem > halfway || (rem == halfway && (q & 1u))) ++r;
    return uint16_t(sign | r);
  }
  // normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits
  uint32_t h = ((absx - 0x38000000u) >> 13);
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

namespace {

void floats_to_halves_scalar(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_half(src[i]);
}

#ifdef DLR_HALF_F16C
// VCVTPS2PH rounds to nearest even (immediate 0), makes subnormals and infinities as
// float_to_half does and keeps a NaN's sign and top payload bits with the quiet bit
// set, as float_to_half does (tests/runtime/half_test.cpp compares them).
__attribute__((target("avx,f16c"))) void floats_to_halves_f16c(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  floats_to_halves_scalar(src + i, dst + i, n - i);
}

// AVX (with the OS saving its registers, which __builtin_cpu_supports checks) and F16C
// (CPUID leaf 1, ECX bit 29: not every compiler's __builtin_cpu_supports names it).
bool has_f16c() {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
  }();
  return yes;
}
#endif

#ifdef DLR_HALF_NEON
// FCVTN (every aarch64 CPU has it) rounds as FPCR says and, with FPCR's defaults (round
// to nearest even, no flush to zero of fp32 inputs or fp16 results, NaNs propagated
// rather than the default NaN), makes subnormals, infinities and NaNs (sign and top
// payload bits kept, quiet bit set) as float_to_half does (tests/runtime/half_test.cpp
// compares them, under qemu in CI: docs/jetson.md). Those defaults are Linux's; a
// program that changed them (fesetround, flush to zero) gets the scalar path.
void floats_to_halves_neon(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vcvt_high_f16_f32(vcvt_f16_f32(vld1q_f32(src + i)), vld1q_f32(src + i + 4));
    vst1q_u16(dst + i, vreinterpretq_u16_f16(h));
  }
  floats_to_halves_scalar(src + i, dst + i, n - i);
}

// FPCR.RMode (bits 23:22) round to nearest, FZ (24), DN (25) and FZ16 (19) clear.
bool fpcr_is_default() {
  uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  return (fpcr & (uint64_t(3) << 22 | uint64_t(1) << 24 | uint64_t(1) << 25 | uint64_t(1) << 19)) == 0;
}
#endif

}  // namespace

void floats_to_halves(const float* src, uint16_t* dst, int64_t n) {
#ifdef DLR_HALF_F16C
  if (has_f16c()) return floats_to_halves_f16c(src, dst, n);
#endif
#ifdef DLR_HALF_NEON
  if (fpcr_is_default()) return floats_to_halves_neon(src, dst, n);
#endif
  floats_to_halves_scalar(src, dst, n);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      x = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | mant << 13;
  } else {
    x = sign | (exp + 112u) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace dlr
