// dlr::cuda::maxpool, upsample and copy_channels against cpu::maxpool,
// cpu::upsample and cpu::copy_channels. These ops do no arithmetic beyond a max,
// a copy or one multiply, so every output must be BIT-IDENTICAL to the CPU
// reference (computed on the f16-rounded input when the input view is f16): an f32
// output equal to it, an f16 output equal to it rounded to half (the kernels compute
// in f32 and store with round-to-nearest-even; max and copy commute with that
// rounding, and upsample's one multiply is done in f32 on both sides before the one
// rounding). No tolerance: any difference is a bug. Input and output views cycle
// through every standard geometry (packed / channel slice with n padding,
// NCHW / NHWC, f32 / f16); bytes outside the output view must stay untouched.
#include <gtest/gtest.h>

#include <cmath>

#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

::testing::AssertionResult matches(const HostTensor& got, const HostTensor& want, const ViewSpec& out_spec,
                                   const std::string& what) {
  if (out_spec.dtype == DType::kF32) return bit_equal(got, want, what);
  HostTensor rounded = want;
  round_to_half(&rounded);
  return bit_equal(got, rounded, what + " (f16 output: the f32 reference rounded to half)");
}

std::string pool_str(const MaxPoolParams& p) {
  return "size " + std::to_string(p.size) + " stride " + std::to_string(p.stride_x) + "x" +
         std::to_string(p.stride_y) + " pad " + std::to_string(p.padding);
}

class PoolCopyTest : public GpuTest {
 protected:
  // Uploads `x` with in_spec, runs `op(in_view, out_view)`, compares with `want`.
  template <class Op>
  void run(const HostTensor& x, const ViewSpec& in_spec, const HostTensor& want, const ViewSpec& out_spec,
           const std::string& what, Op op) {
    DeviceTensor din, dout;
    ASSERT_EQ(cudaSuccess, din.upload(x, in_spec, stream())) << what;
    ASSERT_EQ(cudaSuccess, dout.create(want.n, want.shape, out_spec, stream())) << what;  // poisoned
    const Status st = op(din.view(), dout.view());
    EXPECT_TRUE(st.ok()) << what << ": " << st.to_string();
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream())) << what;
    HostTensor got;
    int64_t outside = 0, first_outside = -1;
    ASSERT_EQ(cudaSuccess, dout.download(&got, &outside, &first_outside, stream())) << what;
    EXPECT_TRUE(matches(got, want, out_spec, what));
    EXPECT_TRUE(untouched_outside(outside, first_outside, what));
  }

  void maxpool_case(const MaxPoolParams& p, int n, Shape3 in_shape, const ViewSpec& in_spec,
                    const ViewSpec& out_spec, uint32_t seed) {
    const Shape3 out_shape{in_shape.c, (in_shape.h + p.padding - p.size) / p.stride_y + 1,
                           (in_shape.w + p.padding - p.size) / p.stride_x + 1};
    const std::string what = "maxpool " + pool_str(p) + " " + shape_str(n, in_shape) + " -> " +
                             shape_str(n, out_shape) + ", in " + describe(in_spec) + ", out " + describe(out_spec);
    HostTensor x = random_tensor(n, in_shape, seed, -5.f, 1.f);  // mostly negative: padding must not win
    if (seed % 3 == 0) {  // ties of signed zeros and NaN taps: the first strict maximum must win, NaN never
      for (size_t i = 0; i < x.data.size(); ++i) {
        const uint32_t h = uint32_t(i) * 2654435761u + seed;
        if (h % 5 == 0) x.data[i] = (h >> 8) % 2 ? 0.f : -0.f;
        if (h % 17 == 0) x.data[i] = std::nanf("");
      }
    }
    if (in_spec.dtype == DType::kF16) round_to_half(&x);
    HostTensor want(n, out_shape);
    cpu::maxpool(p, x.view(), want.view());
    run(x, in_spec, want, out_spec, what, [&](const TensorView& in, const TensorView& out) {
      return cuda::maxpool(p, in, out, stream());
    });
  }
};

