#include "tests/common/session_fixtures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dlr::test {

std::vector<std::vector<float>> network_heads(Session& s, const std::vector<float>& input) {
  Engine& e = s.engine();
  const Status in = e.set_input(input.data(), 1);
  EXPECT_TRUE(in.ok()) << in.to_string();
  const Status st = e.run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::vector<std::vector<float>> out;
  for (int y : s.plan().output_layers) {
    const int64_t n = s.plan().step_of(y).out.count();
    out.emplace_back(e.output(y, 0), e.output(y, 0) + n);
  }
  return out;
}

double worst_relative(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                      double floor) {
  double worst = 0;
  for (size_t k = 0; k < b.size(); ++k) {
    double peak = floor, diff = 0;
    for (size_t i = 0; i < b[k].size(); ++i) {
      peak = std::max(peak, double(std::fabs(b[k][i])));
      diff = std::max(diff, double(std::fabs(a[k][i] - b[k][i])));
    }
    worst = std::max(worst, diff / peak);
  }
  return worst;
}

bool same_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * 4) != 0) return false;
  return true;
}

bool same_detections(const std::vector<Detection>& a, const std::vector<Detection>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i].box, &b[i].box, sizeof(Box)) != 0 || a[i].class_id != b[i].class_id ||
        std::memcmp(&a[i].prob, &b[i].prob, sizeof(float)) != 0)
      return false;
  return true;
}

ImageU8 pattern_image(std::vector<uint8_t>* pixels, int w, int h, int seed) {
  pixels->resize(size_t(w) * size_t(h) * 3);
  for (size_t i = 0; i < pixels->size(); ++i) (*pixels)[i] = uint8_t((i * 37 + i / 7 + size_t(seed) * 13) & 0xFF);
  return packed_bgr(pixels->data(), w, h);
}

}  // namespace dlr::test
