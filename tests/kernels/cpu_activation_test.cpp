// CPU activations and sgemm against double-precision references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "tests/kernels/cpu_act_ref.h"

namespace dlr {
namespace {

std::vector<float> activation_grid() {
  std::vector<float> xs;
  for (int i = -3000; i <= 3000; ++i) xs.push_back(float(i) * 0.01f);  // [-30, 30] step .01
  for (int i = -100; i <= 100; ++i) xs.push_back(float(i) * 1e-4f);    // around 0
  const float special[] = {0.f,    -0.f,    1e-7f,   -1e-7f,  1e-20f,  -1e-20f, 19.999f, 20.f,   20.001f,
                           -19.999f, -20.f, -20.001f, 21.f,  -21.f,   25.f,    -25.f,   40.f,   -40.f,
                           50.f,   -50.f,   80.f,    -80.f,   87.f,    -87.f,   88.5f,   -88.5f, 89.f,
                           -89.f,  100.f,   -100.f,  1000.f,  -1000.f, 1e6f,    -1e6f,   5.999f, 6.001f,
                           -1.999f, -2.f,   -2.001f};
  xs.insert(xs.end(), std::begin(special), std::end(special));
  return xs;
}

// Absolute error allowed besides rel 1e-6: 1e-7 for most. Three of Darknet's float
// formulas cancel near the result's zero, so their own rounding (libm or ours) is
// ~1-2 ulp of the unit-scale inner term times the outer factor; the bound follows:
//   tanh 2/(1+e)-1: ~1.3e-7 measured; selu 1.7583*(expf(x)-1): ~1.7e-7;
//   mish x*n/(n+2) has no cancellation (bound kept from the old form); gelu 0.5x(1+tanhf(..)): |x| * ~1e-7.
// (The same formulas with glibc expf/logf show the same errors: tanh 1.7e-7, mish 2e-7.)
double abs_tolerance(Activation a, double x) {
  const double ax = std::max(1.0, std::fabs(x));
  switch (a) {
    case Activation::kTanh: return 2.5e-7;
    case Activation::kSelu: return 2.5e-7;
    case Activation::kMish: return 2.5e-7 * ax;
    case Activation::kGelu: return 1.5e-7 * ax;
    default: return 1e-7;
  }
}

TEST(CpuActivation, GridMatchesDoubleFormula) {
  const std::vector<float> xs = activation_grid();
  for (Activation a : test::all_activations()) {
    std::vector<float> arr = xs;
    cpu::activate_array(a, arr.data(), int64_t(arr.size()));
    double worst_rel = 0, worst_abs = 0;
    int failures = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const float x = xs[i];
      const float got = cpu::activate(a, x);
      // activate() and activate_array() run the same code: bitwise equal.
      ASSERT_TRUE(got == arr[i] || (std::isnan(got) && std::isnan(arr[i])))
          << activation_name(a) << " x=" << x << " scalar " << got << " array " << arr[i];
      const double ref = test::activation_ref(a, x);
      const double err = std::fabs(double(got) - ref);
      const bool ok = err <= 1e-6 * std::fabs(ref) || err <= abs_tolerance(a, x);
      if (!ok && ++failures <= 5) {
        ADD_FAILURE() << activation_name(a) << " x=" << x << " got " << got << " ref " << ref << " err " << err;
      }
      if (std::fabs(ref) > 1e-3) worst_rel = std::max(worst_rel, err / std::fabs(ref));
      worst_abs = std::max(worst_abs, err / std::max(1.0, std::fabs(double(x))));
    }
    EXPECT_EQ(failures, 0) << activation_name(a);
    std::printf("  %-10s max rel err (|ref|>1e-3) %.2e, max abs err/max(1,|x|) %.2e\n", activation_name(a),
                worst_rel, worst_abs);
  }
}

TEST(CpuActivation, ExactCases) {
  EXPECT_EQ(cpu::activate(Activation::kLeaky, -2.f), .1f * -2.f);
  EXPECT_EQ(cpu::activate(Activation::kLeaky, 3.f), 3.f);
  EXPECT_EQ(cpu::activate(Activation::kRelu6, 7.f), 6.f);
  EXPECT_EQ(cpu::activate(Activation::kRelu, -1.f), 0.f);
  EXPECT_EQ(cpu::activate(Activation::kHardMish, -3.f), 0.f);
  EXPECT_EQ(cpu::activate(Activation::kLinear, -3.5f), -3.5f);
  EXPECT_EQ(cpu::activate(Activation::kMish, 30.f), 30.f);  // softplus(x>20) = x, tanh(30) = 1
  EXPECT_EQ(cpu::activate(Activation::kLogistic, 0.f), 0.5f);
  EXPECT_EQ(cpu::activate(Activation::kLogistic, 100.f), 1.f);
  EXPECT_EQ(cpu::activate(Activation::kTanh, -100.f), -1.f);
  EXPECT_TRUE(std::isnan(cpu::activate(Activation::kMish, std::nanf(""))));
}

TEST(CpuActivation, ArrayTailsAndBias) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-8.f, 8.f);
  for (Activation a : test::all_activations()) {
    for (int n : {1, 3, 7, 8, 9, 15, 16, 17, 33}) {
      std::vector<float> v(size_t(n) + 2);
      for (float& x : v) x = d(rng);
      const float bias = d(rng);
      std::vector<float> plain = v, biased = v;
      cpu::activate_array(a, plain.data() + 1, n);
      cpu::bias_activate_array(a, bias, biased.data() + 1, n);
      EXPECT_EQ(plain[0], v[0]);  // neighbours untouched
      EXPECT_EQ(plain[size_t(n) + 1], v[size_t(n) + 1]);
      EXPECT_EQ(biased[size_t(n) + 1], v[size_t(n) + 1]);
      for (int i = 1; i <= n; ++i) {
        EXPECT_EQ(plain[size_t(i)], cpu::activate(a, v[size_t(i)])) << activation_name(a) << " n=" << n;
        EXPECT_EQ(biased[size_t(i)], cpu::activate(a, v[size_t(i)] + bias)) << activation_name(a) << " n=" << n;
      }
    }
  }
}

