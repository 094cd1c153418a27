// region_candidates and gaussian_yolo_candidates vs Darknet's decode
// (region_layer.c get_region_boxes/get_region_box with DOABS, gaussian_yolo_layer.c
// get_gaussian_yolo_detections/get_gaussian_yolo_box), values worked out by hand in
// double from the formulas, and the postprocess pipeline with a [region] last layer
// (Darknet's default NMS: IoU).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/detect/detection.h"

namespace dlr {
namespace {

// A head output: n anchors x `entries` entries x lh x lw, NCHW, zeros.
struct Head {
  int lw, lh, n, entries;
  std::vector<float> data;
  Head(int lw_, int lh_, int n_, int entries_)
      : lw(lw_), lh(lh_), n(n_), entries(entries_), data(size_t(n_) * entries_ * lw_ * lh_, 0.f) {}
  float& at(int a, int e, int row, int col) {
    return data[(size_t(a) * entries + e) * lw * lh + size_t(row) * lw + col];
  }
};

double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }

RegionParams region_params() {
  RegionParams p;
  p.classes = 3;
  p.num = 2;
  p.softmax = true;
  p.anchors = {1.0f, 2.0f, 3.0f, 1.5f};  // grid cells
  return p;
}

TEST(DetectRegion, BoxesInGridUnitsAndObjectnessTimesClass) {
  const RegionParams p = region_params();
  Head head(5, 4, 2, 8);
  // anchor 1, row 3, col 2: tx, ty raw; tw, th raw; objectness 0.9 (after the layer's logistic).
  head.at(1, 0, 3, 2) = 0.5f;
  head.at(1, 1, 3, 2) = -1.0f;
  head.at(1, 2, 3, 2) = 0.25f;
  head.at(1, 3, 3, 2) = -0.5f;
  head.at(1, 4, 3, 2) = 0.9f;
  head.at(1, 5, 3, 2) = 0.1f;
  head.at(1, 6, 3, 2) = 0.6f;
  head.at(1, 7, 3, 2) = 0.3f;
  std::vector<Candidate> cands;
  region_candidates(p, head.data.data(), 5, 4, 0.25f, &cands);
  ASSERT_EQ(cands.size(), 1u);  // every other cell has all probabilities 0
  const Candidate& c = cands[0];
  EXPECT_NEAR(c.box.x, (2 + logistic(0.5)) / 5, 1e-6);
  EXPECT_NEAR(c.box.y, (3 + logistic(-1.0)) / 4, 1e-6);
  EXPECT_NEAR(c.box.w, std::exp(0.25) * 3.0 / 5, 1e-6);   // anchor 1 = (3, 1.5) cells, / lw
  EXPECT_NEAR(c.box.h, std::exp(-0.5) * 1.5 / 4, 1e-6);
  ASSERT_EQ(c.prob.size(), 3u);
  EXPECT_EQ(c.prob[0], 0.f);                // 0.09 <= thresh
  EXPECT_FLOAT_EQ(c.prob[1], 0.9f * 0.6f);  // 0.54
  EXPECT_FLOAT_EQ(c.prob[2], 0.9f * 0.3f);  // 0.27
}

TEST(DetectRegion, PostprocessUsesDefaultIouNmsAndRegionClasses) {
  RegionParams p = region_params();
  Head head(4, 4, 2, 8);
  // Two overlapping boxes of class 1 in neighbouring cells; the weaker one is suppressed.
  for (int col : {1, 2}) {
    head.at(0, 0, 1, col) = col == 1 ? 2.0f : -2.0f;  // centres 0.22 grid cells apart
    head.at(0, 2, 1, col) = 1.0f;
    head.at(0, 3, 1, col) = 1.0f;
    head.at(0, 4, 1, col) = col == 1 ? 0.9f : 0.8f;
    head.at(0, 6, 1, col) = 1.0f;
  }
  HeadOutput h;
  h.kind = LayerKind::kRegion;
  h.region = &p;
  h.data = head.data.data();
  h.w = 4;
  h.h = 4;
  PostprocessOptions o;
  const std::vector<Detection> dets = postprocess({h}, 128, 128, 640, 480, o);
  ASSERT_EQ(dets.size(), 1u);
  EXPECT_EQ(dets[0].class_id, 1);
  EXPECT_FLOAT_EQ(dets[0].prob, 0.9f);
}

TEST(DetectGaussianYolo, UncertaintyWeightedScoresAndPixelAnchors) {
  GaussianYoloParams g;
  g.yolo.classes = 2;
  g.yolo.total = 2;
  g.yolo.mask = {1};
  g.yolo.anchors = {10, 20, 30, 40};
  Head head(4, 3, 1, 11);
  const int row = 2, col = 1;
  head.at(0, 0, row, col) = 0.25f;  // x (after logistic and scale_x_y)
  head.at(0, 1, row, col) = 0.1f;   // sigma_x
  head.at(0, 2, row, col) = 0.75f;  // y
  head.at(0, 3, row, col) = 0.2f;   // sigma_y
  head.at(0, 4, row, col) = 0.5f;   // tw (raw)
  head.at(0, 5, row, col) = 0.3f;   // sigma_w
  head.at(0, 6, row, col) = -0.25f; // th (raw)
  head.at(0, 7, row, col) = 0.4f;   // sigma_h
  head.at(0, 8, row, col) = 0.8f;   // objectness
  head.at(0, 9, row, col) = 0.9f;
  head.at(0, 10, row, col) = 0.2f;
  for (YoloPoint point : {YoloPoint::kCenter, YoloPoint::kLeftTop, YoloPoint::kRightBottom}) {
    g.point = point;
    std::vector<Candidate> cands;
    gaussian_yolo_candidates(g, head.data.data(), 4, 3, 320, 256, 0.25f, &cands);
    ASSERT_EQ(cands.size(), 1u);
    const Candidate& c = cands[0];
    const double w = std::exp(0.5) * 30 / 320, h = std::exp(-0.25) * 40 / 256;
    const double shift = point == YoloPoint::kLeftTop ? 0.5 : point == YoloPoint::kRightBottom ? -0.5 : 0.0;
    EXPECT_NEAR(c.box.x, (col + 0.25) / 4 + shift * w, 1e-6);
    EXPECT_NEAR(c.box.y, (row + 0.75) / 3 + shift * h, 1e-6);
    EXPECT_NEAR(c.box.w, w, 1e-6);
    EXPECT_NEAR(c.box.h, h, 1e-6);
    const double uc = (0.1 + 0.2 + 0.3 + 0.4) / 4;  // 0.25
    EXPECT_NEAR(c.prob[0], 0.8 * 0.9 * (1 - uc), 1e-6);  // 0.54
    EXPECT_EQ(c.prob[1], 0.f);                           // 0.12 <= thresh
  }
}

}  // namespace
}  // namespace dlr
