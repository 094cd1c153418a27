// Batch-norm folding (exactly Darknet's fuse_conv_batchnorm) and prepare_conv on a written file.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "loaders/prepare.h"
#include "loaders/synthetic_weights.h"
#include "tests/loaders/weights_test_util.h"

namespace dlr {
namespace {

struct RawConv {
  std::vector<float> bias, scale, mean, var, weights;
};

RawConv random_conv(const LayerDesc& l, uint32_t seed) {
  std::mt19937 rng(seed);  // test data only; values need not match across machines
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), pos(0.01f, 3.0f);
  RawConv r;
  const size_t n = static_cast<size_t>(l.bias_count());
  r.bias.resize(n);
  r.scale.resize(n);
  r.mean.resize(n);
  r.var.resize(n);
  r.weights.resize(static_cast<size_t>(l.weight_count()));
  for (float& v : r.bias) v = u(rng);
  for (float& v : r.scale) v = 2 * u(rng);
  for (float& v : r.mean) v = u(rng);
  for (float& v : r.var) v = pos(rng);
  for (float& v : r.weights) v = u(rng);
  r.var[0] = 0.0f;  // eps matters here: sqrt(0 + 1e-5)
  return r;
}

TEST(PrepareConv, PreparedSizes) {
  const NetworkDesc net = test::small_net();
  EXPECT_EQ(prepared_sizes(net.layers[0]).weights, 108);
  EXPECT_EQ(prepared_sizes(net.layers[0]).bias, 4);
  EXPECT_EQ(prepared_sizes(net.layers[1]).weights, 12);  // groups=2: 6 * (4/2) * 1 * 1
  EXPECT_EQ(prepared_sizes(net.layers[1]).total(), 18);
  EXPECT_EQ(prepared_sizes(net.layers[2]).total(), 0);  // maxpool
  EXPECT_EQ(prepared_sizes(net.layers[6]).total(), 0);  // yolo
}

// Darknet's formula, written out independently, per element.
TEST(FoldBatchnorm, MatchesDarknetFormulaBitForBit) {
  const LayerDesc l = test::make_conv(0, 1, {6, 8, 8}, 5, 3, 3, true, Activation::kLeaky);
  const RawConv r = random_conv(l, 7);
  std::vector<float> w(r.weights.size()), b(r.bias.size());
  fold_batchnorm(l, r.bias.data(), r.scale.data(), r.mean.data(), r.var.data(), r.weights.data(), w.data(), b.data());
  const size_t per_filter = r.weights.size() / r.bias.size();
  ASSERT_EQ(per_filter, 2u * 3 * 3);
  for (size_t f = 0; f < r.bias.size(); ++f) {
    const double sd = std::sqrt(double(r.var[f]) + 1e-5);
    const float want_b = float(double(r.bias[f]) - double(r.scale[f]) * double(r.mean[f]) / sd);
    EXPECT_EQ(b[f], want_b) << "filter " << f;
    const double k = double(r.scale[f]) / sd;
    for (size_t i = 0; i < per_filter; ++i) {
      const size_t idx = f * per_filter + i;
      EXPECT_EQ(w[idx], float(double(r.weights[idx]) * k)) << "filter " << f << " i " << i;
    }
  }
}

// Folded conv + bias equals conv followed by inference BN, computed in double.
TEST(FoldBatchnorm, EqualsConvThenBatchnorm) {
  const LayerDesc l = test::make_conv(0, 1, {4, 8, 8}, 3, 3, 1, true, Activation::kLinear);
  const RawConv r = random_conv(l, 11);
  std::vector<float> w(r.weights.size()), b(r.bias.size());
  fold_batchnorm(l, r.bias.data(), r.scale.data(), r.mean.data(), r.var.data(), r.weights.data(), w.data(), b.data());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const size_t per_filter = r.weights.size() / r.bias.size();
  std::vector<float> x(per_filter);
  for (float& v : x) v = u(rng);
  for (size_t f = 0; f < r.bias.size(); ++f) {
    double conv = 0, fused = 0, magnitude = std::fabs(b[f]);
    for (size_t i = 0; i < per_filter; ++i) {
      conv += double(r.weights[f * per_filter + i]) * x[i];
      fused += double(w[f * per_filter + i]) * x[i];
      magnitude += std::fabs(double(w[f * per_filter + i]) * x[i]);
    }
    fused += b[f];
    const double bn = (conv - r.mean[f]) / std::sqrt(double(r.var[f]) + 1e-5) * r.scale[f] + r.bias[f];
    // Each folded float carries at most half an ulp (2^-24 relative) of rounding.
    EXPECT_NEAR(fused, bn, 1.2e-7 * magnitude + 1e-12) << "filter " << f;
  }
}

TEST(FoldBatchnorm, WithoutBatchnormCopies) {
  const LayerDesc l = test::make_conv(0, 1, {4, 8, 8}, 3, 1, 1, false, Activation::kLinear);
  const RawConv r = random_conv(l, 5);
  std::vector<float> w(r.weights.size(), -1), b(r.bias.size(), -1);
  fold_batchnorm(l, r.bias.data(), nullptr, nullptr, nullptr, r.weights.data(), w.data(), b.data());
  EXPECT_EQ(w, r.weights);
  EXPECT_EQ(b, r.bias);
}

TEST(PrepareConv, FromAWrittenFile) {
  const NetworkDesc net = test::small_net();
  const auto floats = test::small_net_floats();
  const std::string path = test::tmp_path("prepare.weights");
  ASSERT_TRUE(write_weights_file(path, WeightsHeader{}, floats).ok());
  Expected<WeightsFile> f = WeightsFile::open(path, net);
  ASSERT_TRUE(f.ok()) << f.status().to_string();

  // Layer 0 (BN): compare with fold_batchnorm on the raw arrays.
  {
    const std::vector<float>& raw = floats[0];
    const PreparedSizes s = prepared_sizes(net.layers[0]);
    std::vector<float> w(static_cast<size_t>(s.weights)), b(static_cast<size_t>(s.bias));
    ASSERT_TRUE(prepare_conv(net.layers[0], *f, w.data(), b.data()).ok());
    std::vector<float> rw(w.size()), rb(b.size());
    fold_batchnorm(net.layers[0], raw.data(), raw.data() + 4, raw.data() + 8, raw.data() + 12, raw.data() + 16,
                   rw.data(), rb.data());
    EXPECT_EQ(w, rw);
    EXPECT_EQ(b, rb);
    EXPECT_NE(w[0], raw[16]);  // folding changed the weights
  }
  // Layer 1 (no BN, groups=2): a plain copy.
  {
    const std::vector<float>& raw = floats[1];
    std::vector<float> w(12), b(6);
    ASSERT_TRUE(prepare_conv(net.layers[1], *f, w.data(), b.data()).ok());
    EXPECT_EQ(b, std::vector<float>(raw.begin(), raw.begin() + 6));
    EXPECT_EQ(w, std::vector<float>(raw.begin() + 6, raw.end()));
  }
  // Non-conv layers are refused.
  std::vector<float> w(1), b(1);
  Status st = prepare_conv(net.layers[2], *f, w.data(), b.data());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("layer 2 (maxpool)"), std::string::npos) << st.message();
}

TEST(PrepareConv, LayerFromAnotherNetworkIsRefused) {
  const NetworkDesc net = test::small_net();
  const std::string path = test::tmp_path("prepare2.weights");
  ASSERT_TRUE(write_weights_file(path, WeightsHeader{}, test::small_net_floats()).ok());
  Expected<WeightsFile> f = WeightsFile::open(path, net);
  ASSERT_TRUE(f.ok());
  LayerDesc other = net.layers[0];
  other.params = ConvParams{};  // 1 filter, 1x1, no BN
  std::vector<float> w(108), b(4);
  Status st = prepare_conv(other, *f, w.data(), b.data());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("index built from another cfg?"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace dlr
