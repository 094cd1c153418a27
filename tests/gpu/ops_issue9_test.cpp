// dlr::cuda::avgpool, scale_channels, sam, reorg (both mappings), region and
// gaussian_yolo against the CPU reference ops (tests/kernels checks those against
// Darknet's loops), over the standard view geometries (packed and channel-sliced,
// NCHW and NHWC, f32 and f16 inputs). f32 outputs: rel L2 <= 1e-5 (reorg and
// avgpool: bit-equal); f16 outputs or inputs: the reference runs on f16-rounded
// inputs, tolerance 2e-3. Every kernel must leave the bytes outside its view alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

class Issue9OpsTest : public GpuTest {
 protected:
  // Uploads `h` with `spec` (rounding `h` to half first when the view is f16).
  void upload(HostTensor* h, const ViewSpec& spec, DeviceTensor* d, const std::string& what) {
    if (spec.dtype == DType::kF16) round_to_half(h);
    ASSERT_EQ(cudaSuccess, d->upload(*h, spec, stream())) << what;
  }
  // Downloads `d`, compares with `want`, checks the bytes outside the view.
  void check(const DeviceTensor& d, const HostTensor& want, bool exact, const std::string& what) {
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream())) << what;
    HostTensor got;
    int64_t outside = 0, first = -1;
    ASSERT_EQ(cudaSuccess, d.download(&got, &outside, &first, stream())) << what;
    if (exact && d.spec().dtype == DType::kF32)
      EXPECT_TRUE(bit_equal(got, want, what));
    else
      EXPECT_TRUE(near_rel(got, want, d.spec().dtype == DType::kF16 ? 2e-3 : 1e-5, what));
    EXPECT_TRUE(untouched_outside(outside, first, what));
  }
};

TEST_F(Issue9OpsTest, AvgpoolMatchesCpu) {
  DLR_REQUIRE_GPU();
  const std::vector<ViewSpec> specs = standard_specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    const Shape3 is{37, 9, 11};
    const std::string what = "avgpool in " + describe(specs[i]);
    HostTensor in = random_tensor(2, is, 10 + uint32_t(i));
    DeviceTensor din, dout;
    upload(&in, specs[i], &din, what);
    HostTensor want(2, Shape3{is.c, 1, 1});
    cpu::avgpool(in.view(), want.view());
    const ViewSpec out_spec = specs[(i + 1) % specs.size()];
    ASSERT_EQ(cudaSuccess, dout.create(2, Shape3{is.c, 1, 1}, out_spec, stream()));
    const Status st = cuda::avgpool(din.view(), dout.view(), stream());
    ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
    check(dout, want, specs[i].dtype == DType::kF32, what + ", out " + describe(out_spec));
  }
}

TEST_F(Issue9OpsTest, ScaleChannelsAndSamMatchCpu) {
  DLR_REQUIRE_GPU();
  const std::vector<ViewSpec> specs = standard_specs();
  const Shape3 s{12, 7, 5};
  for (size_t i = 0; i < specs.size(); ++i) {
    for (Activation act : {Activation::kLinear, Activation::kLogistic, Activation::kLeaky}) {
      for (int mode = 0; mode < 3; ++mode) {  // 0: scale_channels, 1: scale_channels scale_wh, 2: sam
        const ViewSpec a_spec = specs[i], b_spec = specs[(i + 2) % specs.size()], o_spec = specs[(i + 3) % specs.size()];
        const Shape3 as = mode == 0 ? Shape3{s.c, 1, 1} : mode == 1 ? Shape3{1, s.h, s.w} : s;
        const std::string what = std::string(mode == 2 ? "sam" : "scale_channels") + (mode == 1 ? " wh" : "") + " " +
                                 activation_name(act) + " a " + describe(a_spec) + " b " + describe(b_spec) +
                                 " out " + describe(o_spec);
        HostTensor a = random_tensor(2, as, 20 + uint32_t(i), -2.f, 2.f);
        HostTensor b = random_tensor(2, s, 30 + uint32_t(i), -2.f, 2.f);
        DeviceTensor da, db, dout;
        upload(&a, a_spec, &da, what);
        upload(&b, b_spec, &db, what);
        HostTensor want(2, s);
        if (mode == 2)
          cpu::sam(a.view(), b.view(), act, want.view());
        else
          cpu::scale_channels(a.view(), b.view(), mode == 1, act, want.view());
        ASSERT_EQ(cudaSuccess, dout.create(2, s, o_spec, stream()));
        const Status st = mode == 2 ? cuda::sam(da.view(), db.view(), act, dout.view(), stream())
                                    : cuda::scale_channels(da.view(), db.view(), mode == 1, act, dout.view(), stream());
        ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
        check(dout, want, false, what);
      }
    }
  }
}

