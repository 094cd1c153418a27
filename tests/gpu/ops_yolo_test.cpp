// dlr::cuda::yolo against cpu::yolo: new_coords 0/1, scale_x_y 1 / 1.05 / 2,
// 80 and 2 classes, 3 and 2 anchors, 13x13 / 7x5 / 1x1, batch 1 and 2, input in
// every standard geometry (f16 included); output f32 NCHW packed (the contract),
// plus one f16 NHWC slice output. f32 out: rel L2 err <= 1e-5 (reference on the
// f16-rounded input when the input is f16); f16 out: <= 2e-3.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

YoloParams make_params(int classes, std::vector<int> mask, float sxy, bool new_coords) {
  YoloParams p;
  p.classes = classes;
  p.total = 9;
  p.mask = std::move(mask);
  p.anchors = {10, 13, 16, 30, 33, 23, 30, 61, 62, 45, 59, 119, 116, 90, 156, 198, 373, 326};
  p.scale_x_y = sxy;
  p.new_coords = new_coords;
  return p;
}

class YoloTest : public GpuTest {
 protected:
  void run_case(const YoloParams& p, int n, int h, int w, const ViewSpec& in_spec, const ViewSpec& out_spec,
                uint32_t seed) {
    const Shape3 shape{int(p.mask.size()) * (p.classes + 5), h, w};
    const std::string what = "yolo classes " + std::to_string(p.classes) + " anchors " +
                             std::to_string(p.mask.size()) + " sxy " + std::to_string(p.scale_x_y) +
                             " new_coords " + std::to_string(int(p.new_coords)) + " " + shape_str(n, shape) +
                             ", in " + describe(in_spec) + ", out " + describe(out_spec);
    // new_coords inputs come from a logistic conv in Darknet: (0, 1); raw logits otherwise.
    HostTensor x = p.new_coords ? random_tensor(n, shape, seed, 0.f, 1.f) : random_tensor(n, shape, seed, -8.f, 8.f);
    if (in_spec.dtype == DType::kF16) round_to_half(&x);
    HostTensor want(n, shape);
    cpu::yolo(p, x.view(), want.view());

    DeviceTensor din, dout;
    ASSERT_EQ(cudaSuccess, din.upload(x, in_spec, stream())) << what;
    ASSERT_EQ(cudaSuccess, dout.create(n, shape, out_spec, stream())) << what;
    const Status st = cuda::yolo(p, din.view(), dout.view(), stream());
    EXPECT_TRUE(st.ok()) << what << ": " << st.to_string();
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream())) << what;
    HostTensor got;
    int64_t outside = 0, first_outside = -1;
    ASSERT_EQ(cudaSuccess, dout.download(&got, &outside, &first_outside, stream())) << what;
    EXPECT_TRUE(near_rel(got, want, out_spec.dtype == DType::kF16 ? 2e-3 : 1e-5, what));
    EXPECT_TRUE(untouched_outside(outside, first_outside, what));
  }
};

TEST_F(YoloTest, AgainstCpu) {
  const ViewSpec out_spec = packed_spec(DType::kF32, Layout::kNCHW);
  const std::vector<ViewSpec> specs = standard_specs();
  struct Geo {
    int classes;
    std::vector<int> mask;
    int h, w;
  };
  const Geo geos[] = {{80, {0, 1, 2}, 13, 13}, {2, {3, 4, 5}, 7, 5}, {2, {1, 2}, 1, 1}, {80, {6, 7, 8}, 5, 7}};
  const float sxys[] = {1.f, 1.05f, 2.f};
  uint32_t seed = 5000;
  for (const Geo& g : geos) {
    for (float sxy : sxys) {
      for (int nc = 0; nc <= 1; ++nc) {
        for (size_t i = 0; i < specs.size(); i += 1) {
          // every input geometry for the small heads, every other one for 80 classes
          if (g.classes == 80 && (i + size_t(nc)) % 2 == 1) continue;
          const int n = 1 + int((i + size_t(nc)) % 2);
          run_case(make_params(g.classes, g.mask, sxy, nc == 1), n, g.h, g.w, specs[i], out_spec, seed++);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_F(YoloTest, F16SliceOutput) {
  run_case(make_params(2, {0, 1, 2}, 1.05f, false), 2, 7, 5, {DType::kF16, Layout::kNHWC, 1, 1, 0},
           {DType::kF16, Layout::kNHWC, 2, 3, 4}, 77);
}

// NHWC in, NCHW out goes through 32x32 tiles in shared memory: the same bits as the
// element-wise kernel (which an NHWC output takes), on tile edges and full tiles, both
// input dtypes, a channel slice, batch 2.
TEST_F(YoloTest, TilesGiveTheElementwiseKernelsBits) {
  struct Geo {
    int classes, anchors, h, w;
  };
  const Geo geos[] = {{80, 3, 13, 13}, {80, 3, 38, 38}, {2, 3, 7, 5}, {1, 2, 1, 1}};
  uint32_t seed = 9000;
  for (const Geo& g : geos)
    for (DType dt : {DType::kF16, DType::kF32})
      for (int nc = 0; nc <= 1; ++nc) {
        const std::vector<int> mask = g.anchors == 3 ? std::vector<int>{0, 1, 2} : std::vector<int>{3, 4};
        const YoloParams p = make_params(g.classes, mask, 1.05f, nc == 1);
        const Shape3 shape{g.anchors * (g.classes + 5), g.h, g.w};
        HostTensor x = nc ? random_tensor(2, shape, seed, 0.f, 1.f) : random_tensor(2, shape, seed, -8.f, 8.f);
        if (dt == DType::kF16) round_to_half(&x);
        const ViewSpec in_spec{dt, Layout::kNHWC, seed % 2 ? 3 : 0, seed % 2 ? 5 : 0, 0};
        HostTensor got[2];
        const ViewSpec outs[] = {packed_spec(DType::kF32, Layout::kNCHW), packed_spec(DType::kF32, Layout::kNHWC)};
        for (int k = 0; k < 2; ++k) {
          DeviceTensor din, dout;
          ASSERT_EQ(cudaSuccess, din.upload(x, in_spec, stream()));
          ASSERT_EQ(cudaSuccess, dout.create(2, shape, outs[k], stream()));
          ASSERT_TRUE(cuda::yolo(p, din.view(), dout.view(), stream()).ok());
          int64_t outside = 0, first = -1;
          ASSERT_EQ(cudaSuccess, dout.download(&got[k], &outside, &first, stream()));
          EXPECT_TRUE(untouched_outside(outside, first, describe(outs[k])));
        }
        EXPECT_TRUE(bit_equal(got[0], got[1], "yolo " + shape_str(2, shape) + " in " + describe(in_spec) +
                                                  " new_coords " + std::to_string(nc)));
        ++seed;
      }
}

TEST_F(YoloTest, RejectsChannelMismatch) {
  DeviceTensor din, dout;
  const Shape3 s{20, 3, 3};  // 3 anchors x (2 + 5) = 21 expected
  ASSERT_EQ(cudaSuccess, din.create(1, s, packed_spec(DType::kF32, Layout::kNCHW), stream()));
  ASSERT_EQ(cudaSuccess, dout.create(1, s, packed_spec(DType::kF32, Layout::kNCHW), stream()));
  const Status st = cuda::yolo(make_params(2, {0, 1, 2}, 1.f, false), din.view(), dout.view(), stream());
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace dlr::test
