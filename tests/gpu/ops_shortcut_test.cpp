// dlr::cuda::shortcut against cpu::shortcut (Darknet's multilayer rule): one and
// two `from` tensors, a `from` with fewer channels (only the first channels are
// added) or more channels, other spatial sizes (the flat NCHW index rule), 0 and
// kMaxShortcutFrom `from` tensors, linear / leaky / mish / logistic, out separate
// or in place (out == prev), every standard geometry cycled over prev, from and
// out (mixed layouts and dtypes in one call). f32 out: rel L2 err <= 1e-5;
// f16 out: <= 2e-3 (reference on f16-rounded inputs).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

struct ShortcutCase {
  std::string name;
  Shape3 out;                // = prev shape
  std::vector<Shape3> from;  // shapes of the from tensors
  Activation act;
};

class ShortcutTest : public GpuTest {
 protected:
  // same_spec: prev, every from and out use one geometry (the flat kernel's case
  // when it stores images as single blocks); else the geometries are cycled.
  void run_case(const ShortcutCase& sc, int n, bool in_place, size_t spec_offset, uint32_t seed,
                bool same_spec = false) {
    const std::vector<ViewSpec> specs = standard_specs();
    const ViewSpec prev_spec = specs[spec_offset % specs.size()];
    const ViewSpec out_spec = in_place || same_spec ? prev_spec : specs[(spec_offset + 3) % specs.size()];
    std::string what = "shortcut " + sc.name + " " + activation_name(sc.act) + " " + shape_str(n, sc.out) +
                       (in_place ? " in place" : "") + ", prev " + describe(prev_spec);

    HostTensor prev = random_tensor(n, sc.out, seed);
    if (prev_spec.dtype == DType::kF16) round_to_half(&prev);
    std::vector<HostTensor> from;
    std::vector<ViewSpec> from_specs;
    for (size_t i = 0; i < sc.from.size(); ++i) {
      from_specs.push_back(same_spec ? prev_spec : specs[(spec_offset + 5 + 3 * i) % specs.size()]);
      from.push_back(random_tensor(n, sc.from[i], seed + 1 + uint32_t(i)));
      if (from_specs.back().dtype == DType::kF16) round_to_half(&from.back());
      what += ", from " + shape_str(n, sc.from[i]) + " " + describe(from_specs.back());
    }
    what += ", out " + describe(out_spec);

    HostTensor want(n, sc.out);
    std::vector<TensorView> from_views;
    for (HostTensor& f : from) from_views.push_back(f.view());
    cpu::shortcut(prev.view(), from_views.data(), int(from_views.size()), sc.act, want.view());

    DeviceTensor dprev, dout;
    std::vector<DeviceTensor> dfrom(from.size());
    ASSERT_EQ(cudaSuccess, dprev.upload(prev, prev_spec, stream())) << what;
    std::vector<TensorView> dfrom_views;
    for (size_t i = 0; i < from.size(); ++i) {
      ASSERT_EQ(cudaSuccess, dfrom[i].upload(from[i], from_specs[i], stream())) << what;
      dfrom_views.push_back(dfrom[i].view());
    }
    if (!in_place) {
      ASSERT_EQ(cudaSuccess, dout.create(n, sc.out, out_spec, stream())) << what;
    }
    const DeviceTensor& result = in_place ? dprev : dout;
    const Status st = cuda::shortcut(dprev.view(), dfrom_views.data(), int(dfrom_views.size()), sc.act,
                                     result.view(), stream());
    EXPECT_TRUE(st.ok()) << what << ": " << st.to_string();
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream())) << what;
    HostTensor got;
    int64_t outside = 0, first_outside = -1;
    ASSERT_EQ(cudaSuccess, result.download(&got, &outside, &first_outside, stream())) << what;
    EXPECT_TRUE(near_rel(got, want, out_spec.dtype == DType::kF16 ? 2e-3 : 1e-5, what));
    EXPECT_TRUE(untouched_outside(outside, first_outside, what));
  }
};

TEST_F(ShortcutTest, MultilayerRule) {
  const std::vector<ShortcutCase> cases = {
      {"one from", {8, 13, 13}, {{8, 13, 13}}, Activation::kLinear},
      {"one from", {6, 7, 5}, {{6, 7, 5}}, Activation::kLeaky},
      {"two from", {8, 7, 5}, {{8, 7, 5}, {8, 7, 5}}, Activation::kMish},
      {"two from", {3, 1, 1}, {{3, 1, 1}, {3, 1, 1}}, Activation::kLogistic},
      {"from with fewer channels", {8, 7, 5}, {{5, 7, 5}}, Activation::kLinear},
      {"fewer + equal channels", {8, 13, 13}, {{3, 13, 13}, {8, 13, 13}}, Activation::kLeaky},
      {"from with more channels", {4, 7, 5}, {{7, 7, 5}}, Activation::kLinear},
      {"spatial mismatch: first 75 flat elements", {4, 6, 6}, {{3, 5, 5}}, Activation::kLinear},
      {"spatial mismatch, larger from", {2, 3, 4}, {{5, 4, 4}, {2, 3, 4}}, Activation::kLeaky},
      {"no from", {5, 7, 5}, {}, Activation::kMish},
      {"kMaxShortcutFrom from", {4, 5, 3},
       std::vector<Shape3>(size_t(cuda::kMaxShortcutFrom), Shape3{4, 5, 3}), Activation::kLinear},
  };
  uint32_t seed = 4000;
  for (size_t k = 0; k < cases.size(); ++k) {
    for (size_t off = 0; off < 8; ++off) {
      const int n = 1 + int((k + off) % 2);
      run_case(cases[k], n, /*in_place=*/off % 3 == 1, k + off, seed);
      seed += 20;
      if (HasFatalFailure()) return;
    }
  }
}

// Every view in the same geometry: packed NCHW / NHWC and NCHW slices take the
// flat kernel, NHWC slices and from tensors of another shape the general one.
TEST_F(ShortcutTest, SameGeometryEverywhere) {
  const std::vector<ShortcutCase> cases = {
      {"one from", {8, 13, 13}, {{8, 13, 13}}, Activation::kLinear},
      {"two from", {6, 7, 5}, {{6, 7, 5}, {6, 7, 5}}, Activation::kMish},
      {"fewer channels", {8, 7, 5}, {{5, 7, 5}, {8, 7, 5}}, Activation::kLeaky},
      {"no from", {3, 4, 5}, {}, Activation::kLogistic},
  };
  uint32_t seed = 4500;
  for (size_t k = 0; k < cases.size(); ++k) {
    for (size_t s = 0; s < 8; ++s) {
      for (bool in_place : {false, true}) {
        run_case(cases[k], 1 + int((k + s) % 2), in_place, s, seed, /*same_spec=*/true);
        seed += 20;
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_F(ShortcutTest, TooManyFromIsUnsupported) {
  DeviceTensor d;
  ASSERT_EQ(cudaSuccess, d.create(1, {2, 3, 3}, packed_spec(DType::kF32, Layout::kNCHW), stream()));
  std::vector<TensorView> from(size_t(cuda::kMaxShortcutFrom + 1), d.view());
  const Status st = cuda::shortcut(d.view(), from.data(), int(from.size()), Activation::kLinear, d.view(), stream());
  EXPECT_EQ(StatusCode::kUnsupported, st.code()) << st.to_string();
}

}  // namespace
}  // namespace dlr::test
