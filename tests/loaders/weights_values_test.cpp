// Weight values checked at preparation (docs/reliability.md, refused vs warned):
// each refusal names the file, layer, cfg line, blob role and element.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loaders/prepare.h"
#include "loaders/synthetic_weights.h"
#include "tests/loaders/weights_test_util.h"

namespace dlr {
namespace {

// small_net() payload offsets (weights_test_util.h): layer 0 has bias 0..3, scale
// 4..7, mean 8..11, variance 12..15, weights 16..123; layer 1 (no BN) bias 0..5,
// weights 6..17.
struct Prepared {
  Status status;
  std::vector<std::string> warnings;
};

struct Edit {
  size_t part, i;
  float v;
};

// Writes small_net's payload with floats[part][i] = v for each edit and prepares `layer`.
Prepared prepare_edited(const std::vector<Edit>& edits, int layer, const std::string& name) {
  auto floats = test::small_net_floats();
  for (const Edit& e : edits) floats[e.part][e.i] = e.v;
  const std::string path = test::tmp_path(name);
  EXPECT_TRUE(write_weights_file(path, WeightsHeader{}, floats).ok());
  const NetworkDesc net = test::small_net();
  Expected<WeightsFile> f = WeightsFile::open(path, net);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  const PreparedSizes s = prepared_sizes(net.layers[size_t(layer)]);
  std::vector<float> w(size_t(s.weights)), b(size_t(s.bias));
  Prepared p;
  p.status = prepare_conv(net.layers[size_t(layer)], *f, w.data(), b.data(), &p.warnings);
  return p;
}

Prepared prepare_with(size_t part, size_t i, float v, int layer, const std::string& name) {
  return prepare_edited({{part, i, v}}, layer, name);
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(WeightValues, NonFiniteValuesAreRefusedWithTheirRole) {
  struct Case {
    size_t part, i;
    float v;
    int layer;
    std::string want;
  };
  const Case cases[] = {
      {0, 21, kNaN, 0, "weights[5] is nan"},
      {0, 2, kInf, 0, "biases[2] is inf"},
      {0, 5, -kInf, 0, "batch-norm scales[1] is -inf"},
      {0, 11, kNaN, 0, "batch-norm means[3] is nan"},
      {0, 12, kInf, 0, "batch-norm variances[0] is inf"},
      {1, 3, kNaN, 1, "biases[3] is nan"},
      {1, 17, -kInf, 1, "weights[11] is -inf"},
  };
  for (const Case& c : cases) {
    const std::string name = "nonfinite_" + std::to_string(c.part) + "_" + std::to_string(c.i) + ".weights";
    const Prepared p = prepare_with(c.part, c.i, c.v, c.layer, name);
    EXPECT_EQ(p.status.code(), StatusCode::kParseError) << c.want;
    const std::string line = c.layer == 0 ? "10" : "20";
    EXPECT_EQ(p.status.message(), test::tmp_path(name) + ": layer " + std::to_string(c.layer) + " (conv, cfg line " +
                                      line + "): " + c.want + "; expected finite values");
  }
}

TEST(WeightValues, NegativeVarianceIsRefusedWhereTheFoldHasNoRealRoot) {
  const Prepared p = prepare_with(0, 13, -0.5f, 0, "negvar.weights");
  EXPECT_EQ(p.status.code(), StatusCode::kParseError);
  EXPECT_EQ(p.status.message(), test::tmp_path("negvar.weights") +
                                    ": layer 0 (conv, cfg line 10): batch-norm variances[1] is -0.5: the fold takes "
                                    "sqrt(variance + 0.00001); expected variance >= 0");
  // Just below -0.00001 (in double, as the fold computes): refused; float(-0.00001) itself
  // is 2.5e-14 above it, so Darknet's fold is finite and it is only warned about.
  EXPECT_FALSE(prepare_with(0, 13, -1.01e-5f, 0, "negvar_eps.weights").status.ok());
  const Prepared edge = prepare_with(0, 13, -1e-5f, 0, "negvar_edge.weights");
  EXPECT_TRUE(edge.status.ok()) << edge.status.to_string();
  EXPECT_EQ(edge.warnings.size(), 1u);
}

TEST(WeightValues, SlightlyNegativeVarianceIsAWarning) {
  const Prepared p = prepare_with(0, 14, -1e-6f, 0, "tinyneg.weights");
  ASSERT_TRUE(p.status.ok()) << p.status.to_string();
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_EQ(p.warnings[0], test::tmp_path("tinyneg.weights") +
                               ": layer 0 (conv, cfg line 10): batch-norm variances[2] is -1e-06 (negative; Darknet's "
                               "fold still computes with it)");
}

TEST(WeightValues, FoldThatOverflowsFloatIsRefused) {
  // scale 3e38 / sqrt(variance 0 + 0.00001) ~ 9.5e40: filter 0's folded bias and weights are Inf.
  const Prepared p = prepare_edited({{0, 4, 3e38f}, {0, 12, 0.0f}}, 0, "foldinf.weights");
  EXPECT_EQ(p.status.code(), StatusCode::kParseError);
  EXPECT_EQ(p.status.message(), test::tmp_path("foldinf.weights") +
                                    ": layer 0 (conv, cfg line 10): the batch-norm fold of filter 0 overflows float "
                                    "(scale 3e+38, mean 0.009, variance 0); expected finite values");
}

TEST(WeightValues, HugeFiniteValuesAreAWarning) {
  const Prepared p = prepare_with(1, 8, 3e38f, 1, "huge.weights");
  ASSERT_TRUE(p.status.ok()) << p.status.to_string();
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_EQ(p.warnings[0], test::tmp_path("huge.weights") +
                               ": layer 1 (conv, cfg line 20): prepared weights reach 3e+38 in magnitude (above 1e+06; "
                               "real models stay far below): outputs may overflow");
  // Ordinary values: no warning.
  const Prepared q = prepare_with(1, 8, 0.5f, 1, "plain.weights");
  ASSERT_TRUE(q.status.ok());
  EXPECT_TRUE(q.warnings.empty());
}

TEST(WeightValues, Fp16RangeIsChecked) {
  const LayerDesc l = test::make_conv(3, 40, {2, 4, 4}, 2, 1, 1, false, Activation::kLinear);
  std::vector<float> w = {1.0f, -65504.0f, 2.0f, 3.0f};
  EXPECT_TRUE(check_fp16_range(l, "f.weights", w.data()).ok());
  w[2] = -70000.0f;
  const Status st = check_fp16_range(l, "f.weights", w.data());
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_EQ(st.message(), "f.weights: layer 3 (conv, cfg line 40): prepared weights[2] is -70000, beyond fp16's largest "
                          "value 65504; expected fp32 or tf32 precision for these weights");
}

}  // namespace
}  // namespace dlr
