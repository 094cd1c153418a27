#include "tests/common/model_fixtures.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <map>
#include <random>

#include "loaders/synthetic_weights.h"
#include "tests/common/test_paths.h"

namespace dlr::test {

std::string synthetic_weights(const std::string& cfg_path, uint64_t seed) {
  static std::map<std::pair<std::string, uint64_t>, std::string> cache;
  const auto key = std::make_pair(cfg_path, seed);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  auto net = parse_network_cfg(cfg_path);
  if (!net.ok()) {
    ADD_FAILURE() << net.status().to_string();
    return "";
  }
  const std::string name = cfg_path.substr(cfg_path.find_last_of('/') + 1) + "." + std::to_string(seed) + ".weights";
  // The CTest fixture's file when it exists and has the size this cfg needs (dlgen
  // with default options writes what write_synthetic_weights writes for the seed).
  const std::string shared = synthetic_dir() + "/" + name;
  struct stat info;
  if (::stat(shared.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
      uint64_t(info.st_size) == 20 + 4 * uint64_t(net->total_file_floats())) {
    cache[key] = shared;
    return shared;
  }
  const std::string path = temp_dir() + "/" + name;
  SyntheticOptions opt;
  opt.seed = seed;
  const Status st = write_synthetic_weights(*net, path, opt);
  if (!st.ok()) {
    ADD_FAILURE() << st.to_string();
    return "";
  }
  cache[key] = path;
  return path;
}

std::vector<uint8_t> noise_pixels(int w, int h, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> px(size_t(w) * size_t(h) * 3);
  for (auto& p : px) p = uint8_t(rng() & 0xff);
  return px;
}

std::vector<float> random_input(int n, int c, int h, int w, uint32_t seed) {
  std::vector<float> v(size_t(n) * c * h * w);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (float& x : v) x = u(rng);
  return v;
}

double rel_error(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  if (den == 0) return num == 0 ? 0 : INFINITY;
  return std::sqrt(num / den);
}

double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  return rel_error(a.data(), b.data(), a.size());
}

}  // namespace dlr::test
