// dlr::cuda::yolo_select against the host's test (objectness > thresh, strict, as
// runtime/detect/yolo_decode.cpp): for batch 1 and 3, 80 and 2 classes, 3 and 2 anchors,
// every candidate's key found once and its row equal bit for bit to the output's entries;
// counts exact; with fewer rows than candidates the count still exact and every row kept a
// true candidate; a wrong geometry refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_handles.h"
#include "kernels/cuda/cuda_ops.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

class YoloSelectTest : public GpuTest {
 protected:
  // Runs the kernel over `x` (anchors x entries channels) with `capacity` rows per image
  // and checks it against the host scan.
  void run_case(const HostTensor& x, int anchors, float thresh, int capacity, const std::string& what) {
    const int n = x.n, entries = x.shape.c / anchors, cells = x.shape.h * x.shape.w;
    auto din = cuda::DeviceBuffer::alloc(x.data.size() * 4);
    auto dcounts = cuda::DeviceBuffer::alloc(size_t(n) * 4);
    auto dkeys = cuda::DeviceBuffer::alloc(size_t(n) * size_t(capacity) * 4 + 4);
    auto drows = cuda::DeviceBuffer::alloc(size_t(n) * size_t(capacity) * size_t(entries) * 4 + 4);
    ASSERT_TRUE(din.ok() && dcounts.ok() && dkeys.ok() && drows.ok()) << what;
    ASSERT_EQ(cudaSuccess, to_device(din->data(), x.data.data(), x.data.size() * 4)) << what;
    const TensorView in = TensorView::packed(din->data(), DType::kF32, Layout::kNCHW, n, x.shape);
    const Status st = cuda::yolo_select(in, anchors, entries, thresh, capacity, static_cast<int32_t*>(dcounts->data()),
                                        static_cast<int32_t*>(dkeys->data()), static_cast<float*>(drows->data()),
                                        stream());
    ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream())) << what;
    std::vector<int32_t> counts(static_cast<size_t>(n));
    std::vector<int32_t> keys(static_cast<size_t>(n) * size_t(capacity));
    std::vector<float> rows(size_t(n) * size_t(capacity) * size_t(entries));
    ASSERT_EQ(cudaSuccess, cudaMemcpy(counts.data(), dcounts->data(), counts.size() * 4, cudaMemcpyDeviceToHost));
    ASSERT_EQ(cudaSuccess, cudaMemcpy(keys.data(), dkeys->data(), keys.size() * 4, cudaMemcpyDeviceToHost));
    ASSERT_EQ(cudaSuccess, cudaMemcpy(rows.data(), drows->data(), rows.size() * 4, cudaMemcpyDeviceToHost));
    for (int b = 0; b < n; ++b) {
      std::vector<int32_t> want;
      for (int cell = 0; cell < cells; ++cell)
        for (int a = 0; a < anchors; ++a)
          if (x.data[size_t(x.index(b, a * entries + 4, 0, 0) + cell)] > thresh) want.push_back(cell * anchors + a);
      ASSERT_EQ(counts[size_t(b)], int(want.size())) << what << " image " << b;
      const int kept = std::min(capacity, int(want.size()));
      std::vector<int32_t> got(keys.begin() + int64_t(b) * capacity, keys.begin() + int64_t(b) * capacity + kept);
      for (int r = 0; r < kept; ++r) {  // each row: the entries of its key, bit for bit
        const int cell = got[size_t(r)] / anchors, a = got[size_t(r)] % anchors;
        ASSERT_TRUE(std::binary_search(want.begin(), want.end(), got[size_t(r)])) << what << " key " << got[size_t(r)];
        for (int e = 0; e < entries; ++e)
          ASSERT_EQ(rows[(size_t(b) * capacity + size_t(r)) * entries + size_t(e)],
                    x.data[size_t(x.index(b, a * entries + e, 0, 0) + cell)])
              << what << " image " << b << " row " << r << " entry " << e;
      }
      std::sort(got.begin(), got.end());
      EXPECT_TRUE(std::adjacent_find(got.begin(), got.end()) == got.end()) << what << ": a key twice";
      if (kept == int(want.size())) {
        EXPECT_EQ(got, want) << what << " image " << b;
      }
    }
  }
};

TEST_F(YoloSelectTest, AgainstTheHostScan) {
  DLR_REQUIRE_GPU();
  struct Case {
    int n, anchors, classes, h, w;
    float thresh;
  };
  const Case cases[] = {{1, 3, 80, 13, 13, 0.9f}, {3, 3, 80, 26, 26, 0.95f}, {3, 2, 2, 7, 5, 0.5f},
                        {1, 3, 80, 19, 19, 0.f}};
  uint32_t seed = 900;
  for (const Case& c : cases) {
    const Shape3 shape{c.anchors * (c.classes + 5), c.h, c.w};
    HostTensor x = random_tensor(c.n, shape, seed++, 0.f, 1.f);
    // Some objectness exactly at the threshold: not candidates.
    for (int b = 0; b < c.n; ++b) x.at(b, 4, 0, 0) = c.thresh;
    const int all = c.h * c.w * c.anchors;
    for (int capacity : {all, std::max(1, all / 16)}) {
      const std::string what = shape_str(c.n, shape) + " anchors " + std::to_string(c.anchors) + " thresh " +
                               std::to_string(c.thresh) + " capacity " + std::to_string(capacity);
      run_case(x, c.anchors, c.thresh, capacity, what);
    }
  }
}

TEST_F(YoloSelectTest, RefusesAGeometryThatIsNotAYoloHead) {
  DLR_REQUIRE_GPU();
  const Shape3 shape{3 * 85 + 1, 4, 4};
  const TensorView in = TensorView::packed(reinterpret_cast<void*>(256), DType::kF32, Layout::kNCHW, 1, shape);
  int32_t* p = reinterpret_cast<int32_t*>(256);
  const Status st = cuda::yolo_select(in, 3, 85, 0.25f, 8, p, p, reinterpret_cast<float*>(p), stream());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("3 anchors x 85 entries"), std::string::npos) << st.message();
  const TensorView f16 = TensorView::packed(reinterpret_cast<void*>(256), DType::kF16, Layout::kNCHW, 1, {255, 4, 4});
  EXPECT_FALSE(cuda::yolo_select(f16, 3, 85, 0.25f, 8, p, p, reinterpret_cast<float*>(p), stream()).ok());
}

}  // namespace
}  // namespace dlr::test
