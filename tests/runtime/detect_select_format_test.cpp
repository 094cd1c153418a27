// select_detections and format_darknet vs Darknet get_actual_detections /
// compare_by_lefts / draw_detections_v3 (shared docs DARKNET.md 4.6, section 5).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/detect/detection.h"

namespace dlr {
namespace {

Candidate cand(Box b, std::vector<float> prob) {
  Candidate c;
  c.box = b;
  c.objectness = 0.9f;
  c.prob = std::move(prob);
  return c;
}

// A box relative to a W x H image from Darknet's printed pixel tuple.
Box from_pixels(float left, float top, float width, float height, int image_w, int image_h) {
  return {(left + width / 2) / image_w, (top + height / 2) / image_h, width / image_w, height / image_h};
}

TEST(DetectSelect, BestClassStrictAndLowestIndexOnTie) {
  const std::vector<Candidate> cands = {
      cand({0.5f, 0.5f, 0.1f, 0.1f}, {0.5f, 0.5f, 0.3f}),    // tie -> class 0, extras 1 and 2
      cand({0.6f, 0.5f, 0.1f, 0.1f}, {0.25f, 0.1f, 0.f}),    // == thresh only: dropped
      cand({0.7f, 0.5f, 0.1f, 0.1f}, {0.f, 0.26f, 0.9f}),    // best 2, extra 1
      cand({0.8f, 0.5f, 0.1f, 0.1f}, {0.f, 0.f, 0.f}),       // nothing: dropped
  };
  const std::vector<Detection> d = select_detections(cands, 3, 0.25f);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].class_id, 0);
  EXPECT_EQ(d[0].prob, 0.5f);
  ASSERT_EQ(d[0].others.size(), 2u);
  EXPECT_EQ(d[0].others[0].class_id, 1);
  EXPECT_EQ(d[0].others[0].prob, 0.5f);
  EXPECT_EQ(d[0].others[1].class_id, 2);
  EXPECT_EQ(d[0].others[1].prob, 0.3f);
  EXPECT_EQ(d[1].class_id, 2);
  EXPECT_EQ(d[1].prob, 0.9f);
  ASSERT_EQ(d[1].others.size(), 1u);
  EXPECT_EQ(d[1].others[0].class_id, 1);
  EXPECT_EQ(d[1].box.x, 0.7f);
}

TEST(DetectSelect, SortedByLeftEdgeStable) {
  const std::vector<Candidate> cands = {
      cand({0.50f, 0.1f, 0.4f, 0.1f}, {0.9f, 0.f}),  // left 0.30
      cand({0.15f, 0.2f, 0.1f, 0.1f}, {0.f, 0.8f}),  // left 0.10
      cand({0.375f, 0.3f, 0.25f, 0.1f}, {0.7f, 0.f}),   // left 0.25 (exact in float)
      cand({0.3125f, 0.4f, 0.125f, 0.1f}, {0.6f, 0.f}), // left 0.25: equal, stays after the previous
      cand({0.0f, 0.5f, 0.4f, 0.1f}, {0.5f, 0.f}),   // left -0.20
  };
  const std::vector<Detection> d = select_detections(cands, 2, 0.25f);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].prob, 0.5f);
  EXPECT_EQ(d[1].prob, 0.8f);
  EXPECT_EQ(d[2].prob, 0.7f);
  EXPECT_EQ(d[3].prob, 0.6f);
  EXPECT_EQ(d[4].prob, 0.9f);
}

TEST(DetectSelect, ClassesBeyondCountIgnored) {
  const std::vector<Candidate> cands = {cand({0.5f, 0.5f, 0.1f, 0.1f}, {0.1f, 0.9f})};
  EXPECT_TRUE(select_detections(cands, 1, 0.25f).empty());
}

TEST(DetectSelect, DontShowNamesAreNeverBest) {
  const std::vector<std::string> names = {"dont_show_person", "dog"};
  const std::vector<Candidate> cands = {cand({0.5f, 0.5f, 0.1f, 0.1f}, {0.9f, 0.5f}),
                                        cand({0.6f, 0.5f, 0.1f, 0.1f}, {0.9f, 0.f})};
  const std::vector<Detection> d = select_detections(cands, 2, 0.25f, names);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].class_id, 1);
  ASSERT_EQ(d[0].others.size(), 1u);  // Darknet still prints it as an extra line
  EXPECT_EQ(d[0].others[0].class_id, 0);
}

