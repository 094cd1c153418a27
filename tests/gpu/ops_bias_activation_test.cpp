// dlr::cuda::bias_activation against cpu::bias_activate_array / activate_array:
// every Activation, with and without bias, every standard view geometry
// (packed / channel slice with n padding, NCHW / NHWC, f32 / f16), odd shapes,
// batch 1 and 2. f32: rel L2 err <= 1e-5; f16: <= 2e-3 (reference computed on the
// f16-rounded input). Bytes outside the view must stay untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_handles.h"
#include "kernels/cuda/cuda_ops.h"
#include "runtime/core/half.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

const Activation kAllActivations[] = {
    Activation::kLinear, Activation::kLeaky, Activation::kLogistic, Activation::kRelu,
    Activation::kRelu6,  Activation::kElu,   Activation::kSelu,     Activation::kGelu,
    Activation::kTanh,   Activation::kSwish, Activation::kMish,     Activation::kHardMish,
};

class BiasActivationTest : public GpuTest {
 protected:
  void run_case(Activation act, int n, Shape3 shape, const ViewSpec& spec, bool with_bias, uint32_t seed) {
    const std::string what = std::string("bias_activation ") + activation_name(act) + (with_bias ? " +bias " : " ") +
                             shape_str(n, shape) + " " + describe(spec);
    HostTensor x = random_tensor(n, shape, seed, -6.f, 6.f);
    // Values around the thresholds of mish/softplus (|x| = 20), relu6 (6), hard_mish (-2), and zero.
    const float specials[] = {21.f, -21.f, 30.f, -30.f, 6.5f, -2.5f, -1.5f, 0.f, 19.5f, -19.5f};
    for (size_t i = 0; i < x.data.size(); i += 7) x.data[i] = specials[(i / 7) % 10];
    std::vector<float> bias(size_t(shape.c));
    fill_random(&bias, seed + 1, -1.f, 1.f);
    if (spec.dtype == DType::kF16) round_to_half(&x);

    HostTensor want = x;
    const int64_t plane = int64_t(shape.h) * shape.w;
    for (int b = 0; b < n; ++b)
      for (int c = 0; c < shape.c; ++c) {
        float* p = &want.at(b, c, 0, 0);
        if (with_bias) {
          cpu::bias_activate_array(act, bias[size_t(c)], p, plane);
        } else {
          cpu::activate_array(act, p, plane);
        }
      }

    DeviceTensor dx;
    ASSERT_EQ(cudaSuccess, dx.upload(x, spec, stream())) << what;
    float* dbias = nullptr;
    ASSERT_EQ(cudaSuccess, cudaMalloc(reinterpret_cast<void**>(&dbias), bias.size() * sizeof(float))) << what;
    ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(dbias, bias.data(), bias.size() * sizeof(float), cudaMemcpyHostToDevice,
                                           stream()));
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream()));
    const Status st = cuda::bias_activation(dx.view(), with_bias ? dbias : nullptr, act, stream());
    EXPECT_TRUE(st.ok()) << what << ": " << st.to_string();
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream())) << what;
    HostTensor got;
    int64_t outside = 0, first_outside = -1;
    ASSERT_EQ(cudaSuccess, dx.download(&got, &outside, &first_outside, stream())) << what;
    ASSERT_EQ(cudaSuccess, cudaFree(dbias));
    EXPECT_TRUE(near_rel(got, want, spec.dtype == DType::kF16 ? 2e-3 : 1e-5, what));
    EXPECT_TRUE(untouched_outside(outside, first_outside, what));
  }
};

TEST_F(BiasActivationTest, EveryActivationEveryGeometry) {
  const std::vector<ViewSpec> specs = standard_specs();
  const Shape3 shapes[] = {{5, 7, 5}, {3, 13, 13}, {9, 1, 1}, {16, 4, 6}};
  uint32_t seed = 100;
  for (Activation act : kAllActivations) {
    for (size_t i = 0; i < specs.size(); ++i) {
      const Shape3 s = shapes[i % 4];
      const int n = 1 + int(i % 2);
      run_case(act, n, s, specs[i], /*with_bias=*/true, seed++);
      if (HasFatalFailure()) return;
      run_case(act, 2 - int(i % 2), shapes[(i + 1) % 4], specs[i], /*with_bias=*/false, seed++);
      if (HasFatalFailure()) return;
    }
  }
}

