// ConcatConv (kernels/cuda/conv_concat.h): a 1x1 conv over the parts of a channel
// concatenation, one cuBLAS GEMM per part, against the CPU reference cpu::conv2d run on
// the concatenation itself. Parts are packed or channel slices of wider NHWC buffers,
// f16 and f32, batch 1 and 3; the device buffers are poisoned (NaN bytes) so a missed
// element or a write outside a view fails. Tolerances as conv_test.cpp: fp32 1e-5,
// fp16 5e-3 (f16 references use half-rounded inputs and weights).
#include "kernels/cuda/conv_concat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_handles.h"
#include "runtime/core/half.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::cuda {
namespace {

using test::DeviceTensor;
using test::HostTensor;
using test::ViewSpec;

struct Case {
  std::vector<int> parts;  // channels of each part, in order
  int n, h, w, filters;
  Activation act;
};

struct GpuRun {
  Status status;
  HostTensor got;
  int64_t outside_touched = 0;
};

// Runs `cc` on the GPU; `slice`: every part lives in a wider buffer (2 channels before, 3 after).
GpuRun run_gpu(const Case& cc, DType dt, Precision precision, bool slice, const std::vector<HostTensor>& xs,
            const std::vector<float>& w, const std::vector<float>& bias) {
  GpuRun r;
  auto stream = make_stream();
  auto blas = make_cublas();
  if (!stream.ok() || !blas.ok()) {
    r.status = !stream.ok() ? stream.status() : blas.status();
    return r;
  }
  cudaStream_t s = stream->get();
  std::vector<DeviceTensor> parts(cc.parts.size());
  std::vector<TensorView> views;
  for (size_t i = 0; i < parts.size(); ++i) {
    const ViewSpec spec{dt, Layout::kNHWC, slice ? 2 : 0, slice ? 3 : 0, 0};
    if (parts[i].upload(xs[i], spec, s) != cudaSuccess) {
      r.status = internal_error("upload failed");
      return r;
    }
    views.push_back(parts[i].view());
  }
  DeviceTensor y;
  if (y.create(cc.n, {cc.filters, cc.h, cc.w}, ViewSpec{dt, Layout::kNHWC, 0, 0, 0}, s) != cudaSuccess) {
    r.status = internal_error("output allocation failed");
    return r;
  }
  // Weights K x C (OIHW and OHWI are the same for a 1x1 kernel) in the parts' dtype.
  std::vector<uint8_t> wb(w.size() * dtype_size(dt));
  for (size_t i = 0; i < w.size(); ++i) {
    if (dt == DType::kF16) {
      const uint16_t hv = float_to_half(w[i]);
      std::memcpy(&wb[i * 2], &hv, 2);
    } else {
      std::memcpy(&wb[i * 4], &w[i], 4);
    }
  }
  auto wdev = DeviceBuffer::alloc(wb.size());
  auto bdev = DeviceBuffer::alloc(bias.size() * 4);
  if (!wdev.ok() || !bdev.ok()) {
    r.status = internal_error("weight allocation failed");
    return r;
  }
  if (test::to_device(wdev->data(), wb.data(), wb.size()) != cudaSuccess ||
      test::to_device(bdev->data(), bias.data(), bias.size() * 4) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess) {
    r.status = internal_error("weight upload failed");
    return r;
  }
  ConvParams p;
  p.filters = cc.filters;
  p.activation = cc.act;
  auto conv = ConcatConv::create(p, precision, views.data(), int(views.size()), y.view());
  if (!conv.ok()) {
    r.status = conv.status();
    return r;
  }
  r.status = (*conv)->run(blas->get(), views.data(), int(views.size()), wdev->data(),
                          static_cast<const float*>(bdev->data()), y.view(), s);
  if (!r.status.ok()) return r;
  int64_t first = -1;
  if (y.download(&r.got, &r.outside_touched, &first, s) != cudaSuccess) r.status = internal_error("download failed");
  return r;
}

TEST(ConcatConvGpu, MatchesTheConvOfTheConcatenation) {
  DLR_REQUIRE_GPU();
  const std::vector<Case> cases = {
      {{64, 64}, 1, 38, 38, 64, Activation::kMish},           // yolov4's CSP route + 1x1 conv, smaller
      {{32, 48, 16, 64}, 3, 9, 11, 40, Activation::kLeaky},   // SPP-like: four parts, batch 3
      {{3, 5, 8}, 2, 7, 5, 6, Activation::kLinear},           // odd channel counts (unaligned columns)
      {{128, 256}, 1, 19, 19, 255, Activation::kLogistic},    // head-like: 255 filters
  };
  int ran = 0;
  for (const Case& cc : cases)
    for (DType dt : {DType::kF16, DType::kF32})
      for (bool slice : {false, true}) {
        const bool half = dt == DType::kF16;
        const Precision precision = half ? Precision::kFP16 : Precision::kFP32;
        int c = 0;
        for (int k : cc.parts) c += k;
        std::vector<HostTensor> xs;
        HostTensor cat(cc.n, {c, cc.h, cc.w});
        int off = 0;
        for (size_t i = 0; i < cc.parts.size(); ++i) {
          HostTensor x = test::random_tensor(cc.n, {cc.parts[i], cc.h, cc.w}, uint32_t(17 + i), -1.f, 1.f);
          if (half) test::round_to_half(&x);
          for (int b = 0; b < cc.n; ++b)
            for (int k = 0; k < cc.parts[i]; ++k)
              for (int yy = 0; yy < cc.h; ++yy)
                for (int xx = 0; xx < cc.w; ++xx) cat.at(b, off + k, yy, xx) = x.at(b, k, yy, xx);
          off += cc.parts[i];
          xs.push_back(std::move(x));
        }
        std::vector<float> w(size_t(cc.filters) * size_t(c)), bias(size_t(cc.filters));
        const float a = std::sqrt(3.f / float(c));
        test::fill_random(&w, 5, -a, a);
        test::fill_random(&bias, 6, -0.5f, 0.5f);
        if (half)
          for (float& v : w) v = half_to_float(float_to_half(v));
        ConvParams p;
        p.filters = cc.filters;
        p.activation = cc.act;
        HostTensor want(cc.n, {cc.filters, cc.h, cc.w});
        std::vector<float> scratch(
            size_t(std::max<int64_t>(1, cpu::conv2d_scratch_floats(p, cat.shape, want.shape, 1))));
        cpu::conv2d(p, cat.view(), w.data(), bias.data(), want.view(), scratch.data(), 1);
        const std::string what = std::to_string(cc.parts.size()) + " parts, " + dtype_name(dt) +
                                 (slice ? " slices" : " packed") + ", batch " + std::to_string(cc.n);
        const GpuRun r = run_gpu(cc, dt, precision, slice, xs, w, bias);
        ASSERT_TRUE(r.status.ok()) << what << ": " << r.status.to_string();
        EXPECT_EQ(r.outside_touched, 0) << what;
        EXPECT_TRUE(test::near_rel(r.got, want, half ? 5e-3 : 1e-5, what));
        ++ran;
      }
  EXPECT_EQ(ran, 16);
}

TEST(ConcatConvGpu, RefusesWhatItCannotRun) {
  TensorView part = TensorView::packed(nullptr, DType::kF16, Layout::kNHWC, 1, {8, 4, 4});
  TensorView out = TensorView::packed(nullptr, DType::kF16, Layout::kNHWC, 1, {16, 4, 4});
  TensorView parts[2] = {part, part};
  ConvParams p;
  p.filters = 16;
  EXPECT_TRUE(ConcatConv::create(p, Precision::kFP16, parts, 2, out).ok());
  ConvParams k3 = p;
  k3.size = 3;
  k3.padding = 1;
  EXPECT_EQ(ConcatConv::create(k3, Precision::kFP16, parts, 2, out).status().message(),
            "conv over a concatenation: needs a 1x1 kernel, stride 1, no padding and groups 1 (got size 3, groups 1)");
  const std::string part_error = "conv over a concatenation: part 1 must be NHWC with images packed, of the output's "
                                 "dtype, batch and size";
  TensorView nchw = part;
  nchw.layout = Layout::kNCHW;
  TensorView mixed[2] = {part, nchw};
  EXPECT_EQ(ConcatConv::create(p, Precision::kFP16, mixed, 2, out).status().message(), part_error);
  TensorView f32 = part;
  f32.dtype = DType::kF32;
  TensorView dtypes[2] = {part, f32};
  EXPECT_EQ(ConcatConv::create(p, Precision::kFP16, dtypes, 2, out).status().message(), part_error);
  EXPECT_EQ(ConcatConv::create(p, Precision::kFP16, parts, 0, out).status().message(),
            "conv over a concatenation: no parts");
  ConvParams wide = p;
  wide.filters = 32;
  EXPECT_EQ(ConcatConv::create(wide, Precision::kFP16, parts, 2, out).status().message(),
            "conv over a concatenation: output channels differ from filters");
}

}  // namespace
}  // namespace dlr::cuda
