// Host-only checks of the comparison helpers the GPU tests rely on (they run without
// a device): near_rel must fail on a single outlier that its L2 bound alone accepts,
// and pass noise of the size the H100 runs measured.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

TEST(NearRel, OneElementWrongByTheRmsFails) {
  const HostTensor want = random_tensor(2, {16, 64, 64}, 8, -1.f, 1.f);  // 131072 values
  double sq = 0;
  for (float v : want.data) sq += double(v) * v;
  const double rms = std::sqrt(sq / double(want.data.size()));
  size_t at = 0;  // the element nearest zero
  for (size_t i = 0; i < want.data.size(); ++i)
    if (std::fabs(want.data[i]) < std::fabs(want.data[at])) at = i;
  HostTensor got = want;
  got.data[at] += float(rms);
  // rel L2 = 1/sqrt(131072) = 2.8e-3: inside the tf32/fp16 conv tolerance 5e-3.
  ASSERT_LT(rel_l2(got.data, want.data), 5e-3);
  EXPECT_FALSE(near_rel(got, want, 5e-3, "one outlier"));
}

TEST(NearRel, MeasuredNoiseLevelPasses) {
  // Relative noise 5.8e-4 everywhere (the largest fp16 conv rel error on the H100).
  const HostTensor want = random_tensor(2, {16, 64, 64}, 9, -1.f, 1.f);
  HostTensor got = want;
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.f, 5.8e-4f);
  double sq = 0;
  for (float v : want.data) sq += double(v) * v;
  const float rms = float(std::sqrt(sq / double(want.data.size())));
  for (float& v : got.data) v += n(rng) * rms;
  EXPECT_TRUE(near_rel(got, want, 5e-3, "noise"));
  EXPECT_TRUE(near_rel(want, want, 1e-5, "identical"));
}

}  // namespace
}  // namespace dlr::test
