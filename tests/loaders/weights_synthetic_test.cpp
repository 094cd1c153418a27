// Synthetic weights: determinism, exact size, value model, hand-made file writer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "loaders/prepare.h"
#include "loaders/synthetic_weights.h"
#include "tests/loaders/weights_test_util.h"

namespace dlr {
namespace {

std::string synth(const NetworkDesc& net, const std::string& name, uint64_t seed, WeightsHeader header = {}) {
  SyntheticOptions o;
  o.seed = seed;
  o.header = header;
  const std::string path = test::tmp_path(name);
  Status st = write_synthetic_weights(net, path, o);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return path;
}

TEST(SyntheticWeights, SameSeedSameBytesOtherSeedOtherBytes) {
  const NetworkDesc net = test::small_net();
  const std::string a = test::read_bytes(synth(net, "s1a.weights", 42));
  const std::string b = test::read_bytes(synth(net, "s1b.weights", 42));
  const std::string c = test::read_bytes(synth(net, "s2.weights", 43));
  ASSERT_EQ(a.size(), 1204u);
  EXPECT_EQ(a, b);
  ASSERT_EQ(c.size(), a.size());
  EXPECT_EQ(a.substr(0, 20), c.substr(0, 20));  // same header
  size_t differing = 0;
  for (size_t i = 20; i < a.size(); i += 4) differing += a.compare(i, 4, c, i, 4) != 0;
  EXPECT_GT(differing, 290u);  // essentially every float differs
}

// Guards machine independence: these bytes must never change (any platform, compiler or chunk size;
// checked identical with gcc -O0/-O3 -march=native/-ffp-contract=fast and clang -O2/-O3 -march=native).
TEST(SyntheticWeights, GoldenValues) {
  const std::string path = synth(test::small_net(), "golden.weights", 1);
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the payload
  const std::string bytes = test::read_bytes(path);
  for (size_t i = 20; i < bytes.size(); ++i) h = (h ^ static_cast<unsigned char>(bytes[i])) * 1099511628211ull;
  RecordProperty("payload_fnv1a", std::to_string(h));
  EXPECT_EQ(h, 5684076087650146330ull) << "payload hash changed: update only if the value model was changed on purpose";
}

TEST(SyntheticWeights, SizeEqualsIndexForBothHeaders) {
  const NetworkDesc net = test::small_net();
  WeightsHeader old;
  old.major = 0;
  old.minor = 1;
  old.revision = 0;
  for (const WeightsHeader& h : {WeightsHeader{}, old}) {
    const std::string path = synth(net, "size.weights", 3, h);
    EXPECT_EQ(test::read_bytes(path).size(), build_weights_index(net, h).payload_end);
    Expected<WeightsFile> f = WeightsFile::open(path, net);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->index().header.minor, h.minor);
    EXPECT_EQ(f->index().header.seen, 0u);
  }
}

TEST(SyntheticWeights, ValueModel) {
  const NetworkDesc net = test::small_net();
  const std::string path = synth(net, "model.weights", 9);
  Expected<WeightsFile> f = WeightsFile::open(path, net);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const SyntheticOptions o;
  const std::vector<SyntheticMoments> moments = synthetic_moment_estimates(net, o);
  ASSERT_EQ(moments.size(), net.layers.size());
  for (size_t i = 0; i < moments.size(); ++i) {
    EXPECT_EQ(moments[i].mean.size(), static_cast<size_t>(net.layers[i].out.c)) << "layer " << i;
    EXPECT_GT(moments[i].variance, 0.0) << "layer " << i;
  }
  EXPECT_NEAR(moments[0].variance, 0.3761, 1e-9);  // leaky of N(0, 1)
  EXPECT_NEAR(moments[0].mean[0], 0.359, 1e-9);
  EXPECT_NEAR(moments[5].mean[0], 0.5, 1e-9);  // logistic head

  // BN statistics in their ranges.
  const LayerBlobs& l0 = f->index().layers[0];
  for (BlobRole r : {BlobRole::kScale, BlobRole::kVariance}) {
    const float* p = f->data(*l0.find(r));
    for (int i = 0; i < 4; ++i) {
      EXPECT_GE(p[i], 0.5f);
      EXPECT_LT(p[i], 1.5f);
    }
  }
  for (int li : {0, 1, 3, 5}) {
    const LayerDesc& l = net.layers[static_cast<size_t>(li)];
    const LayerBlobs& lb = f->index().layers[static_cast<size_t>(li)];
    const SyntheticMoments& in = li == 0 ? SyntheticMoments{{o.input_mean, o.input_mean, o.input_mean}, o.input_variance}
                                         : moments[static_cast<size_t>(li - 1)];
    const int64_t n = l.bias_count(), fan_in = l.weight_count() / n, kk = int64_t(l.conv().size) * l.conv().size;
    const int64_t cg = fan_in / kk, per_group = n / l.conv().groups;
    const float* raw = f->data(*lb.find(BlobRole::kWeights));
    const PreparedSizes s = prepared_sizes(l);
    std::vector<float> w(static_cast<size_t>(s.weights)), b(static_cast<size_t>(s.bias));
    ASSERT_TRUE(prepare_conv(l, *f, w.data(), b.data()).ok());
    double second_moment = 0;
    for (int64_t fi = 0; fi < n; ++fi) {
      // Zero-sum filters; D_f = expected raw output for the estimated input means.
      double sum = 0, abs_sum = 0, dc = 0, dc_folded = 0;
      for (int64_t j = 0; j < fan_in; ++j) {
        const double v = raw[fi * fan_in + j];
        const double m = in.mean[static_cast<size_t>((fi / per_group) * cg + j / kk)];
        sum += v;
        abs_sum += std::fabs(v);
        dc += v * m;
        dc_folded += double(w[static_cast<size_t>(fi * fan_in + j)]) * m;
        second_moment += double(w[static_cast<size_t>(fi * fan_in + j)]) * w[static_cast<size_t>(fi * fan_in + j)] * in.variance;
      }
      EXPECT_LE(std::fabs(sum), 1e-6 * abs_sum) << "layer " << li << " filter " << fi;
      // Folded pre-activation offset for the estimated input: bias' + w'.mean_in is small
      // (BN mean / bias absorb D_f), except the objectness channel of the head.
      const double offset = b[static_cast<size_t>(fi)] + dc_folded;
      const double expected = (li == 5 && fi == 4) ? o.objectness_bias : 0.0;
      EXPECT_NEAR(offset, expected, 0.75) << "layer " << li << " filter " << fi << " D_f " << dc;
    }
    // After folding: sum over a filter of w'^2 * V_in ~ target variance (1).
    EXPECT_GT(second_moment / n, 0.3) << "layer " << li;
    EXPECT_LT(second_moment / n, 2.5) << "layer " << li;
  }
}

TEST(SyntheticWeights, UnwritablePathIsAnIoError) {
  SyntheticOptions o;
  Status st = write_synthetic_weights(test::small_net(), "/nonexistent-dir/x.weights", o);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("/nonexistent-dir/x.weights.tmp"), std::string::npos) << st.message();
}

TEST(WriteWeightsFile, WritesHeaderThenLayersInOrder) {
  const std::string path = test::tmp_path("hand.weights");
  WeightsHeader h;
  h.major = 0;
  h.minor = 1;
  h.revision = 7;
  h.seen = 12345;
  ASSERT_TRUE(write_weights_file(path, h, {{1.0f, 2.0f}, {}, {3.0f}}).ok());
  const std::string bytes = test::read_bytes(path);
  ASSERT_EQ(bytes.size(), 16u + 12u);
  EXPECT_EQ(bytes.substr(0, 16), std::string("\0\0\0\0\1\0\0\0\7\0\0\0\x39\x30\0\0", 16));
  float v[3];
  std::memcpy(v, bytes.data() + 16, 12);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], 2.0f);
  EXPECT_EQ(v[2], 3.0f);
}

}  // namespace
}  // namespace dlr