TEST_F(Issue9OpsTest, ReorgBothMappingsMatchCpuBitForBit) {
  DLR_REQUIRE_GPU();
  const std::vector<ViewSpec> specs = standard_specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    for (int s : {2, 3}) {
      for (ReorgMapping m : {ReorgMapping::kDarknetOld, ReorgMapping::kSpaceToDepth}) {
        const Shape3 is{2 * s * s, 4 * s, 3 * s}, os{is.c * s * s, is.h / s, is.w / s};
        const ViewSpec out_spec = specs[(i + 1) % specs.size()];
        const std::string what = std::string(m == ReorgMapping::kDarknetOld ? "reorg" : "reorg3d") + " /" +
                                 std::to_string(s) + " in " + describe(specs[i]) + " out " + describe(out_spec);
        HostTensor in = random_tensor(2, is, 40 + uint32_t(i));
        if (out_spec.dtype == DType::kF16) round_to_half(&in);
        DeviceTensor din, dout;
        upload(&in, specs[i], &din, what);
        HostTensor want(2, os);
        cpu::reorg(in.view(), s, m, want.view());
        ASSERT_EQ(cudaSuccess, dout.create(2, os, out_spec, stream()));
        const Status st = cuda::reorg(din.view(), s, m, dout.view(), stream());
        ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
        check(dout, want, true, what);
      }
    }
  }
}

TEST_F(Issue9OpsTest, RegionAndGaussianYoloMatchCpu) {
  DLR_REQUIRE_GPU();
  const std::vector<ViewSpec> specs = standard_specs();
  const ViewSpec out_spec = packed_spec(DType::kF32, Layout::kNCHW);  // network outputs
  for (size_t i = 0; i < specs.size(); ++i) {
    for (bool softmax : {true, false}) {
      RegionOp p;
      p.anchors = 5;
      p.classes = 20;
      p.softmax = softmax;
      const Shape3 s{p.anchors * (p.coords + 1 + p.classes), 6, 7};
      const std::string what = std::string("region softmax ") + (softmax ? "1" : "0") + " in " + describe(specs[i]);
      HostTensor in = random_tensor(2, s, 50 + uint32_t(i), -6.f, 6.f);
      DeviceTensor din, dout;
      upload(&in, specs[i], &din, what);
      HostTensor want(2, s);
      cpu::region(p, in.view(), want.view());
      ASSERT_EQ(cudaSuccess, dout.create(2, s, out_spec, stream()));
      const Status st = cuda::region(p, din.view(), dout.view(), stream());
      ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
      check(dout, want, false, what);
    }
    GaussianYoloOp g;
    g.anchors = 3;
    g.classes = 10;
    g.scale_x_y = 1.05f;
    const Shape3 s{g.anchors * (9 + g.classes), 5, 4};
    const std::string what = "gaussian_yolo in " + describe(specs[i]);
    HostTensor in = random_tensor(2, s, 60 + uint32_t(i), -6.f, 6.f);
    DeviceTensor din, dout;
    upload(&in, specs[i], &din, what);
    HostTensor want(2, s);
    cpu::gaussian_yolo(g, in.view(), want.view());
    ASSERT_EQ(cudaSuccess, dout.create(2, s, out_spec, stream()));
    const Status st = cuda::gaussian_yolo(g, din.view(), dout.view(), stream());
    ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
    check(dout, want, false, what);
  }
}

}  // namespace
}  // namespace dlr::test