// Grid-stride loops of the three kernels: more elements per image (>= 64*130*131
// = 1,089,920) than one grid covers (4096 blocks x 256 threads = 1,048,576) for
// the NHWC kernels (packed: c = 67 does not divide the thread count; slice: the
// general kernel), and more (image, channel) planes (2 x 35000) than grid.y
// allows (65535) for the NCHW kernel.
TEST_F(BiasActivationTest, GridStrideLoops) {
  run_case(Activation::kMish, 2, {64, 130, 131}, {DType::kF32, Layout::kNCHW, 1, 2, 3}, true, 7);
  if (HasFatalFailure()) return;
  run_case(Activation::kLeaky, 2, {64, 130, 131}, {DType::kF16, Layout::kNHWC, 3, 1, 5}, true, 8);
  if (HasFatalFailure()) return;
  run_case(Activation::kLogistic, 2, {67, 130, 131}, {DType::kF16, Layout::kNHWC, 0, 0, 0}, true, 9);
  if (HasFatalFailure()) return;
  run_case(Activation::kSwish, 2, {35000, 1, 2}, {DType::kF32, Layout::kNCHW, 0, 0, 0}, true, 10);
}

// The 16-byte kernels (NHWC packed images of whole 8-channel f16 / 4-channel f32 groups;
// NCHW planes of whole groups, channel slices too) against the general kernel (the same
// values in an NHWC channel slice, which the fast kernels do not take): the same bits for
// every activation, with and without bias and residual (activations and residual
// activations the 16-byte kernels have no instance of fall back, and so do NCHW planes of
// one pixel).
TEST_F(BiasActivationTest, GroupsOf16BytesGiveTheGeneralKernelsBits) {
  const Shape3 shapes[] = {{16, 8, 6}, {64, 4, 4}, {8, 1, 1}};
  std::vector<float> bias(64);
  fill_random(&bias, 3, -1.f, 1.f);
  auto dbias = cuda::DeviceBuffer::alloc(bias.size() * 4);
  ASSERT_TRUE(dbias.ok());
  ASSERT_EQ(cudaSuccess, to_device(dbias->data(), bias.data(), bias.size() * 4));
  const float* b = static_cast<const float*>(dbias->data());
  uint32_t seed = 500;
  for (DType dt : {DType::kF16, DType::kF32})
    for (Activation act : kAllActivations)
      for (int variant = 0; variant < 4; ++variant) {  // bias; no bias; bias and a residual, linear or leaky after
        const Shape3 shape = shapes[seed % 3];
        HostTensor x = random_tensor(2, shape, seed, -6.f, 6.f);
        const float specials[] = {21.f, -21.f, 30.f, -0.f, 6.5f, -2.5f, -1.5f, 0.f, 19.5f, -19.5f};
        for (size_t i = 0; i < x.data.size(); i += 5) x.data[i] = specials[(i / 5) % 10];
        HostTensor r = random_tensor(2, shape, seed + 1, -3.f, 3.f);
        if (dt == DType::kF16) round_to_half(&x), round_to_half(&r);
        // general (NHWC slice), then the fast geometries with a residual of their layout
        const ViewSpec specs[] = {{dt, Layout::kNHWC, 1, 2, 3}, {dt, Layout::kNHWC, 0, 0, 0},
                                  {dt, Layout::kNCHW, 2, 1, 8}};
        const Activation post = variant == 2 ? Activation::kLinear : Activation::kLeaky;
        HostTensor got[3];
        for (int k = 0; k < 3; ++k) {
          DeviceTensor t, res;
          ASSERT_EQ(cudaSuccess, t.upload(x, specs[k], stream()));
          ASSERT_EQ(cudaSuccess, res.upload(r, packed_spec(dt, specs[k].layout), stream()));
          const Status st = variant >= 2 ? cuda::bias_activation_add(t.view(), b, act, res.view(), post, stream())
                                         : cuda::bias_activation(t.view(), variant == 1 ? nullptr : b, act, stream());
          ASSERT_TRUE(st.ok()) << st.to_string();
          int64_t outside = 0, first = -1;
          ASSERT_EQ(cudaSuccess, t.download(&got[k], &outside, &first, stream()));
          EXPECT_TRUE(untouched_outside(outside, first, describe(specs[k])));
        }
        for (int k = 1; k < 3; ++k)
          EXPECT_TRUE(bit_equal(got[k], got[0],
                                std::string("bias_activation ") + activation_name(act) + " variant " +
                                    std::to_string(variant) + " " + shape_str(2, shape) + " " + describe(specs[k])));
        ++seed;
      }
}