TEST(DetectFormat, DogLineExact) {
  Detection d;
  d.class_id = 1;
  d.prob = 0.98f;
  d.box = from_pixels(129, 225, 184, 317, 768, 576);
  const std::vector<std::string> names = {"bicycle", "dog"};
  EXPECT_EQ(format_darknet({d}, names, 768, 576, true),
            "dog: 98%\t(left_x:  129   top_y:  225   width:  184   height:  317)\n");
  EXPECT_EQ(format_darknet({d}, names, 768, 576, false), "dog: 98%\n");
}

TEST(DetectFormat, NegativeAndPastTheEdgeUnclamped) {
  Detection d;
  d.class_id = 0;
  d.prob = 0.5f;
  d.box = {0.01f, 0.02f, 0.1f, 0.1f};  // left -30.72, top -17.28, 76.8 x 57.6
  Detection e;
  e.class_id = 0;
  e.prob = 0.5f;
  e.box = {0.99f, 0.99f, 0.1f, 0.1f};  // left 721.92, top 541.44
  EXPECT_EQ(format_darknet({d, e}, {"cat"}, 768, 576, true),
            "cat: 50%\t(left_x:  -31   top_y:  -17   width:   77   height:   58)\n"
            "cat: 50%\t(left_x:  722   top_y:  541   width:   77   height:   58)\n");
}

TEST(DetectFormat, PercentRoundsTheFloatProduct) {
  // prob*100 is a float product; %.0f rounds half to even on the exact value.
  Detection d;
  d.class_id = 0;
  d.box = {0.5f, 0.5f, 0.1f, 0.1f};
  const std::vector<std::string> names = {"x"};
  d.prob = 0.925f;  // 92.5f -> "92"
  EXPECT_EQ(format_darknet({d}, names, 10, 10, false), "x: 92%\n");
  d.prob = 0.335f;  // 33.5f -> "34"
  EXPECT_EQ(format_darknet({d}, names, 10, 10, false), "x: 34%\n");
  d.prob = 0.3251f;
  EXPECT_EQ(format_darknet({d}, names, 10, 10, false), "x: 33%\n");
}

TEST(DetectFormat, ExtraClassLinesShareTheBox) {
  Detection d;
  d.class_id = 2;
  d.prob = 0.7f;
  d.box = from_pixels(10, 20, 30, 40, 100, 100);
  d.others = {{0, 0.4f}, {1, 0.3f}};
  const std::vector<std::string> names = {"a", "b", "c"};
  EXPECT_EQ(format_darknet({d}, names, 100, 100, true),
            "c: 70%\t(left_x:   10   top_y:   20   width:   30   height:   40)\n"
            "a: 40%\t(left_x:   10   top_y:   20   width:   30   height:   40)\n"
            "b: 30%\t(left_x:   10   top_y:   20   width:   30   height:   40)\n");
  EXPECT_EQ(format_darknet({d}, names, 100, 100, false), "c: 70%\na: 40%\nb: 30%\n");
  EXPECT_EQ(format_darknet({d}, {"a"}, 100, 100, false), "2: 70%\na: 40%\n1: 30%\n");  // missing names
}

TEST(DetectFormat, DogJpgReportedLinesFromCandidates) {
  // DARKNET.md section 5 (yolov4, 608, -ext_output): candidates given out of order
  // go through select_detections (left-edge order) and format_darknet.
  const int w = 768, h = 576;
  std::vector<std::string> names(80, "?");
  names[1] = "bicycle";
  names[7] = "truck";
  names[16] = "dog";
  names[58] = "pottedplant";
  auto make = [&](int cls, float p, Box b) {
    std::vector<float> prob(80, 0.f);
    prob[cls] = p;
    return cand(b, prob);
  };
  const std::vector<Candidate> cands = {
      make(58, 0.33f, from_pixels(681, 109, 37, 45, w, h)),
      make(16, 0.98f, from_pixels(129, 225, 184, 317, w, h)),
      make(7, 0.92f, from_pixels(464, 77, 221, 93, w, h)),
      make(1, 0.92f, from_pixels(114, 128, 458, 299, w, h)),
  };
  EXPECT_EQ(format_darknet(select_detections(cands, 80, 0.25f), names, w, h, true),
            "bicycle: 92%\t(left_x:  114   top_y:  128   width:  458   height:  299)\n"
            "dog: 98%\t(left_x:  129   top_y:  225   width:  184   height:  317)\n"
            "truck: 92%\t(left_x:  464   top_y:   77   width:  221   height:   93)\n"
            "pottedplant: 33%\t(left_x:  681   top_y:  109   width:   37   height:   45)\n");
}

}  // namespace
}  // namespace dlr
