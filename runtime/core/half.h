// IEEE 754 binary16 conversion on the host (no CUDA headers): used to prepare
// fp16 weights at load time. Round-to-nearest-even, matching __float2half_rn.
#pragma once

#include <cstdint>
#include <cstring>

namespace dlr {

uint16_t float_to_half(float f);
// n floats -> n halves, each exactly float_to_half's: with the CPU's conversion
// instructions where it has them (x86-64 F16C, chosen at run time; aarch64 NEON, under
// FPCR's default modes), else one by one.
void floats_to_halves(const float* src, uint16_t* dst, int64_t n);
float half_to_float(uint16_t h);

}  // namespace dlr
