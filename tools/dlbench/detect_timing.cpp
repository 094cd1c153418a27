#include "tools/dlbench/detect_timing.h"

#include <chrono>
#include <random>
#include <string>

#include "tools/dlbench/stats.h"

namespace dlr::tools {

ImageU8 bench_image(std::vector<uint8_t>* pixels, int seed) {
  const int w = 640, h = 480;
  pixels->resize(size_t(w) * h * 3);
  std::mt19937 rng{uint32_t(seed)};
  for (uint8_t& p : *pixels) p = uint8_t(rng() & 0xFF);
  return packed_bgr(pixels->data(), w, h);
}

Expected<nlohmann::json> time_detect(Session& s, int batch, int iters, uint64_t seed) {
  std::vector<std::vector<uint8_t>> pixels(static_cast<size_t>(batch));
  std::vector<ImageU8> images;
  for (int i = 0; i < batch; ++i) images.push_back(bench_image(&pixels[size_t(i)], int(seed) + i));
  DLR_RETURN_IF_ERROR(s.detect_batch(images.data(), batch).status());
  std::vector<double> total, pre, net, post;
  size_t found = 0;
  for (int k = 0; k < iters; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    DLR_ASSIGN_OR_RETURN(const auto dets, s.detect_batch(images.data(), batch));
    total.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    const InferTiming& t = s.last_timing();
    pre.push_back(t.preprocess_ms);
    net.push_back(t.network_ms);
    post.push_back(t.postprocess_ms);
    for (const auto& d : dets) found += d.size();
  }
  const Stats all = stats_of(total);
  return nlohmann::json{{"images", std::to_string(batch) + " x 640x480 u8"},
                        {"iters", iters},
                        {"end_to_end", stats_json(all)},
                        {"preprocess_median_ms", stats_of(pre).median},
                        {"network_median_ms", stats_of(net).median},
                        {"postprocess_median_ms", stats_of(post).median},
                        {"detections_per_inference", iters > 0 ? double(found) / iters : 0.0},
                        {"images_per_s", all.median > 0 ? 1000.0 * batch / all.median : 0.0}};
}

}  // namespace dlr::tools
