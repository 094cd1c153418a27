// Double-precision references of Darknet's activation formulas (DARKNET.md section 2)
// for the CPU op tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/core/types.h"

namespace dlr::test {

inline std::vector<Activation> all_activations() {
  return {Activation::kLinear, Activation::kLeaky, Activation::kLogistic, Activation::kRelu,
          Activation::kRelu6,  Activation::kElu,   Activation::kSelu,     Activation::kGelu,
          Activation::kTanh,   Activation::kSwish, Activation::kMish,     Activation::kHardMish};
}

inline double logistic_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Darknet's formulas evaluated in double (constants as Darknet writes them).
inline double activation_ref(Activation a, double x) {
  switch (a) {
    case Activation::kLinear: return x;
    case Activation::kLeaky: return x > 0 ? x : double(.1f) * x;
    case Activation::kLogistic: return logistic_ref(x);
    case Activation::kRelu: return x > 0 ? x : 0.0;
    case Activation::kRelu6: return std::min(std::max(x, 0.0), 6.0);
    case Activation::kElu: return x >= 0 ? x : std::exp(x) - 1;
    case Activation::kSelu: return x >= 0 ? 1.0507 * x : 1.0507 * 1.6732 * (std::exp(x) - 1);
    case Activation::kGelu: return 0.5 * x * (1 + std::tanh(0.797885 * x + 0.035677 * x * x * x));
    case Activation::kTanh: return std::tanh(x);
    case Activation::kSwish: return x * logistic_ref(x);
    case Activation::kMish: {
      const double sp = x > 20 ? x : (x < -20 ? std::exp(x) : std::log1p(std::exp(x)));
      return x * std::tanh(sp);
    }
    case Activation::kHardMish: return x > 0 ? x : (x > -2 ? x * x / 2 + x : 0.0);
  }
  return x;
}

}  // namespace dlr::test
