// cpu::conv2d against a naive double-precision convolution (Darknet geometry,
// DARKNET.md 1.3): strides, padding, dilation, groups, depthwise, every activation,
// batches and channel-slice views. Outputs and scratch are NaN-poisoned first.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "tests/kernels/cpu_act_ref.h"
#include "tests/kernels/cpu_test_util.h"

namespace dlr {
namespace {

using test::SlicedTensor;

struct ConvCase {
  int c = 3, h = 8, w = 8;
  int filters = 4, size = 3, sx = 1, sy = 1, padding = 1, dilation = 1, groups = 1;
  Activation act = Activation::kLinear;
  int batch = 1;
  int in_before = 0, in_after = 0;    // input channel-slice margins
  int out_before = 0, out_after = 0;  // output channel-slice margins
  bool with_bias = true;

  std::string str() const {
    std::ostringstream s;
    s << c << "x" << h << "x" << w << " -> " << filters << " k" << size << " s" << sx << "," << sy << " p" << padding
      << " d" << dilation << " g" << groups << " " << activation_name(act) << " n" << batch << " in[" << in_before
      << "," << in_after << "] out[" << out_before << "," << out_after << "]" << (with_bias ? "" : " nobias");
    return s.str();
  }
  ConvParams params() const {
    ConvParams p;
    p.filters = filters;
    p.size = size;
    p.stride_x = sx;
    p.stride_y = sy;
    p.padding = padding;
    p.dilation = dilation;
    p.groups = groups;
    p.activation = act;
    return p;
  }
  Shape3 out_shape() const {
    return {filters, (h + 2 * padding - size) / sy + 1, (w + 2 * padding - size) / sx + 1};
  }
};

std::vector<double> conv_reference(const ConvCase& cc, const SlicedTensor& in, const std::vector<float>& wts,
                                   const std::vector<float>& bias) {
  const Shape3 os = cc.out_shape();
  const int cg = cc.c / cc.groups, fg = cc.filters / cc.groups;
  const int d = cc.size == 1 ? 1 : cc.dilation;
  std::vector<double> ref;
  ref.reserve(size_t(os.count() * cc.batch));
  for (int b = 0; b < cc.batch; ++b) {
    for (int f = 0; f < cc.filters; ++f) {
      const int g = f / fg;
      for (int oy = 0; oy < os.h; ++oy) {
        for (int ox = 0; ox < os.w; ++ox) {
          double s = 0;
          for (int ci = 0; ci < cg; ++ci) {
            for (int ky = 0; ky < cc.size; ++ky) {
              for (int kx = 0; kx < cc.size; ++kx) {
                const int iy = oy * cc.sy - cc.padding * d + ky * d;
                const int ix = ox * cc.sx - cc.padding * d + kx * d;
                if (iy < 0 || iy >= cc.h || ix < 0 || ix >= cc.w) continue;
                s += double(wts[size_t(((f * cg + ci) * cc.size + ky) * cc.size + kx)]) *
                     in.at(b, g * cg + ci, iy, ix);
              }
            }
          }
          if (cc.with_bias) s += bias[size_t(f)];
          ref.push_back(test::activation_ref(cc.act, s));
        }
      }
    }
  }
  return ref;
}

void run_case(const ConvCase& cc, uint32_t seed) {
  SCOPED_TRACE(cc.str());
  std::mt19937 rng(seed);
  const ConvParams p = cc.params();
  const Shape3 is{cc.c, cc.h, cc.w};
  const Shape3 os = cc.out_shape();
  ASSERT_GE(os.h, 1);
  ASSERT_GE(os.w, 1);
  SlicedTensor in(cc.batch, is, cc.in_before, cc.in_after);
  in.fill_uniform(rng, -1.f, 1.f);
  const std::vector<float> in_copy = in.buf;
  std::vector<float> wts(size_t(cc.filters) * (cc.c / cc.groups) * cc.size * cc.size), bias(size_t(cc.filters));
  std::uniform_real_distribution<float> dw(-1.f, 1.f);
  for (float& v : wts) v = dw(rng);
  for (float& v : bias) v = dw(rng);

  SlicedTensor out(cc.batch, os, cc.out_before, cc.out_after);
  out.poison();
  const int threads = 3;  // scratch for 3 threads: the team is capped at 3 whatever OpenMP offers
  const int64_t scratch_floats = cpu::conv2d_scratch_floats(p, is, os, threads);
  ASSERT_GE(scratch_floats, 0);
  std::vector<float> scratch(size_t(scratch_floats) + 1, std::numeric_limits<float>::quiet_NaN());

  cpu::conv2d(p, in.view, wts.data(), cc.with_bias ? bias.data() : nullptr, out.view, scratch.data(), threads);

  EXPECT_EQ(out.non_finite(), 0) << "elements left unwritten (NaN poison) or non-finite";
  EXPECT_EQ(out.guard_damage(), 0) << "wrote outside the output channel slice";
  EXPECT_TRUE(in.buf == in_copy) << "input modified";
  const std::vector<double> ref = conv_reference(cc, in, wts, bias);
  EXPECT_LE(test::rel_error(out, ref), 1e-5);
}

// Large images: each thread im2cols its column tiles into its own slot, so the scratch
// is a few tiles instead of the whole im2col, and the result is the same bits for any
// scratch size and team (the tiles, which fix the summation order, do not change).
TEST(CpuConv2d, ScratchIsPerThreadTilesAndResultsDoNotDependOnThreads) {
  ConvParams p;
  p.filters = 16;
  p.size = 3;
  p.padding = 1;
  p.stride_x = p.stride_y = 2;
  p.activation = Activation::kLeaky;
  const Shape3 is{8, 200, 176};
  const Shape3 os{16, 100, 88};
  const int64_t whole = int64_t(8 * 9) * 100 * 88;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(size_t(is.count())), w(size_t(16 * 8 * 9)), b(16);
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  for (float& v : b) v = u(rng);
  auto view = [](std::vector<float>& data, Shape3 s) {
    return TensorView::packed(data.data(), DType::kF32, Layout::kNCHW, 1, s);
  };
  std::vector<float> first;
  for (int threads : {1, 2, 3, 8}) {
    const int64_t floats = cpu::conv2d_scratch_floats(p, is, os, threads);
    EXPECT_LE(floats, int64_t(threads) * 72 * (512 + 16)) << threads << " threads: one column tile each";
    if (threads <= 3) {
      EXPECT_LT(floats, whole / 4) << threads << " threads: the scratch should be a few column tiles";
    }
    EXPECT_GT(floats, 0);
    std::vector<float> scratch(size_t(floats), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> y(size_t(os.count()), std::numeric_limits<float>::quiet_NaN());
    cpu::conv2d(p, view(x, is), w.data(), b.data(), view(y, os), scratch.data(), threads);
    if (first.empty()) {
      first = y;
      continue;
    }
    EXPECT_TRUE(y == first) << threads << " threads gave other bits than 1";
  }
}

TEST(CpuConv2d, FixedCases) {
  std::vector<ConvCase> cases;
  auto add = [&](ConvCase c) { cases.push_back(c); };
  ConvCase c;
  // kernel 3, pad 1, strides 1 and 2, odd sizes
  c = {}; c.c = 5; c.h = 13; c.w = 13; c.filters = 7; c.act = Activation::kLeaky; add(c);
  c = {}; c.c = 4; c.h = 7; c.w = 5; c.filters = 6; c.sx = c.sy = 2; c.act = Activation::kMish; add(c);
  c = {}; c.c = 3; c.h = 13; c.w = 13; c.filters = 8; c.sx = c.sy = 2; c.act = Activation::kLeaky; add(c);
  c = {}; c.c = 3; c.h = 9; c.w = 11; c.filters = 5; c.sx = 2; c.sy = 1; add(c);
  // kernel 1: pointwise fast path, stride 2, explicit padding
  c = {}; c.c = 6; c.h = 13; c.w = 13; c.filters = 9; c.size = 1; c.padding = 0; c.act = Activation::kLogistic; add(c);
  c = {}; c.c = 6; c.h = 7; c.w = 5; c.filters = 4; c.size = 1; c.padding = 0; c.sx = c.sy = 2; add(c);
  c = {}; c.c = 2; c.h = 5; c.w = 7; c.filters = 3; c.size = 1; c.padding = 1; add(c);
  // kernel 5, padding 0/1/2
  c = {}; c.c = 3; c.h = 13; c.w = 11; c.filters = 4; c.size = 5; c.padding = 2; c.act = Activation::kSwish; add(c);
  c = {}; c.c = 3; c.h = 9; c.w = 9; c.filters = 4; c.size = 5; c.padding = 0; add(c);
  c = {}; c.c = 2; c.h = 7; c.w = 8; c.filters = 3; c.size = 5; c.padding = 1; c.sx = c.sy = 2; add(c);
  c = {}; c.c = 3; c.h = 6; c.w = 6; c.filters = 2; c.size = 3; c.padding = 0; add(c);
  c = {}; c.c = 3; c.h = 6; c.w = 5; c.filters = 2; c.size = 3; c.padding = 2; add(c);
  // dilation 2 (taps at padding*2, out-of-image taps read zero)
  c = {}; c.c = 4; c.h = 13; c.w = 13; c.filters = 5; c.dilation = 2; c.act = Activation::kLeaky; add(c);
  c = {}; c.c = 4; c.h = 11; c.w = 9; c.filters = 5; c.dilation = 2; c.sx = c.sy = 2; add(c);
  c = {}; c.c = 3; c.h = 10; c.w = 10; c.filters = 3; c.size = 5; c.padding = 2; c.dilation = 2; add(c);
  c = {}; c.c = 3; c.h = 9; c.w = 9; c.filters = 3; c.size = 3; c.padding = 0; c.dilation = 2; add(c);
  // groups
  c = {}; c.c = 6; c.h = 13; c.w = 13; c.filters = 4; c.groups = 2; c.act = Activation::kMish; add(c);
  c = {}; c.c = 6; c.h = 7; c.w = 5; c.filters = 9; c.groups = 3; c.sx = c.sy = 2; add(c);
  c = {}; c.c = 4; c.h = 8; c.w = 8; c.filters = 8; c.size = 1; c.padding = 0; c.groups = 2; add(c);
  // depthwise (groups == c == filters)
  c = {}; c.c = 8; c.h = 13; c.w = 13; c.filters = 8; c.groups = 8; c.act = Activation::kRelu6; add(c);
  c = {}; c.c = 5; c.h = 7; c.w = 5; c.filters = 5; c.groups = 5; c.sx = c.sy = 2; add(c);
  c = {}; c.c = 4; c.h = 12; c.w = 9; c.filters = 4; c.groups = 4; c.size = 5; c.padding = 2; c.dilation = 2; add(c);
  c = {}; c.c = 3; c.h = 6; c.w = 6; c.filters = 3; c.groups = 3; c.padding = 0; c.sx = 2; add(c);
  // channel multiplier 2 with groups == c goes through the grouped GEMM path
  c = {}; c.c = 4; c.h = 6; c.w = 7; c.filters = 8; c.groups = 4; add(c);
  // batch 2, channel-slice input and output views
  c = {}; c.c = 5; c.h = 13; c.w = 13; c.filters = 6; c.batch = 2; c.in_before = 2; c.in_after = 1;
  c.out_before = 3; c.out_after = 2; c.act = Activation::kLeaky; add(c);
  c.size = 1; c.padding = 0; add(c);
  c.groups = 5; c.filters = 5; c.size = 3; c.padding = 1; add(c);
  c.groups = 1; c.filters = 4; c.sx = c.sy = 2; c.dilation = 2; c.act = Activation::kMish; add(c);
  // no bias
  c = {}; c.with_bias = false; add(c);
  c.groups = 3; c.filters = 3; add(c);
  for (size_t i = 0; i < cases.size(); ++i) run_case(cases[i], 100 + uint32_t(i));
}

TEST(CpuConv2d, EveryActivation) {
  uint32_t seed = 500;
  for (Activation a : test::all_activations()) {
    ConvCase c;
    c.c = 4; c.h = 9; c.w = 7; c.filters = 5; c.act = a; c.batch = 2; c.out_before = 1;
    run_case(c, seed++);
    c.groups = 4; c.filters = 4;  // depthwise epilogue
    run_case(c, seed++);
  }
}

TEST(CpuConv2d, RandomShapes) {
  std::mt19937 rng(2024);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<Activation> acts = test::all_activations();
  for (int t = 0; t < 60; ++t) {
    ConvCase c;
    const int sizes[] = {1, 3, 5};
    c.size = sizes[pick(0, 2)];
    c.sx = pick(1, 2);
    c.sy = pick(0, 3) == 0 ? 3 - c.sx : c.sx;
    c.padding = pick(0, 2);
    c.dilation = c.size > 1 && pick(0, 2) == 0 ? 2 : 1;
    const int kind = pick(0, 3);  // 0,1: groups 1; 2: groups 2; 3: depthwise
    c.groups = kind == 2 ? 2 : 1;
    c.c = c.groups * pick(1, 6);
    c.filters = c.groups * pick(1, 6);
    if (kind == 3) c.groups = c.filters = c.c = pick(2, 9);
    c.h = pick(std::max(1, c.size - 2 * c.padding), 20);
    c.w = pick(std::max(1, c.size - 2 * c.padding), 20);
    c.batch = pick(1, 2);
    c.in_before = pick(0, 2);
    c.in_after = pick(0, 1);
    c.out_before = pick(0, 2);
    c.out_after = pick(0, 1);
    c.act = acts[size_t(pick(0, int(acts.size()) - 1))];
    run_case(c, 9000 + uint32_t(t));
  }
}

// Shapes that cut the GEMM into several column tiles (rows split across tiles)
// or into filter chunks over a shared im2col (small images, many filters).
TEST(CpuConv2d, TiledShapes) {
  ConvCase c;
  c.c = 16; c.h = 20; c.w = 20; c.filters = 64; c.act = Activation::kLeaky;
  run_case(c, 31);
  c = {}; c.c = 4; c.h = 40; c.w = 37; c.filters = 40; c.dilation = 2; c.act = Activation::kMish; c.batch = 2;
  c.out_before = 5; c.in_after = 3;
  run_case(c, 32);
  c = {}; c.c = 8; c.h = 9; c.w = 9; c.filters = 96; c.groups = 2; c.act = Activation::kLogistic;
  run_case(c, 33);
  c = {}; c.c = 24; c.h = 11; c.w = 7; c.filters = 200; c.sx = c.sy = 2; c.padding = 2; c.size = 5;
  run_case(c, 34);
  c = {}; c.c = 32; c.h = 33; c.w = 31; c.filters = 72; c.size = 1; c.padding = 0; c.batch = 2; c.in_before = 7;
  run_case(c, 35);
  c = {}; c.c = 16; c.h = 5; c.w = 5; c.filters = 300; c.size = 1; c.padding = 0;
  run_case(c, 36);
}

TEST(CpuConv2d, YoloSizedLayers) {
  ConvCase c;
  c.c = 32; c.h = 52; c.w = 52; c.filters = 64; c.act = Activation::kMish; c.out_before = 16;
  run_case(c, 1);
  c = {}; c.c = 64; c.h = 26; c.w = 26; c.filters = 128; c.sx = c.sy = 2; c.act = Activation::kLeaky;
  run_case(c, 2);
  c = {}; c.c = 128; c.h = 13; c.w = 13; c.filters = 255; c.size = 1; c.padding = 0; c.in_before = 64;
  run_case(c, 3);
  c = {}; c.c = 3; c.h = 64; c.w = 48; c.filters = 16; c.act = Activation::kLeaky; c.batch = 2;
  run_case(c, 4);
}

}  // namespace
}  // namespace dlr
