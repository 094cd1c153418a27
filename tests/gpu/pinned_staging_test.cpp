// Pinned staging that never pages (issue 35): every host region the GPU's streaming paths
// read each inference (Engine::streamed_host_regions: the pinned host store of stream
// mode, the blobs staged in the arena, the storage staging ring, zero copy's mapped
// staging) is page-locked host memory by cudaPointerGetAttributes, at its first and its
// last byte, before and after inferences. yolov4-tiny @416 fp16 (synthetic weights).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/compile/compiled_model.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr {
namespace {

// Page-locked host memory at `p` (cudaHostAlloc or cudaHostRegister); `mapped`: with a
// device pointer too.
void expect_pinned(const void* p, const std::string& what, bool mapped) {
  cudaPointerAttributes a{};
  ASSERT_EQ(cudaPointerGetAttributes(&a, p), cudaSuccess) << what;
  EXPECT_EQ(a.type, cudaMemoryTypeHost) << what << " at " << p << " is not page-locked host memory (type "
                                        << int(a.type) << ")";
  if (mapped) {
    EXPECT_NE(a.devicePointer, nullptr) << what << " is not mapped into the device's address space";
  }
}

void expect_regions_pinned(Session& s, const std::string& label, const std::vector<std::string>& expected) {
  const std::vector<HostRegion> regions = s.engine().streamed_host_regions();
  std::vector<std::string> names;
  for (const HostRegion& r : regions) {
    names.push_back(r.what);
    ASSERT_NE(r.data, nullptr) << label << ": " << r.what;
    ASSERT_GT(r.bytes, 0) << label << ": " << r.what;
    const bool mapped = std::string(r.what).rfind("mapped", 0) == 0;
    expect_pinned(r.data, label + ": " + r.what + " (first byte)", mapped);
    expect_pinned(static_cast<const char*>(r.data) + r.bytes - 1, label + ": " + r.what + " (last byte)", mapped);
  }
  for (const std::string& e : expected) {
    bool found = false;
    for (const std::string& n : names) found = found || n == e;
    EXPECT_TRUE(found) << label << ": no region '" << e << "' among " << names.size();
  }
}

TEST(PinnedStaging, EveryStreamedHostRegionIsPageLocked) {
  DLR_REQUIRE_GPU();
  const std::string cfg = test::required_shared_file("models/yolov4-tiny.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared data not found";
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  const std::vector<uint8_t> pixels = test::noise_pixels(416, 416, 7);
  const ImageView image{pixels.data(), 416, 416, 3, 416 * 3, true};
  struct Case {
    const char* label;
    WeightsFrom from;
    int zero_copy;
    std::vector<std::string> expected;
  };
  const std::string prepared = test::temp_dir() + "/pinned_tiny.dlrw";
  const Case cases[] = {{"host, min", WeightsFrom::kHost, 0, {"host store"}},
                        {"storage, three stages", WeightsFrom::kStorage, 0, {"storage staging"}},
                        {"storage, zero copy", WeightsFrom::kStorage, 1, {"mapped storage staging"}}};
  for (const Case& c : cases) {
    SessionOptions o;
    o.device = DeviceKind::kCUDA;
    o.precision = Precision::kFP16;
    o.mode = WeightMode::kStream;
    o.weight_budget = WeightBudget::min();
    o.weights_from = c.from;
    o.width = o.height = 416;
    if (c.from == WeightsFrom::kStorage) {
      o.prepared_path = prepared;
      o.zero_copy = c.zero_copy;
    }
    auto s = Session::open(cfg, weights, o);
    ASSERT_TRUE(s.ok()) << c.label << ": " << s.status().to_string();
    expect_regions_pinned(**s, c.label, c.expected);
    for (int i = 0; i < 2; ++i) ASSERT_TRUE((*s)->detect(image).ok()) << c.label;
    expect_regions_pinned(**s, std::string(c.label) + ", after inferences", c.expected);
    if ((*s)->model().stream.staged_bytes > 0)  // arena staging (host, a ring plan): its own pinned store
      expect_regions_pinned(**s, c.label, {"arena-staged store"});
  }
}

}  // namespace
}  // namespace dlr