// activate_f16 (activation.cuh): every f16 value in [-24, 24] through mish, swish and
// logistic, stored as f16, against the f32 kernel's value (the reference's formulas)
// rounded to f16 on the host. Within one f16 ulp everywhere, different in under 1 % of the
// values, and not biased one way (the counts up and down within 3 sigma of each other).
TEST_F(BiasActivationTest, F16ActivationsWithinOneUlpOfTheReference) {
  std::vector<float> xs;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float v = half_to_float(uint16_t(h));
    if (std::isfinite(v) && std::fabs(v) <= 24.f) xs.push_back(v);
  }
  HostTensor x(1, {1, 1, int(xs.size())});
  x.data = xs;
  for (Activation act : {Activation::kMish, Activation::kSwish, Activation::kLogistic}) {
    const std::string what = std::string("activate_f16 ") + activation_name(act);
    DeviceTensor d32, d16;
    ASSERT_EQ(cudaSuccess, d32.upload(x, packed_spec(DType::kF32, Layout::kNCHW), stream())) << what;
    ASSERT_EQ(cudaSuccess, d16.upload(x, packed_spec(DType::kF16, Layout::kNCHW), stream())) << what;
    ASSERT_TRUE(cuda::bias_activation(d32.view(), nullptr, act, stream()).ok()) << what;
    ASSERT_TRUE(cuda::bias_activation(d16.view(), nullptr, act, stream()).ok()) << what;
    HostTensor ref, got;
    int64_t outside = 0, first = -1;
    ASSERT_EQ(cudaSuccess, d32.download(&ref, &outside, &first, stream())) << what;
    ASSERT_EQ(cudaSuccess, d16.download(&got, &outside, &first, stream())) << what;
    int64_t up = 0, down = 0, far = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const uint16_t want = float_to_half(ref.data[i]), have = float_to_half(got.data[i]);
      if (want == have) continue;
      // adjacent f16 values: their bit patterns differ by one (same sign; +0 and -0 aside)
      const bool adjacent = (want ^ have) < 0x8000 && (want > have ? want - have : have - want) == 1;
      if (!adjacent && std::fabs(ref.data[i]) > 1e-7f) {
        if (far++ < 5) ADD_FAILURE() << what << " x " << xs[i] << ": " << got.data[i] << " vs " << ref.data[i];
        continue;
      }
      (got.data[i] > ref.data[i] ? up : down) += 1;
    }
    const double n = double(xs.size()), differ = double(up + down);
    std::printf("%s: %lld of %zu f16 values differ by one ulp (%lld up, %lld down), %lld further\n", what.c_str(),
                static_cast<long long>(up + down), xs.size(), static_cast<long long>(up),
                static_cast<long long>(down), static_cast<long long>(far));
    EXPECT_EQ(far, 0) << what;
    EXPECT_LT(differ, 0.01 * n) << what;
    EXPECT_LE(std::fabs(double(up - down)), 3.0 * std::sqrt(differ) + 3.0) << what << ": biased";
  }
}

}  // namespace
}  // namespace dlr::test
