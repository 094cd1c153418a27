// cpu::avgpool, scale_channels, sam, reorg (both Darknet mappings), region and
// gaussian_yolo against naive loops written from Darknet's forward functions
// (avgpool_layer.c, scale_channels_layer.c, sam_layer.c, blas.c reorg_cpu,
// region_layer.c + blas.c softmax, gaussian_yolo_layer.c). Views are channel slices
// of larger buffers, outputs are NaN-poisoned first and the guard bytes around a
// slice must be left untouched.
#include <gtest/gtest.h>

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

// Packed copy of a view's images (Darknet's l.output layout for a batch).
std::vector<float> packed(const SlicedTensor& t) {
  std::vector<float> v;
  for (int b = 0; b < t.view.n; ++b)
    for (int64_t i = 0; i < t.count(); ++i) v.push_back(t.image(b)[i]);
  return v;
}

TEST(CpuIssue9Ops, AvgpoolIsDarknetsSumThenDivide) {
  std::mt19937 rng(1);
  for (Shape3 s : {Shape3{5, 7, 3}, Shape3{64, 13, 13}, Shape3{3, 1, 1}}) {
    SlicedTensor in(2, s, 2, 1), out(2, Shape3{s.c, 1, 1}, 1, 3);
    in.fill_uniform(rng, -3.f, 3.f);
    out.poison();
    cpu::avgpool(in.view, out.view);
    std::vector<float> ref;
    for (int b = 0; b < 2; ++b)
      for (int k = 0; k < s.c; ++k) {
        float sum = 0;
        for (int i = 0; i < s.h * s.w; ++i) sum += in.image(b)[k * s.h * s.w + i];
        ref.push_back(sum / (s.h * s.w));
      }
    EXPECT_EQ(test::mismatches(out, ref), 0) << s.to_string();
    EXPECT_EQ(out.guard_damage(), 0);
  }
}

TEST(CpuIssue9Ops, ScaleChannelsPerChannelAndPerPixel) {
  std::mt19937 rng(2);
  const Shape3 s{6, 5, 4};
  for (bool wh : {false, true}) {
    for (Activation act : {Activation::kLinear, Activation::kLogistic, Activation::kLeaky}) {
      const Shape3 ss = wh ? Shape3{1, s.h, s.w} : Shape3{s.c, 1, 1};
      SlicedTensor scales(2, ss, 1, 2), from(2, s, 3, 0), out(2, s, 0, 2);
      scales.fill_uniform(rng, -2.f, 2.f);
      from.fill_uniform(rng, -2.f, 2.f);
      out.poison();
      cpu::scale_channels(scales.view, from.view, wh, act, out.view);
      // Darknet forward_scale_channels_layer over the packed batch.
      const std::vector<float> in = packed(scales), f = packed(from);
      const int channel_size = s.h * s.w, batch_size = int(s.count());
      std::vector<double> ref;
      for (int i = 0; i < 2 * batch_size; ++i) {
        const int idx = wh ? i % channel_size + (i / batch_size) * channel_size : i / channel_size;
        ref.push_back(test::activation_ref(act, double(float(in[size_t(idx)] * f[size_t(i)]))));
      }
      EXPECT_LE(test::rel_error(out, ref), 1e-6) << "scale_wh " << wh << " " << activation_name(act);
      EXPECT_EQ(out.guard_damage(), 0);
    }
  }
}

TEST(CpuIssue9Ops, SamMultipliesElementwiseInPlaceToo) {
  std::mt19937 rng(3);
  const Shape3 s{4, 6, 5};
  for (bool in_place : {false, true}) {
    SlicedTensor prev(2, s, 1, 1), from(2, s, 0, 2), out(2, s, 2, 0);
    prev.fill_uniform(rng, -2.f, 2.f);
    from.fill_uniform(rng, -2.f, 2.f);
    out.poison();
    const std::vector<float> p = packed(prev), f = packed(from);
    const SlicedTensor& dst = in_place ? prev : out;
    cpu::sam(prev.view, from.view, Activation::kLogistic, dst.view);
    std::vector<double> ref;
    for (size_t i = 0; i < p.size(); ++i) ref.push_back(test::logistic_ref(double(float(p[i] * f[i]))));
    EXPECT_LE(test::rel_error(dst, ref), 1e-6) << "in place " << in_place;
    EXPECT_EQ(dst.guard_damage(), 0);
  }
}

// blas.c reorg_cpu(x, w, h, c, batch, stride, forward = 0, out), literally.
void reorg_cpu_ref(const std::vector<float>& x, int w, int h, int c, int batch, int stride, std::vector<float>* out) {
  out->assign(x.size(), NAN);
  const int out_c = c / (stride * stride);
  for (int b = 0; b < batch; ++b)
    for (int k = 0; k < c; ++k)
      for (int j = 0; j < h; ++j)
        for (int i = 0; i < w; ++i) {
          const int in_index = i + w * (j + h * (k + c * b));
          const int c2 = k % out_c;
          const int offset = k / out_c;
          const int w2 = i * stride + offset % stride;
          const int h2 = j * stride + offset / stride;
          const int out_index = w2 + w * stride * (h2 + h * stride * (c2 + out_c * b));
          (*out)[size_t(in_index)] = x[size_t(out_index)];
        }
}