TEST(CpuGemm, MatchesDoubleReference) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  struct Case { int m, n, k, pad; bool acc; };
  const Case cases[] = {{1, 1, 1, 0, false}, {7, 13, 5, 3, false}, {64, 169, 288, 0, false}, {33, 50, 17, 5, true},
                        {128, 100, 1, 2, true}, {5, 1000, 64, 1, false}, {3, 4, 0, 0, false}, {3, 4, 0, 1, true}};
  for (const Case& c : cases) {
    const int lda = c.k + c.pad, ldb = c.n + c.pad, ldc = c.n + 2 * c.pad;
    std::vector<float> a(size_t(c.m) * lda), b(size_t(std::max(c.k, 1)) * ldb), y(size_t(c.m) * ldc);
    for (float& v : a) v = d(rng);
    for (float& v : b) v = d(rng);
    for (float& v : y) v = d(rng);
    const std::vector<float> y0 = y;
    cpu::sgemm(c.m, c.n, c.k, a.data(), lda, b.data(), ldb, y.data(), ldc, c.acc);
    double num = 0, den = 0;
    for (int i = 0; i < c.m; ++i) {
      for (int j = 0; j < ldc; ++j) {
        const size_t o = size_t(i) * ldc + size_t(j);
        if (j >= c.n) {
          EXPECT_EQ(y[o], y0[o]) << "wrote past n";
          continue;
        }
        double s = c.acc ? double(y0[o]) : 0.0;
        for (int p = 0; p < c.k; ++p) s += double(a[size_t(i) * lda + size_t(p)]) * b[size_t(p) * ldb + size_t(j)];
        num += (y[o] - s) * (y[o] - s);
        den += s * s;
      }
    }
    if (den > 0) {
      EXPECT_LE(std::sqrt(num / den), 1e-5) << c.m << "x" << c.n << "x" << c.k;
    } else {
      EXPECT_EQ(num, 0.0);
    }
  }
}

}  // namespace
}  // namespace dlr
