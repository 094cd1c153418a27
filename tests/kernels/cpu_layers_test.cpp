// cpu::maxpool, upsample, copy_channels, shortcut and yolo against naive loops
// written from DARKNET.md (1.4-1.8, 4.4). Outputs are NaN-poisoned first and
// views are channel slices of larger buffers where the op allows it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "tests/kernels/cpu_act_ref.h"
#include "tests/kernels/cpu_test_util.h"

namespace dlr {
namespace {

using test::SlicedTensor;

// ---- maxpool ----

MaxPoolParams pool(int size, int stride_x, int stride_y, int padding) {
  MaxPoolParams p;
  p.size = size;
  p.stride_x = stride_x;
  p.stride_y = stride_y;
  p.padding = padding;
  return p;
}

// Darknet forward_maxpool_layer, literally.
std::vector<float> maxpool_reference(const MaxPoolParams& p, const SlicedTensor& in, Shape3 os) {
  std::vector<float> ref;
  const int off = -p.padding / 2;
  for (int b = 0; b < in.view.n; ++b)
    for (int k = 0; k < os.c; ++k)
      for (int i = 0; i < os.h; ++i)
        for (int j = 0; j < os.w; ++j) {
          float m = -FLT_MAX;
          for (int n = 0; n < p.size; ++n)
            for (int mm = 0; mm < p.size; ++mm) {
              const int y = off + i * p.stride_y + n, x = off + j * p.stride_x + mm;
              const bool valid = y >= 0 && y < in.view.h && x >= 0 && x < in.view.w;
              const float v = valid ? in.at(b, k, y, x) : -FLT_MAX;
              m = v > m ? v : m;
            }
          ref.push_back(m);
        }
  return ref;
}

void run_maxpool(const MaxPoolParams& p, int n, Shape3 is, Shape3 expect_out, uint32_t seed, int margin = 0) {
  SCOPED_TRACE(::testing::Message() << "size " << p.size << " stride " << p.stride_x << "," << p.stride_y << " pad "
                                    << p.padding << " in " << is.to_string());
  const Shape3 os{is.c, (is.h + p.padding - p.size) / p.stride_y + 1, (is.w + p.padding - p.size) / p.stride_x + 1};
  ASSERT_EQ(os, expect_out);
  std::mt19937 rng(seed);
  SlicedTensor in(n, is, margin, margin);
  in.fill_uniform(rng, -5.f, 5.f);
  SlicedTensor out(n, os, margin + 1, margin);
  out.poison();
  cpu::maxpool(p, in.view, out.view);
  EXPECT_EQ(out.non_finite(), 0);
  EXPECT_EQ(out.guard_damage(), 0);
  EXPECT_EQ(test::mismatches(out, maxpool_reference(p, in, os)), 0);
}

TEST(CpuMaxPool, DarknetCases) {
  // size 2 stride 2, default padding size-1 = 1 (offset 0): 416 -> 208, 13 -> 7
  run_maxpool(pool(2, 2, 2, 1), 1, {3, 416, 416}, {3, 208, 208}, 1);
  run_maxpool(pool(2, 2, 2, 1), 2, {5, 13, 13}, {5, 7, 7}, 2, 1);
  // yolov3-tiny layer 11: size 2 stride 1 pad 1: 13 -> 13, window [j, j+1]
  run_maxpool(pool(2, 1, 1, 1), 2, {4, 13, 13}, {4, 13, 13}, 3, 2);
  // SPP 5/9/13 stride 1, pad size-1
  for (int s : {5, 9, 13}) {
    run_maxpool(pool(s, 1, 1, s - 1), 1, {6, 13, 13}, {6, 13, 13}, 10 + uint32_t(s));
    run_maxpool(pool(s, 1, 1, s - 1), 2, {3, 7, 5}, {3, 7, 5}, 20 + uint32_t(s), 1);
    run_maxpool(pool(s, 1, 1, s - 1), 1, {2, 19, 38}, {2, 19, 38}, 30 + uint32_t(s));
  }
  // size 3 stride 2, default pad 2
  run_maxpool(pool(3, 2, 2, 2), 2, {3, 13, 13}, {3, 7, 7}, 4, 1);
  run_maxpool(pool(3, 2, 2, 2), 1, {3, 8, 7}, {3, 4, 4}, 5);
}

TEST(CpuMaxPool, OtherGeometries) {
  run_maxpool(pool(2, 2, 2, 0), 1, {2, 9, 8}, {2, 4, 4}, 6);      // no padding
  run_maxpool(pool(3, 2, 1, 2), 2, {3, 7, 9}, {3, 7, 5}, 7, 1);   // stride_x != stride_y
  run_maxpool(pool(3, 1, 2, 2), 1, {3, 7, 9}, {3, 4, 9}, 8);
  run_maxpool(pool(4, 3, 3, 3), 1, {2, 11, 10}, {2, 4, 4}, 9);    // even window, odd padding
  run_maxpool(pool(3, 1, 1, 0), 1, {2, 6, 7}, {2, 4, 5}, 10);     // stride 1, no padding
  run_maxpool(pool(1, 1, 1, 0), 1, {2, 5, 5}, {2, 5, 5}, 11);     // identity
  run_maxpool(pool(2, 1, 1, 8), 1, {2, 3, 3}, {2, 10, 10}, 12);   // windows fully outside: -FLT_MAX
  run_maxpool(pool(3, 1, 1, 2), 1, {1, 2, 5000}, {1, 2, 5000}, 13);  // wider than the separable buffer
}

// Ties between +0 and -0 (equal values, different bits) and NaN taps: the first maximum
// of Darknet's row-major scan wins and NaN never does, in both the separable (stride 1)
// and the general path; compared bit for bit.
TEST(CpuMaxPool, SignedZeroTiesAndNaNFollowDarknetsScan) {
  for (const MaxPoolParams& p : {pool(5, 1, 1, 4), pool(13, 1, 1, 12), pool(2, 1, 1, 1), pool(3, 2, 2, 2)}) {
    SCOPED_TRACE(::testing::Message() << "size " << p.size << " stride " << p.stride_x);
    const Shape3 is{3, 11, 12};
    const Shape3 os{is.c, (is.h + p.padding - p.size) / p.stride_y + 1, (is.w + p.padding - p.size) / p.stride_x + 1};
    std::mt19937 rng(77);
    SlicedTensor in(1, is);
    in.fill_uniform(rng, -5.f, -1.f);  // negative: the zeros are the maxima
    for (int64_t i = 0; i < in.count(); ++i) {
      const uint32_t r = rng();
      if (r % 3 == 0) in.image(0)[i] = (r >> 4) % 2 ? 0.f : -0.f;
      if (r % 11 == 0) in.image(0)[i] = std::numeric_limits<float>::quiet_NaN();
    }
    SlicedTensor out(1, os);
    cpu::maxpool(p, in.view, out.view);
    const std::vector<float> ref = maxpool_reference(p, in, os);
    int64_t differ = 0;
    for (int64_t i = 0; i < out.count(); ++i) differ += std::signbit(out.image(0)[i]) != std::signbit(ref[size_t(i)]);
    EXPECT_EQ(differ, 0);
    EXPECT_EQ(test::mismatches(out, ref), 0);
  }
}

// ---- upsample ----

TEST(CpuUpsample, StrideAndScale) {
  struct Case { int stride; float scale; int n; Shape3 is; };
  const Case cases[] = {{2, 1.f, 1, {4, 13, 13}}, {2, 1.f, 2, {3, 7, 5}}, {3, 0.5f, 2, {2, 5, 4}},
                        {1, 2.f, 1, {2, 3, 3}}, {4, 1.f, 1, {1, 2, 3}}};
  uint32_t seed = 40;
  for (const Case& c : cases) {
    UpsampleParams p;
    p.stride = c.stride;
    p.scale = c.scale;
    std::mt19937 rng(seed++);
    SlicedTensor in(c.n, c.is, 1, 0);
    in.fill_uniform(rng, -3.f, 3.f);
    const Shape3 os{c.is.c, c.is.h * c.stride, c.is.w * c.stride};
    SlicedTensor out(c.n, os, 2, 3);  // e.g. an upsample written into a route's slice
    out.poison();
    cpu::upsample(p, in.view, out.view);
    std::vector<float> ref;
    for (int b = 0; b < c.n; ++b)
      for (int k = 0; k < os.c; ++k)
        for (int y = 0; y < os.h; ++y)
          for (int x = 0; x < os.w; ++x) ref.push_back(c.scale * in.at(b, k, y / c.stride, x / c.stride));
    EXPECT_EQ(out.non_finite(), 0);
    EXPECT_EQ(out.guard_damage(), 0);
    EXPECT_EQ(test::mismatches(out, ref), 0) << "stride " << c.stride << " scale " << c.scale;
  }
}

// ---- route ----

TEST(CpuRoute, CopyChannelsBetweenSlices) {
  std::mt19937 rng(50);
  for (int n : {1, 2}) {
    const Shape3 s{5, 13, 11};
    SlicedTensor src(n, s, 3, 2);
    src.fill_uniform(rng, -1.f, 1.f);
    SlicedTensor dst(n, s, 4, 1);
    dst.poison();
    cpu::copy_channels(src.view, dst.view);
    std::vector<float> ref;
    for (int b = 0; b < n; ++b)
      for (int64_t i = 0; i < src.count(); ++i) ref.push_back(src.image(b)[i]);
    EXPECT_EQ(dst.non_finite(), 0);
    EXPECT_EQ(dst.guard_damage(), 0);
    EXPECT_EQ(test::mismatches(dst, ref), 0);
  }
  // large enough for several blocks per image
  SlicedTensor src(2, {64, 52, 52}, 0, 0), dst(2, {64, 52, 52}, 64, 32);
  src.fill_uniform(rng, -1.f, 1.f);
  dst.poison();
  cpu::copy_channels(src.view, dst.view);
  EXPECT_EQ(dst.guard_damage(), 0);
  EXPECT_TRUE(std::equal(src.buf.begin(), src.buf.begin() + src.count(), dst.image(0)));
  EXPECT_TRUE(std::equal(src.buf.begin() + src.count(), src.buf.end(), dst.image(1)));
}

// ---- shortcut ----

void run_shortcut(int n, Shape3 s, const std::vector<Shape3>& from_shapes, Activation act, bool alias, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "out " << s.to_string() << " from " << from_shapes.size() << " "
                                    << activation_name(act) << (alias ? " in place" : ""));
  std::mt19937 rng(seed);
  SlicedTensor prev(n, s, 1, 1);
  prev.fill_uniform(rng, -4.f, 4.f);
  std::vector<SlicedTensor> from;
  std::vector<TensorView> views;
  for (size_t i = 0; i < from_shapes.size(); ++i) {
    from.emplace_back(n, from_shapes[i], int(i), 1);
    from.back().fill_uniform(rng, -4.f, 4.f);
  }
  for (const SlicedTensor& f : from) views.push_back(f.view);
  // reference: left-to-right float sums (the op's contract), Darknet's size rule, then activate()
  std::vector<float> ref;
  for (int b = 0; b < n; ++b)
    for (int64_t i = 0; i < s.count(); ++i) {
      float v = prev.image(b)[i];
      for (const SlicedTensor& f : from)
        if (i < f.count()) v += f.image(b)[i];
      ref.push_back(cpu::activate(act, v));
    }
  SlicedTensor out(n, s, 2, 0);
  out.poison();
  const TensorView& dst = alias ? prev.view : out.view;
  cpu::shortcut(prev.view, views.data(), int(views.size()), act, dst);
  SlicedTensor& result = alias ? prev : out;
  EXPECT_EQ(result.non_finite(), 0);
  EXPECT_EQ(result.guard_damage(), 0);
  EXPECT_EQ(test::mismatches(result, ref), 0);
}

TEST(CpuShortcut, DarknetMultilayerRule) {
  const Shape3 s{8, 13, 11};
  run_shortcut(1, s, {s}, Activation::kLinear, false, 60);
  run_shortcut(2, s, {s}, Activation::kLinear, true, 61);
  run_shortcut(2, s, {s, s}, Activation::kLeaky, false, 62);
  run_shortcut(2, s, {{5, 13, 11}}, Activation::kLinear, false, 63);          // fewer channels: first ones
  run_shortcut(1, s, {s, {3, 13, 11}}, Activation::kMish, true, 64);
  run_shortcut(2, s, {{10, 13, 11}}, Activation::kSwish, false, 65);         // more: first out-count elements
  run_shortcut(1, s, {{8, 7, 5}}, Activation::kLinear, false, 66);           // smaller spatial: flat prefix
  run_shortcut(1, {64, 52, 52}, {{64, 52, 52}}, Activation::kLinear, false, 67);  // several blocks
  run_shortcut(2, s, {}, Activation::kLogistic, false, 68);
}

TEST(CpuShortcut, MatchesDoubleSum) {
  std::mt19937 rng(70);
  const Shape3 s{4, 9, 9};
  SlicedTensor prev(1, s), f0(1, s), f1(1, {2, 9, 9}), out(1, s);
  prev.fill_uniform(rng, -1.f, 1.f);
  f0.fill_uniform(rng, -1.f, 1.f);
  f1.fill_uniform(rng, -1.f, 1.f);
  out.poison();
  const TensorView from[] = {f0.view, f1.view};
  cpu::shortcut(prev.view, from, 2, Activation::kLeaky, out.view);
  std::vector<double> ref;
  for (int64_t i = 0; i < s.count(); ++i) {
    double v = double(prev.image(0)[i]) + f0.image(0)[i] + (i < f1.count() ? f1.image(0)[i] : 0.0);
    ref.push_back(test::activation_ref(Activation::kLeaky, v));
  }
  EXPECT_LE(test::rel_error(out, ref), 1e-6);
}

// ---- yolo ----

TEST(CpuYolo, NewCoordsAndScaleXY) {
  const int classes = 3, anchors = 2, entries = 5 + classes;
  const Shape3 s{anchors * entries, 5, 7};
  uint32_t seed = 80;
  for (bool new_coords : {false, true}) {
    for (float sxy : {1.f, 1.05f, 2.f}) {
      for (bool alias : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "new_coords " << new_coords << " scale_x_y " << sxy << " alias " << alias);
        YoloParams p;
        p.classes = classes;
        p.total = 6;
        p.mask = {1, 4};
        p.scale_x_y = sxy;
        p.new_coords = new_coords;
        std::mt19937 rng(seed++);
        SlicedTensor in(2, s, 2, 1);
        in.fill_uniform(rng, new_coords ? 0.f : -6.f, new_coords ? 1.f : 6.f);
        std::vector<float> ref;
        std::vector<double> ref_d;
        const float beta = float(-0.5 * (double(sxy) - 1));
        for (int b = 0; b < 2; ++b)
          for (int k = 0; k < s.c; ++k)
            for (int y = 0; y < s.h; ++y)
              for (int x = 0; x < s.w; ++x) {
                const int e = k % entries;
                float v = in.at(b, k, y, x);
                double vd = v;
                if (!new_coords && e != 2 && e != 3) {
                  v = cpu::activate(Activation::kLogistic, v);
                  vd = test::logistic_ref(vd);
                }
                if (e < 2) {
                  v = std::fma(v, sxy, beta);
                  vd = vd * sxy - 0.5 * (sxy - 1.0);
                }
                ref.push_back(v);
                ref_d.push_back(vd);
              }
        SlicedTensor out(2, s, 1, 2);
        out.poison();
        cpu::yolo(p, in.view, alias ? in.view : out.view);
        SlicedTensor& result = alias ? in : out;
        EXPECT_EQ(result.non_finite(), 0);
        EXPECT_EQ(result.guard_damage(), 0);
        EXPECT_EQ(test::mismatches(result, ref), 0);
        EXPECT_LE(test::rel_error(result, ref_d), 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace dlr
