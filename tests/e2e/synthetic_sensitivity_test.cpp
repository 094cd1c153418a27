// Synthetic weights must keep deep networks sensitive to their input: two
// different random inputs give yolo outputs whose difference is at least 1 % of
// the output spread (the standard deviation of the outputs).
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

void check_sensitivity(const std::string& cfg, int size) {
  const std::string w = test::synthetic_weights(cfg);
  ASSERT_FALSE(w.empty());
  SessionOptions so;
  so.width = size;
  so.height = size;
  auto s = Session::open(cfg, w, so);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  Engine& e = (*s)->engine();
  std::vector<std::vector<float>> outs[2];
  for (int k = 0; k < 2; ++k) {
    const auto in = test::random_input(1, 3, size, size, 100u + uint32_t(k));
    ASSERT_TRUE(e.set_input(in.data(), 1).ok());
    ASSERT_TRUE(e.run().ok());
    for (int y : (*s)->network().yolo_layers()) {
      const int64_t n = (*s)->network().layers[size_t(y)].out.count();
      outs[k].emplace_back(e.output(y, 0), e.output(y, 0) + n);
    }
  }
  for (size_t h = 0; h < outs[0].size(); ++h) {
    const auto& a = outs[0][h];
    const auto& b = outs[1][h];
    double mean = 0;
    for (float v : a) mean += v;
    mean /= double(a.size());
    double var = 0, diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      var += (a[i] - mean) * (a[i] - mean);
      diff += double(a[i] - b[i]) * double(a[i] - b[i]);
    }
    const double spread = std::sqrt(var / double(a.size()));
    const double rms = std::sqrt(diff / double(a.size()));
    std::printf("%s head %zu: output std %.4f, rms difference between inputs %.4f (%.1f%%)\n", cfg.c_str(), h, spread,
                rms, 100.0 * rms / spread);
    EXPECT_GT(spread, 1e-3) << "head " << h << " output is (almost) constant";
    EXPECT_GE(rms, 0.01 * spread) << "head " << h << " ignores its input";
  }
}

TEST(SyntheticWeights, Yolov4TinyIsSensitiveToItsInput) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4-tiny.cfg");
  check_sensitivity(cfg, 416);
}

TEST(SyntheticWeights, Yolov4IsSensitiveToItsInput) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4.cfg");
  check_sensitivity(cfg, 416);
}

}  // namespace
}  // namespace dlr
