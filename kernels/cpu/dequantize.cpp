// dequantize_weights (cpu_ops.h): int8 weights with one f32 scale per filter row -> f32.
#include <cstdint>

#include "kernels/cpu/cpu_ops.h"

namespace dlr::cpu {

void dequantize_weights(const int8_t* src, const float* scales, int64_t filters, int64_t row, float* dst,
                        int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && filters * row > (int64_t(1) << 16))
  for (int64_t f = 0; f < filters; ++f) {
    const float s = scales[f];
    const int8_t* q = src + f * row;
    float* out = dst + f * row;
    for (int64_t i = 0; i < row; ++i) out[i] = float(q[i]) * s;
  }
}

}  // namespace dlr::cpu