TEST_F(PoolCopyTest, MaxPoolDarknetCases) {
  struct PoolCase {
    MaxPoolParams p;
    Shape3 in;
  };
  // {size, stride_x, stride_y, padding}; padding is Darknet's default size-1 unless noted.
  const PoolCase cases[] = {
      {{2, 2, 2, 1}, {4, 13, 13}},   // yolov3-tiny / v4-tiny 2/2: 13 -> 7 (right/bottom padded)
      {{2, 2, 2, 1}, {3, 26, 26}},   // 26 -> 13
      {{2, 2, 2, 1}, {5, 7, 5}},     // odd: 7x5 -> 4x3
      {{2, 2, 2, 1}, {2, 1, 1}},     // 1x1 -> 1x1
      {{2, 1, 1, 1}, {4, 13, 13}},   // yolov3-tiny layer 11: 2/1, 13 -> 13
      {{2, 1, 1, 1}, {3, 7, 5}},
      {{5, 1, 1, 4}, {3, 13, 13}},   // SPP 5/9/13, stride 1, same size
      {{9, 1, 1, 8}, {3, 13, 13}},
      {{13, 1, 1, 12}, {3, 13, 13}},
      {{5, 1, 1, 4}, {2, 7, 5}},
      {{9, 1, 1, 8}, {2, 7, 5}},
      {{13, 1, 1, 12}, {2, 7, 5}},   // window larger than the image
      {{3, 2, 2, 2}, {4, 13, 13}},   // 3/2: 13 -> 7
      {{3, 2, 2, 2}, {3, 8, 7}},
      {{2, 2, 2, 0}, {3, 7, 5}},     // explicit padding=0: 7x5 -> 3x2
      {{2, 2, 1, 1}, {3, 7, 6}},     // stride_x != stride_y
      {{1, 1, 1, 0}, {3, 5, 4}},     // identity
      // stride 1: larger planes, more columns than a block
      {{5, 1, 1, 4}, {40, 19, 19}},  // yolov4's SPP at 608 (fewer channels)
      {{13, 1, 1, 12}, {6, 19, 21}},
      {{9, 1, 1, 8}, {5, 17, 9}},
      {{3, 1, 1, 2}, {4, 20, 9}},
      {{7, 1, 1, 6}, {3, 17, 10}},
      {{13, 1, 1, 4}, {2, 11, 12}},  // padding smaller than the window: a smaller output
      {{4, 1, 1, 3}, {3, 9, 9}},     // an even window
  };
  const std::vector<ViewSpec> specs = standard_specs();
  uint32_t seed = 1000;
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); ++k) {
    for (size_t i = 0; i < specs.size(); ++i) {
      const int n = 1 + int((i + k) % 2);
      maxpool_case(cases[k].p, n, cases[k].in, specs[i], specs[(i + k + 3) % specs.size()], seed++);
      if (HasFatalFailure()) return;
    }
  }
}

// NHWC views with channels and strides in whole 16-byte groups take maxpool's vector
// path; the same bits as the CPU reference are expected there (signed-zero ties and NaN taps
// included), and views one element off the groups must fall back and agree too.
TEST_F(PoolCopyTest, MaxPoolVectorPathSameBits) {
  const MaxPoolParams pools[] = {{5, 1, 1, 4}, {9, 1, 1, 8}, {13, 1, 1, 12}, {2, 2, 2, 1}, {3, 2, 2, 2}};
  const Shape3 shapes[] = {{16, 19, 19}, {64, 13, 13}, {8, 7, 5}, {24, 1, 1}, {8, 48, 40}};
  const std::vector<std::pair<ViewSpec, ViewSpec>> pairs = {
      {{DType::kF16, Layout::kNHWC, 0, 0, 0}, {DType::kF16, Layout::kNHWC, 0, 0, 0}},
      {{DType::kF16, Layout::kNHWC, 8, 16, 8}, {DType::kF16, Layout::kNHWC, 24, 8, 0}},  // route slices
      {{DType::kF32, Layout::kNHWC, 0, 0, 0}, {DType::kF32, Layout::kNHWC, 4, 4, 12}},
      {{DType::kF16, Layout::kNHWC, 1, 7, 0}, {DType::kF16, Layout::kNHWC, 0, 0, 0}},  // unaligned in: fallback
      {{DType::kF16, Layout::kNHWC, 0, 0, 0}, {DType::kF16, Layout::kNHWC, 0, 0, 3}},  // odd n_stride: fallback
  };
  uint32_t seed = 3000;  // multiples of 3 add signed-zero ties and NaN taps
  for (const MaxPoolParams& p : pools)
    for (const Shape3& s : shapes)
      for (const auto& io : pairs) {
        const int n = 1 + int(seed % 2);
        maxpool_case(p, n, s, io.first, io.second, seed++);
        if (HasFatalFailure()) return;
      }
}

