// box_iou / box_diou / nms_sort vs Darknet box.c (shared docs DARKNET.md 4.5).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/detect/detection.h"

namespace dlr {
namespace {

Candidate cand(Box b, std::vector<float> prob, float objectness = 0.9f) {
  Candidate c;
  c.box = b;
  c.objectness = objectness;
  c.prob = std::move(prob);
  return c;
}

TEST(DetectIou, NumericCases) {
  const Box a{0.5f, 0.5f, 0.2f, 0.2f};
  EXPECT_NEAR(box_iou(a, {0.6f, 0.5f, 0.2f, 0.2f}), 1.0 / 3.0, 1e-6);
  EXPECT_FLOAT_EQ(box_iou(a, a), 1.f);
  EXPECT_NEAR(box_iou({0.5f, 0.5f, 0.4f, 0.4f}, {0.5f, 0.5f, 0.2f, 0.2f}), 0.25, 1e-6);  // contained
  EXPECT_NEAR(box_iou({0.3f, 0.4f, 0.2f, 0.3f}, {0.35f, 0.3f, 0.3f, 0.1f}), 0.2857143, 1e-6);
  EXPECT_EQ(box_iou(a, {0.9f, 0.5f, 0.2f, 0.2f}), 0.f);    // disjoint
  EXPECT_EQ(box_iou({0.5f, 0.5f, 0.25f, 0.25f}, {0.75f, 0.5f, 0.25f, 0.25f}), 0.f);  // touching: intersection 0
  EXPECT_EQ(box_iou({0.5f, 0.5f, 0, 0}, {0.5f, 0.5f, 0, 0}), 0.f);  // I == 0 and U == 0
  // Symmetric.
  const Box b{0.41f, 0.63f, 0.33f, 0.12f};
  EXPECT_EQ(box_iou(a, b), box_iou(b, a));
}

TEST(DetectDiou, NumericCases) {
  const Box a{0.5f, 0.5f, 0.2f, 0.2f};
  const Box b{0.6f, 0.5f, 0.2f, 0.2f};
  // enclosing box 0.3 x 0.2: c = 0.13, d = 0.01, (d/c)^0.6 = 0.2146021
  EXPECT_NEAR(box_diou(a, b, 0.6f), 1.0 / 3.0 - 0.2146021, 1e-6);
  EXPECT_NEAR(box_diou(a, b, 1.0f), 1.0 / 3.0 - 0.01 / 0.13, 1e-6);
  EXPECT_NEAR(box_diou({0.3f, 0.4f, 0.2f, 0.3f}, {0.35f, 0.3f, 0.3f, 0.1f}, 0.6f), 0.0838858, 1e-6);
  // Same centers: no penalty.
  EXPECT_FLOAT_EQ(box_diou({0.5f, 0.5f, 0.4f, 0.4f}, {0.5f, 0.5f, 0.2f, 0.2f}, 0.6f), 0.25f);
  // c == 0 (two zero-size boxes at one point): returns the IoU (0).
  EXPECT_EQ(box_diou({0.5f, 0.5f, 0, 0}, {0.5f, 0.5f, 0, 0}, 0.6f), 0.f);
  // Disjoint boxes go negative.
  EXPECT_LT(box_diou(a, {0.9f, 0.9f, 0.1f, 0.1f}, 0.6f), 0.f);
}

TEST(DetectDiou, NeverAboveIou) {
  // The penalty is >= 0, so a pair suppressed by DIoU is always suppressed by IoU:
  // "DIoU suppresses but IoU keeps" cannot happen.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> pos(0.f, 1.f), size(0.01f, 0.6f);
  for (int i = 0; i < 2000; ++i) {
    const Box a{pos(rng), pos(rng), size(rng), size(rng)};
    const Box b{pos(rng), pos(rng), size(rng), size(rng)};
    EXPECT_LE(box_diou(a, b, 0.6f), box_iou(a, b));
  }
}

// IoU 0.538 > .45 but DIoU^0.6 = 0.408 <= .45 (DIoU^1.0 = 0.505 > .45).
const Box kLeft{0.5f, 0.5f, 0.4f, 0.4f};
const Box kShifted{0.62f, 0.5f, 0.4f, 0.4f};

TEST(DetectNms, IouSuppressesWhereDiouKeeps) {
  ASSERT_GT(box_iou(kLeft, kShifted), 0.45f);
  ASSERT_LE(box_diou(kLeft, kShifted, 0.6f), 0.45f);

  std::vector<Candidate> iou = {cand(kLeft, {0.9f}), cand(kShifted, {0.8f})};
  nms_sort(&iou, 1, 0.45f, NmsKind::kDefault, 0.6f);
  EXPECT_EQ(iou[0].prob[0], 0.9f);
  EXPECT_EQ(iou[1].prob[0], 0.f);

  std::vector<Candidate> greedy = {cand(kLeft, {0.9f}), cand(kShifted, {0.8f})};
  nms_sort(&greedy, 1, 0.45f, NmsKind::kGreedy, 0.6f);
  EXPECT_EQ(greedy[0].prob[0], 0.9f);
  EXPECT_EQ(greedy[1].prob[0], 0.8f);
}

TEST(DetectNms, GreedyHardCodesExponentDiouUsesBeta) {
  // Same pair with beta 1.0: DIOU_NMS suppresses, GREEDY_NMS ignores beta (0.6) and keeps.
  std::vector<Candidate> diou = {cand(kLeft, {0.9f}), cand(kShifted, {0.8f})};
  nms_sort(&diou, 1, 0.45f, NmsKind::kDiou, 1.0f);
  EXPECT_EQ(diou[1].prob[0], 0.f);

  std::vector<Candidate> greedy = {cand(kLeft, {0.9f}), cand(kShifted, {0.8f})};
  nms_sort(&greedy, 1, 0.45f, NmsKind::kGreedy, 1.0f);
  EXPECT_EQ(greedy[1].prob[0], 0.8f);
}

TEST(DetectNms, HigherProbabilitySurvivesRegardlessOfOrder) {
  std::vector<Candidate> c = {cand(kShifted, {0.3f}), cand(kLeft, {0.95f})};
  nms_sort(&c, 1, 0.45f, NmsKind::kDefault, 0.6f);
  EXPECT_EQ(c[0].prob[0], 0.f);
  EXPECT_EQ(c[1].prob[0], 0.95f);
  // Candidates are never moved or removed.
  EXPECT_EQ(c[0].box.x, kShifted.x);
  EXPECT_EQ(c[1].box.x, kLeft.x);
}

TEST(DetectNms, ClassesAreIndependent) {
  // Heavily overlapping pair: class 0 keeps A, class 1 keeps B.
  const Box a{0.5f, 0.5f, 0.3f, 0.3f};
  const Box b{0.51f, 0.5f, 0.3f, 0.3f};
  std::vector<Candidate> c = {cand(a, {0.9f, 0.3f}), cand(b, {0.8f, 0.7f})};
  nms_sort(&c, 2, 0.45f, NmsKind::kGreedy, 0.6f);
  EXPECT_EQ(c[0].prob[0], 0.9f);
  EXPECT_EQ(c[0].prob[1], 0.f);
  EXPECT_EQ(c[1].prob[0], 0.f);
  EXPECT_EQ(c[1].prob[1], 0.7f);
}

TEST(DetectNms, SuppressedBoxDoesNotSuppress) {
  // A overlaps B, B overlaps C, A does not overlap C: A kills B, B (now 0) is
  // skipped as a suppressor, so C survives (Darknet: `if (prob[k] == 0) continue`).
  const Box a{0.3f, 0.5f, 0.2f, 0.2f};
  const Box b{0.36f, 0.5f, 0.2f, 0.2f};
  const Box cc{0.42f, 0.5f, 0.2f, 0.2f};
  ASSERT_GT(box_iou(a, b), 0.45f);
  ASSERT_GT(box_iou(b, cc), 0.45f);
  ASSERT_LE(box_iou(a, cc), 0.45f);
  std::vector<Candidate> c = {cand(cc, {0.7f}), cand(b, {0.8f}), cand(a, {0.9f})};
  nms_sort(&c, 1, 0.45f, NmsKind::kDefault, 0.6f);
  EXPECT_EQ(c[2].prob[0], 0.9f);
  EXPECT_EQ(c[1].prob[0], 0.f);
  EXPECT_EQ(c[0].prob[0], 0.7f);
}

TEST(DetectNms, TiesGoToTheEarlierCandidate) {
  const Box a{0.5f, 0.5f, 0.3f, 0.3f};
  const Box b{0.52f, 0.5f, 0.3f, 0.3f};
  std::vector<Candidate> c = {cand(a, {0.6f}), cand(b, {0.6f})};
  nms_sort(&c, 1, 0.45f, NmsKind::kDefault, 0.6f);
  EXPECT_EQ(c[0].prob[0], 0.6f);
  EXPECT_EQ(c[1].prob[0], 0.f);
  std::vector<Candidate> d = {cand(b, {0.6f}), cand(a, {0.6f})};
  nms_sort(&d, 1, 0.45f, NmsKind::kDefault, 0.6f);
  EXPECT_EQ(d[0].prob[0], 0.6f);
  EXPECT_EQ(d[1].prob[0], 0.f);
}

TEST(DetectNms, ZeroObjectnessIsOutsideNms) {
  // Darknet moves objectness == 0 detections past the NMS range.
  const Box a{0.5f, 0.5f, 0.3f, 0.3f};
  std::vector<Candidate> c = {cand(a, {0.9f}, 0.f), cand(a, {0.5f}), cand(a, {0.4f})};
  nms_sort(&c, 1, 0.45f, NmsKind::kDefault, 0.6f);
  EXPECT_EQ(c[0].prob[0], 0.9f);
  EXPECT_EQ(c[1].prob[0], 0.5f);
  EXPECT_EQ(c[2].prob[0], 0.f);
}

TEST(DetectNms, ThresholdIsStrict) {
  // Two boxes whose IoU is exactly 0.5 in float: kept at nms 0.5, suppressed below.
  const Box a{0.5f, 0.5f, 0.5f, 0.5f};
  const Box b{0.5f, 0.5f, 0.5f, 0.25f};
  ASSERT_EQ(box_iou(a, b), 0.5f);
  std::vector<Candidate> c = {cand(a, {0.9f}), cand(b, {0.8f})};
  nms_sort(&c, 1, 0.5f, NmsKind::kDefault, 0.6f);
  EXPECT_EQ(c[1].prob[0], 0.8f);
  nms_sort(&c, 1, 0.49f, NmsKind::kDefault, 0.6f);
  EXPECT_EQ(c[1].prob[0], 0.f);
}

}  // namespace
}  // namespace dlr
