// Darknet activations (Darknet src/activations.h, src/activations.c), scalar and in-place over arrays.
//
// Formulas, as Darknet's activations.h/.c write them in float:
//   linear    x
//   leaky     x > 0 ? x : .1f*x
//   logistic  1.f/(1.f + expf(-x))
//   relu      x > 0 ? x : 0
//   relu6     min(max(x, 0), 6)
//   elu       x >= 0 ? x : expf(x) - 1
//   selu      x >= 0 ? 1.0507f*x : 1.0507f*1.6732f*(expf(x) - 1)
//   gelu      0.5*x*(1 + tanhf(0.797885*x + 0.035677*x^3))      (double arithmetic, as Darknet)
//   tanh      2/(1 + expf(-2x)) - 1                               (Darknet's tanh_activate)
//   swish     x*logistic(x)
//   mish      x*tanh(softplus(x)) with Darknet's softplus threshold 20: x > 20 ? x :
//             x*n/(n+2), n = e*(e+2), e = expf(x)   (tanh(log(1+e)) = n/(n+2) exactly)
//             This is the cancellation-free form (Darknet's GPU mish_yashas2 computes the
//             same function): Darknet's CPU form 2/(1+expf(-2*sp))-1 loses ~1e-7 absolute
//             near 0. CPU and CUDA backends use this same form (kernels/cuda/activation.cuh).
//   hard_mish x > 0 ? x : x > -2 ? x*x/2 + x : 0
//
// Numerics: logistic, tanh, swish and mish are evaluated 8 floats at a time with
// AVX2/FMA, using a Cephes-style expf/logf (max error ~1 ulp, inputs of expf
// clamped to [-87.34, 88.03], the normal float range of its result) in exactly
// the operation order above; divisions are IEEE divisions. Darknet's own CPU
// build is -Ofast and also uses vectorised approximate expf/logf. activate()
// runs the same code as activate_array(), so the two agree bit for bit.
// elu/selu/gelu (unused by the supported cfgs) use libm scalar functions.
// Inherent to Darknet's tanh formula: tanh near 0 loses relative accuracy through
// 2/(1+e)-1 cancellation (absolute error ~1e-7), as in Darknet.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define DLR_ACT_AVX2 1
#endif

namespace dlr::cpu {

namespace {

// ---- scalar formulas (libm) ----

inline float elu_f(float x) { return x >= 0 ? x : expf(x) - 1; }
inline float selu_f(float x) { return x >= 0 ? 1.0507f * x : 1.0507f * 1.6732f * (expf(x) - 1); }
inline float gelu_f(float x) {
  const double xd = x;
  return float(0.5 * xd * (1 + tanhf(float(0.797885 * xd + 0.035677 * std::pow(xd, 3)))));
}
inline float leaky_f(float x) { return x > 0 ? x : .1f * x; }
inline float relu_f(float x) { return x > 0 ? x : 0.f; }
inline float relu6_f(float x) { return std::min(std::max(x, 0.f), 6.f); }
inline float hard_mish_f(float x) { return x > 0 ? x : (x > -2 ? x * x / 2 + x : 0.f); }

#if DLR_ACT_AVX2

// ---- 8-wide transcendental kernels ----

// expf, Cephes polynomial, ~1 ulp. Input clamped so that 2^n stays a normal float.
inline __m256 exp8(__m256 x) {
  // operand order keeps NaN: max/min return the second operand when one is NaN
  x = _mm256_min_ps(_mm256_set1_ps(88.02969f), _mm256_max_ps(_mm256_set1_ps(-87.33654f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // n*C1 is exact
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 y = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

// logf for positive normal inputs (mish only passes values >= 1), Cephes, ~1 ulp.
inline __m256 log8(__m256 x) {
  const __m256i xi = _mm256_castps_si256(x);
  // x = m * 2^e with m in [0.5, 1)
  __m256 e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(xi, 23), _mm256_set1_epi32(126)));
  const __m256 m = _mm256_castsi256_ps(
      _mm256_or_si256(_mm256_and_si256(xi, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x3f000000)));
  // m < sqrt(0.5): use 2m-1 and e-1, else m-1
  const __m256 small = _mm256_cmp_ps(m, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
  e = _mm256_sub_ps(e, _mm256_and_ps(small, _mm256_set1_ps(1.f)));
  const __m256 t = _mm256_add_ps(_mm256_sub_ps(m, _mm256_set1_ps(1.f)), _mm256_and_ps(small, m));
  const __m256 z = _mm256_mul_ps(t, t);
  __m256 p = _mm256_set1_ps(7.0376836292e-2f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.1514610310e-1f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.1676998740e-1f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.2420140846e-1f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.4249322787e-1f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.6668057665e-1f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(2.0000714765e-1f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-2.4999993993e-1f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(3.3333331174e-1f));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, t), z);
  y = _mm256_fmadd_ps(e, _mm256_set1_ps(-2.12194440e-4f), y);
  y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
  const __m256 r = _mm256_add_ps(t, y);
  return _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), r);
}

inline __m256 logistic8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// Darknet tanh_activate: 2/(1+expf(-2x)) - 1
inline __m256 tanh8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.f);
  const __m256 e = exp8(_mm256_mul_ps(x, _mm256_set1_ps(-2.f)));
  return _mm256_sub_ps(_mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(one, e)), one);
}

inline __m256 swish8(__m256 x) { return _mm256_mul_ps(x, logistic8(x)); }