TEST_F(PoolCopyTest, MaxPoolRejectsWrongOutputShape) {
  DeviceTensor din, dout;
  ASSERT_EQ(cudaSuccess, din.create(1, {3, 13, 13}, packed_spec(DType::kF32, Layout::kNCHW), stream()));
  ASSERT_EQ(cudaSuccess, dout.create(1, {3, 6, 6}, packed_spec(DType::kF32, Layout::kNCHW), stream()));
  const Status st = cuda::maxpool(MaxPoolParams{2, 2, 2, 1}, din.view(), dout.view(), stream());
  EXPECT_FALSE(st.ok()) << "13x13 2/2 pad 1 must give 7x7, not 6x6";
}

TEST_F(PoolCopyTest, Upsample) {
  struct UpCase {
    UpsampleParams p;
    Shape3 in;
  };
  const UpCase cases[] = {
      {{2, 1.f}, {5, 13, 13}}, {{2, 1.f}, {3, 7, 5}}, {{2, 1.f}, {4, 1, 1}},
      {{3, 0.5f}, {3, 5, 4}},  {{1, 2.f}, {3, 4, 3}}, {{2, 0.3f}, {6, 3, 7}},
  };
  const std::vector<ViewSpec> specs = standard_specs();
  uint32_t seed = 2000;
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); ++k) {
    const UpCase& uc = cases[k];
    const Shape3 out_shape{uc.in.c, uc.in.h * uc.p.stride, uc.in.w * uc.p.stride};
    for (size_t i = 0; i < specs.size(); ++i) {
      const int n = 1 + int((i + k) % 2);
      const ViewSpec& is = specs[i];
      const ViewSpec& os = specs[(i + 2 * k + 1) % specs.size()];
      const std::string what = "upsample stride " + std::to_string(uc.p.stride) + " scale " +
                               std::to_string(uc.p.scale) + " " + shape_str(n, uc.in) + ", in " + describe(is) +
                               ", out " + describe(os);
      HostTensor x = random_tensor(n, uc.in, seed++);
      if (is.dtype == DType::kF16) round_to_half(&x);
      HostTensor want(n, out_shape);
      cpu::upsample(uc.p, x.view(), want.view());
      run(x, is, want, os, what, [&](const TensorView& in, const TensorView& out) {
        return cuda::upsample(uc.p, in, out, stream());
      });
      if (HasFatalFailure()) return;
    }
  }
}

// NHWC views of whole 16-byte channel groups take upsample's vector path (into a route's
// slice, as yolov4's upsamples); one view off the groups falls back. Same bits expected.
TEST_F(PoolCopyTest, UpsampleVectorPath) {
  const UpsampleParams params[] = {{2, 1.f}, {2, 0.3f}, {3, 2.f}};
  const Shape3 shapes[] = {{16, 13, 13}, {8, 3, 5}, {32, 1, 1}};
  const std::vector<std::pair<ViewSpec, ViewSpec>> pairs = {
      {{DType::kF16, Layout::kNHWC, 0, 0, 0}, {DType::kF16, Layout::kNHWC, 8, 16, 8}},
      {{DType::kF32, Layout::kNHWC, 4, 0, 4}, {DType::kF32, Layout::kNHWC, 0, 0, 0}},
      {{DType::kF16, Layout::kNHWC, 1, 7, 0}, {DType::kF16, Layout::kNHWC, 0, 0, 0}},  // unaligned in: fallback
  };
  uint32_t seed = 2500;
  for (const UpsampleParams& up : params)
    for (const Shape3& s : shapes)
      for (const auto& io : pairs) {
        const int n = 1 + int(seed % 2);
        const Shape3 out_shape{s.c, s.h * up.stride, s.w * up.stride};
        HostTensor x = random_tensor(n, s, seed++);
        if (io.first.dtype == DType::kF16) round_to_half(&x);
        HostTensor want(n, out_shape);
        cpu::upsample(up, x.view(), want.view());
        const std::string what = "upsample stride " + std::to_string(up.stride) + " " + shape_str(n, s) + ", in " +
                                 describe(io.first) + ", out " + describe(io.second);
        run(x, io.first, want, io.second, what, [&](const TensorView& in, const TensorView& out) {
          return cuda::upsample(up, in, out, stream());
        });
        if (HasFatalFailure()) return;
      }
}