TEST(CpuIssue9Ops, ReorgOldAndReorg3dFollowTheirDarknetCalls) {
  std::mt19937 rng(4);
  for (int s : {2, 3}) {
    const Shape3 is{2 * s * s, 3 * s, 2 * s};
    const Shape3 os{is.c * s * s, is.h / s, is.w / s};
    SlicedTensor in(2, is, 1, 2);
    in.fill_uniform(rng, -5.f, 5.f);
    for (ReorgMapping m : {ReorgMapping::kDarknetOld, ReorgMapping::kSpaceToDepth}) {
      SlicedTensor out(2, os, 2, 1);
      out.poison();
      cpu::reorg(in.view, s, m, out.view);
      std::vector<float> ref;
      if (m == ReorgMapping::kDarknetOld)
        reorg_cpu_ref(packed(in), is.w, is.h, is.c, 2, s, &ref);  // [reorg]: the input's dims
      else
        reorg_cpu_ref(packed(in), os.w, os.h, os.c, 2, s, &ref);  // [reorg3d]: the output's dims
      EXPECT_EQ(test::mismatches(out, ref), 0) << "stride " << s << (m == ReorgMapping::kDarknetOld ? " old" : " 3d");
      EXPECT_EQ(out.guard_damage(), 0);
    }
  }
  // [reorg3d] is a true space-to-depth: out[k][j][i] = in[k % c][j*s + (k/c)/s][i*s + (k/c)%s].
  SlicedTensor in(1, Shape3{2, 4, 4});
  for (int i = 0; i < 32; ++i) in.image(0)[i] = float(i);
  SlicedTensor out(1, Shape3{8, 2, 2});
  cpu::reorg(in.view, 2, ReorgMapping::kSpaceToDepth, out.view);
  EXPECT_EQ(out.at(0, 0, 0, 0), 0.f);   // c0 (0,0)
  EXPECT_EQ(out.at(0, 1, 0, 0), 16.f);  // c1 (0,0)
  EXPECT_EQ(out.at(0, 2, 0, 0), 1.f);   // offset 1: c0 (0,1)
  EXPECT_EQ(out.at(0, 4, 1, 1), 4.f * 2 + 2 + 4);  // offset 2: c0 (2*1+1, 2*1) = row 3, col 2
}

// Region: Darknet flattens to [cell][anchor][entry], logistic on entry 4, softmax (blas.c) on
// the classes; the reference does exactly that, then reads it back in NCHW order.
TEST(CpuIssue9Ops, RegionLogisticObjectnessAndSoftmaxClasses) {
  std::mt19937 rng(5);
  RegionOp p;
  p.anchors = 3;
  p.classes = 7;
  const int entries = p.coords + 1 + p.classes;
  const Shape3 s{p.anchors * entries, 4, 5};
  for (bool softmax : {true, false}) {
    p.softmax = softmax;
    SlicedTensor in(2, s, 1, 1), out(2, s, 0, 2);
    in.fill_uniform(rng, -6.f, 6.f);
    out.poison();
    cpu::region(p, in.view, out.view);
    std::vector<double> ref;
    const int plane = s.h * s.w;
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < s.c; ++c)
        for (int i = 0; i < plane; ++i) {
          const int a = c / entries, e = c % entries;
          const float* x = in.image(b) + a * entries * plane + i;  // entry k at x[k*plane]
          double v = x[e * plane];
          if (e == p.coords) v = test::logistic_ref(v);
          if (e > p.coords && softmax) {
            float largest = -FLT_MAX;
            for (int j = 0; j < p.classes; ++j) largest = std::max(largest, x[(p.coords + 1 + j) * plane]);
            float sum = 0;
            for (int j = 0; j < p.classes; ++j) sum += float(std::exp(double(x[(p.coords + 1 + j) * plane] - largest)));
            v = float(std::exp(double(x[e * plane] - largest))) / sum;
          }
          ref.push_back(v);
        }
    EXPECT_LE(test::rel_error(out, ref), 1e-6) << "softmax " << softmax;
    EXPECT_EQ(out.guard_damage(), 0);
  }
}

TEST(CpuIssue9Ops, GaussianYoloActivationsAndScaleXY) {
  std::mt19937 rng(6);
  GaussianYoloOp p;
  p.anchors = 2;
  p.classes = 3;
  p.scale_x_y = 1.1f;
  const int entries = 9 + p.classes;
  const Shape3 s{p.anchors * entries, 3, 4};
  SlicedTensor in(2, s, 2, 1), out(2, s, 1, 0);
  in.fill_uniform(rng, -5.f, 5.f);
  out.poison();
  cpu::gaussian_yolo(p, in.view, out.view);
  std::vector<double> ref;
  const double beta = -0.5 * (double(p.scale_x_y) - 1);
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < s.c; ++c)
      for (int i = 0; i < s.h * s.w; ++i) {
        const int e = c % entries;
        double v = in.image(b)[c * s.h * s.w + i];
        if (e != 4 && e != 6) v = test::logistic_ref(v);
        if (e == 0 || e == 2) v = v * p.scale_x_y + beta;
        ref.push_back(v);
      }
  EXPECT_LE(test::rel_error(out, ref), 1e-6);
  EXPECT_EQ(out.guard_damage(), 0);
}

}  // namespace
}  // namespace dlr