inline __m256 mish8(__m256 x) {
  const __m256 two = _mm256_set1_ps(2.f);
  const __m256 e = exp8(x);
  const __m256 n = _mm256_mul_ps(e, _mm256_add_ps(e, two));
  const __m256 m = _mm256_div_ps(_mm256_mul_ps(x, n), _mm256_add_ps(n, two));
  return _mm256_blendv_ps(m, x, _mm256_cmp_ps(x, _mm256_set1_ps(20.f), _CMP_GT_OQ));
}

// data[i] = f(data[i] + bias) over n floats; the tail uses masked loads/stores.
template <bool kBias, class F>
inline void map8(float* data, int64_t n, float bias, F f) {
  const __m256 vb = _mm256_set1_ps(bias);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(data + i);
    if (kBias) v = _mm256_add_ps(v, vb);
    _mm256_storeu_ps(data + i, f(v));
  }
  if (i < n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n - i)), lane);
    __m256 v = _mm256_maskload_ps(data + i, mask);
    if (kBias) v = _mm256_add_ps(v, vb);
    _mm256_maskstore_ps(data + i, mask, f(v));
  }
}

inline float lane0(__m256 v) { return _mm256_cvtss_f32(v); }

#else  // portable fallback: the same formulas with libm

inline float logistic_f(float x) { return 1.f / (1.f + expf(-x)); }
inline float tanh_f(float x) { return 2 / (1 + expf(-2 * x)) - 1; }
inline float swish_f(float x) { return x * logistic_f(x); }
inline float mish_f(float x) {
  if (x > 20) return x;
  const float e = expf(x);
  const float n = e * (e + 2);
  return x * n / (n + 2);
}

#endif

// data[i] = f(data[i] + bias) for plain scalar formulas the compiler vectorises.
template <bool kBias, class F>
inline void map_scalar(float* data, int64_t n, float bias, F f) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = kBias ? data[i] + bias : data[i];
    data[i] = f(v);
  }
}

template <bool kBias>
void apply(Activation a, float* data, int64_t n, float bias) {
  switch (a) {
    case Activation::kLinear:
      if (kBias) map_scalar<true>(data, n, bias, [](float x) { return x; });
      return;
    case Activation::kLeaky: map_scalar<kBias>(data, n, bias, leaky_f); return;
    case Activation::kRelu: map_scalar<kBias>(data, n, bias, relu_f); return;
    case Activation::kRelu6: map_scalar<kBias>(data, n, bias, relu6_f); return;
    case Activation::kHardMish: map_scalar<kBias>(data, n, bias, hard_mish_f); return;
    case Activation::kElu: map_scalar<kBias>(data, n, bias, elu_f); return;
    case Activation::kSelu: map_scalar<kBias>(data, n, bias, selu_f); return;
    case Activation::kGelu: map_scalar<kBias>(data, n, bias, gelu_f); return;
#if DLR_ACT_AVX2
    case Activation::kLogistic: map8<kBias>(data, n, bias, logistic8); return;
    case Activation::kTanh: map8<kBias>(data, n, bias, tanh8); return;
    case Activation::kSwish: map8<kBias>(data, n, bias, swish8); return;
    case Activation::kMish: map8<kBias>(data, n, bias, mish8); return;
#else
    case Activation::kLogistic: map_scalar<kBias>(data, n, bias, logistic_f); return;
    case Activation::kTanh: map_scalar<kBias>(data, n, bias, tanh_f); return;
    case Activation::kSwish: map_scalar<kBias>(data, n, bias, swish_f); return;
    case Activation::kMish: map_scalar<kBias>(data, n, bias, mish_f); return;
#endif
  }
  DLR_ASSERT(!"unknown activation");
}

}  // namespace

float activate(Activation a, float x) {
  switch (a) {
    case Activation::kLinear: return x;
    case Activation::kLeaky: return leaky_f(x);
    case Activation::kRelu: return relu_f(x);
    case Activation::kRelu6: return relu6_f(x);
    case Activation::kHardMish: return hard_mish_f(x);
    case Activation::kElu: return elu_f(x);
    case Activation::kSelu: return selu_f(x);
    case Activation::kGelu: return gelu_f(x);
#if DLR_ACT_AVX2
    case Activation::kLogistic: return lane0(logistic8(_mm256_set1_ps(x)));
    case Activation::kTanh: return lane0(tanh8(_mm256_set1_ps(x)));
    case Activation::kSwish: return lane0(swish8(_mm256_set1_ps(x)));
    case Activation::kMish: return lane0(mish8(_mm256_set1_ps(x)));
#else
    case Activation::kLogistic: return logistic_f(x);
    case Activation::kTanh: return tanh_f(x);
    case Activation::kSwish: return swish_f(x);
    case Activation::kMish: return mish_f(x);
#endif
  }
  DLR_ASSERT(!"unknown activation");
  return x;
}

void activate_array(Activation a, float* data, int64_t n) {
  DLR_ASSERT(n >= 0);
  if (n == 0) return;
  DLR_ASSERT(data != nullptr);
  apply<false>(a, data, n, 0.f);
}

void bias_activate_array(Activation a, float bias, float* data, int64_t n) {
  DLR_ASSERT(n >= 0);
  if (n == 0) return;
  DLR_ASSERT(data != nullptr);
  apply<true>(a, data, n, bias);
}

}  // namespace dlr::cpu