// Every (src, dst) pair of standard geometries: same dtype+layout takes the
// cudaMemcpy / cudaMemcpy2D paths (packed, NCHW slices with n_stride > c*h*w,
// batch 1 and 2), the other pairs the conversion kernel.
TEST_F(PoolCopyTest, CopyChannelsAllPairs) {
  const std::vector<ViewSpec> specs = standard_specs();
  const Shape3 shapes[] = {{5, 7, 5}, {3, 13, 13}, {4, 1, 1}};
  uint32_t seed = 3000;
  for (size_t i = 0; i < specs.size(); ++i) {
    for (size_t j = 0; j < specs.size(); ++j) {
      for (int n = 1; n <= 2; ++n) {
        const Shape3 s = shapes[(i + j + size_t(n)) % 3];
        const std::string what = "copy_channels " + shape_str(n, s) + ", src " + describe(specs[i]) + ", dst " +
                                 describe(specs[j]);
        HostTensor x = random_tensor(n, s, seed++);
        if (specs[i].dtype == DType::kF16) round_to_half(&x);
        HostTensor want(n, s);
        cpu::copy_channels(x.view(), want.view());
        run(x, specs[i], want, specs[j], what, [&](const TensorView& in, const TensorView& out) {
          return cuda::copy_channels(in, out, stream());
        });
        if (HasFatalFailure()) return;
      }
    }
  }
}

// NHWC views of whole 16-byte channel groups (a route's slices) take copy_channels' vector
// path; a view off the groups falls back to the element kernel. A copy: the same bits.
TEST_F(PoolCopyTest, CopyChannelsVectorPath) {
  const Shape3 shapes[] = {{16, 13, 13}, {8, 3, 5}, {64, 1, 1}};
  const std::vector<std::pair<ViewSpec, ViewSpec>> pairs = {
      {{DType::kF16, Layout::kNHWC, 0, 0, 0}, {DType::kF16, Layout::kNHWC, 8, 16, 8}},
      {{DType::kF16, Layout::kNHWC, 16, 8, 0}, {DType::kF16, Layout::kNHWC, 0, 8, 24}},
      {{DType::kF32, Layout::kNHWC, 4, 0, 4}, {DType::kF32, Layout::kNHWC, 0, 4, 0}},
      {{DType::kF16, Layout::kNHWC, 1, 7, 0}, {DType::kF16, Layout::kNHWC, 8, 0, 0}},  // unaligned src: fallback
  };
  uint32_t seed = 4000;
  for (const Shape3& s : shapes)
    for (const auto& io : pairs)
      for (int n = 1; n <= 3; n += 2) {
        HostTensor x = random_tensor(n, s, seed++);
        if (io.first.dtype == DType::kF16) round_to_half(&x);
        const std::string what = "copy_channels " + shape_str(n, s) + ", src " + describe(io.first) + ", dst " +
                                 describe(io.second);
        run(x, io.first, x, io.second, what, [&](const TensorView& in, const TensorView& out) {
          return cuda::copy_channels(in, out, stream());
        });
        if (HasFatalFailure()) return;
      }
}

}  // namespace
}  // namespace dlr::test
