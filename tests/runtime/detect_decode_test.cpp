// yolo_candidates and correct_boxes vs Darknet get_yolo_detections /
// get_yolo_box / correct_yolo_boxes (shared docs DARKNET.md 4.4).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/detect/detection.h"

namespace dlr {
namespace {

// A hand-built yolo head output: n anchors x (5 + classes) entries x lh x lw, zeros.
struct HeadBuffer {
  int lw, lh, n, classes;
  std::vector<float> data;
  HeadBuffer(int lw_, int lh_, int n_, int classes_)
      : lw(lw_), lh(lh_), n(n_), classes(classes_), data(size_t(n_) * (5 + classes_) * lw_ * lh_, 0.f) {}
  // Darknet entry_index: a*lw*lh*(5+C) + e*lw*lh + loc.
  float& at(int a, int e, int row, int col) {
    return data[size_t(a) * lw * lh * (5 + classes) + size_t(e) * lw * lh + size_t(row) * lw + col];
  }
  void set_cell(int a, int row, int col, float tx, float ty, float tw, float th, float obj,
                const std::vector<float>& cls) {
    at(a, 0, row, col) = tx;
    at(a, 1, row, col) = ty;
    at(a, 2, row, col) = tw;
    at(a, 3, row, col) = th;
    at(a, 4, row, col) = obj;
    for (size_t j = 0; j < cls.size(); ++j) at(a, 5 + int(j), row, col) = cls[j];
  }
};

YoloParams make_params(bool new_coords) {
  YoloParams p;
  p.classes = 2;
  p.total = 3;
  p.mask = {1, 2};
  p.anchors = {10, 14, 23, 27, 37, 58};
  p.new_coords = new_coords;
  return p;
}

TEST(DetectDecode, OldCoordsKnownCellAndAnchor) {
  const YoloParams p = make_params(false);
  HeadBuffer head(4, 3, 2, 2);
  // anchor slot 1 -> mask 2 -> anchor (37, 58); cell row 2, col 1.
  head.set_cell(1, 2, 1, 0.25f, 0.75f, 0.5f, -0.25f, 0.8f, {0.5f, 0.2f});
  std::vector<Candidate> cands;
  yolo_candidates(p, head.data.data(), 4, 3, 320, 256, 0.25f, &cands);
  ASSERT_EQ(cands.size(), 1u);
  const Candidate& c = cands[0];
  EXPECT_EQ(c.box.x, (1 + 0.25f) / 4);  // 0.3125
  EXPECT_FLOAT_EQ(c.box.x, 0.3125f);
  EXPECT_FLOAT_EQ(c.box.y, 2.75f / 3.f);
  EXPECT_EQ(c.box.w, static_cast<float>(std::exp(0.5) * 37 / 320));
  EXPECT_EQ(c.box.h, static_cast<float>(std::exp(-0.25) * 58 / 256));
  EXPECT_NEAR(c.box.w, 0.1906334, 1e-6);  // 1.6487213 * 37 / 320
  EXPECT_NEAR(c.box.h, 0.1764471, 1e-6);  // 0.7788008 * 58 / 256
  EXPECT_EQ(c.objectness, 0.8f);
  ASSERT_EQ(c.prob.size(), 2u);
  EXPECT_EQ(c.prob[0], 0.8f * 0.5f);
  EXPECT_EQ(c.prob[1], 0.f);  // 0.16 <= thresh
}

TEST(DetectDecode, NewCoordsSquaredTimesFour) {
  const YoloParams p = make_params(true);
  HeadBuffer head(4, 3, 2, 2);
  head.set_cell(0, 0, 3, 0.5f, 0.5f, 0.6f, 0.3f, 0.9f, {0.9f, 0.9f});  // mask 1 -> anchor (23, 27)
  std::vector<Candidate> cands;
  yolo_candidates(p, head.data.data(), 4, 3, 320, 256, 0.25f, &cands);
  ASSERT_EQ(cands.size(), 1u);
  EXPECT_EQ(cands[0].box.x, 3.5f / 4);
  EXPECT_EQ(cands[0].box.y, 0.5f / 3);
  EXPECT_EQ(cands[0].box.w, 0.6f * 0.6f * 4 * 23.f / 320);
  EXPECT_EQ(cands[0].box.h, 0.3f * 0.3f * 4 * 27.f / 256);
  EXPECT_NEAR(cands[0].box.w, 0.1035, 1e-6);
  EXPECT_NEAR(cands[0].box.h, 0.0379688, 1e-6);
  EXPECT_EQ(cands[0].prob[0], 0.9f * 0.9f);
  EXPECT_EQ(cands[0].prob[1], 0.9f * 0.9f);
}

TEST(DetectDecode, ThresholdsAreStrict) {
  const YoloParams p = make_params(false);
  HeadBuffer head(2, 2, 2, 2);
  head.set_cell(0, 0, 0, 0.5f, 0.5f, 0, 0, 0.25f, {1.f, 1.f});   // objectness == thresh: dropped
  head.set_cell(1, 0, 0, 0.5f, 0.5f, 0, 0, 1.0f, {0.25f, 0.3f});  // prob == thresh -> 0
  std::vector<Candidate> cands;
  yolo_candidates(p, head.data.data(), 2, 2, 64, 64, 0.25f, &cands);
  ASSERT_EQ(cands.size(), 1u);
  EXPECT_EQ(cands[0].objectness, 1.0f);
  EXPECT_EQ(cands[0].prob[0], 0.f);
  EXPECT_EQ(cands[0].prob[1], 0.3f);
}

TEST(DetectDecode, CellsRowMajorAnchorsInner) {
  const YoloParams p = make_params(false);
  HeadBuffer head(3, 2, 2, 2);
  head.set_cell(1, 1, 0, 0, 0, 0, 0, 0.91f, {1, 0});  // loc 3, anchor 1
  head.set_cell(0, 1, 0, 0, 0, 0, 0, 0.92f, {1, 0});  // loc 3, anchor 0
  head.set_cell(1, 0, 2, 0, 0, 0, 0, 0.93f, {1, 0});  // loc 2, anchor 1
  head.set_cell(0, 0, 1, 0, 0, 0, 0, 0.94f, {1, 0});  // loc 1, anchor 0
  std::vector<Candidate> cands = {Candidate{}};  // appends, keeps what is there
  yolo_candidates(p, head.data.data(), 3, 2, 96, 64, 0.5f, &cands);
  ASSERT_EQ(cands.size(), 5u);
  EXPECT_EQ(cands[1].objectness, 0.94f);
  EXPECT_EQ(cands[2].objectness, 0.93f);
  EXPECT_EQ(cands[3].objectness, 0.92f);
  EXPECT_EQ(cands[4].objectness, 0.91f);
  // width uses the anchor of the slot's mask entry: exp(0) * anchor / net_w.
  EXPECT_EQ(cands[1].box.w, 23.f / 96);
  EXPECT_EQ(cands[2].box.w, 37.f / 96);
  EXPECT_EQ(cands[2].box.x, 2.f / 3);
  EXPECT_EQ(cands[3].box.y, 1.f / 2);
}

TEST(DetectCorrectBoxes, WithoutLetterboxIsIdentity) {
  std::vector<Candidate> cands(2);
  cands[0].box = {0.3f, 0.7f, 0.1f, 0.45f};
  cands[1].box = {-0.01f, 1.2f, 0.5f, 0.05f};
  const std::vector<Candidate> before = cands;
  correct_boxes(&cands, 768, 576, 608, 608, false);
  for (size_t i = 0; i < cands.size(); ++i) {
    EXPECT_EQ(cands[i].box.x, before[i].box.x);
    EXPECT_EQ(cands[i].box.y, before[i].box.y);
    EXPECT_EQ(cands[i].box.w, before[i].box.w);
    EXPECT_EQ(cands[i].box.h, before[i].box.h);
  }
}

TEST(DetectCorrectBoxes, LetterboxWideImage) {
  // 768x576 in 608x608: content 608x456 at y offset 76 (0.125 of the net height).
  std::vector<Candidate> cands(3);
  cands[0].box = {0.5f, 0.5f, 0.2f, 0.3f};
  cands[1].box = {0.25f, 0.125f, 0.1f, 0.75f};
  cands[2].box = {0.75f, 0.875f, 0.1f, 0.15f};
  correct_boxes(&cands, 768, 576, 608, 608, true);
  EXPECT_FLOAT_EQ(cands[0].box.x, 0.5f);
  EXPECT_FLOAT_EQ(cands[0].box.y, 0.5f);   // (0.5 - 0.125) / 0.75
  EXPECT_FLOAT_EQ(cands[0].box.w, 0.2f);
  EXPECT_FLOAT_EQ(cands[0].box.h, 0.4f);   // 0.3 * 608/456
  EXPECT_FLOAT_EQ(cands[1].box.x, 0.25f);
  EXPECT_FLOAT_EQ(cands[1].box.y, 0.f);
  EXPECT_FLOAT_EQ(cands[1].box.h, 1.f);
  EXPECT_FLOAT_EQ(cands[2].box.y, 1.f);
  EXPECT_FLOAT_EQ(cands[2].box.h, 0.2f);
  // Exact Darknet promotions: double offset/scale, float width factor.
  const float y = 0.875f;
  EXPECT_EQ(cands[2].box.y, static_cast<float>((y - (608 - 456) / 2. / 608) / (456.f / 608)));
  EXPECT_EQ(cands[2].box.h, 0.15f * (608.f / 456));
}

TEST(DetectCorrectBoxes, LetterboxTallImage) {
  // 300x600 in 416x416: content 208x416 at x offset 104.
  std::vector<Candidate> cands(2);
  cands[0].box = {0.25f, 0.5f, 0.1f, 0.2f};
  cands[1].box = {0.625f, 0.3f, 0.5f, 0.2f};
  correct_boxes(&cands, 300, 600, 416, 416, true);
  EXPECT_FLOAT_EQ(cands[0].box.x, 0.f);
  EXPECT_FLOAT_EQ(cands[0].box.y, 0.5f);
  EXPECT_FLOAT_EQ(cands[0].box.w, 0.2f);
  EXPECT_FLOAT_EQ(cands[0].box.h, 0.2f);
  EXPECT_FLOAT_EQ(cands[1].box.x, 0.75f);
  EXPECT_FLOAT_EQ(cands[1].box.w, 1.f);
}

}  // namespace
}  // namespace dlr
