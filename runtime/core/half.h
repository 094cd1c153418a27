// IEEE 754 binary16 conversion on the host (no CUDA headers): used to prepare
// fp16 weights at load time. Round-to-nearest-even, matching __float2half_rn.
#pragma once

#include <cstdint>
#include <cstring>

namespace dlr {

uint16_t float_to_half(float f);
float half_to_float(uint16_t h);

}  // namespace dlr
