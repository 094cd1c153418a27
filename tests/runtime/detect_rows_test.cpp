// yolo_candidates_from_rows (the candidates a device picked, runtime/detect/yolo_decode.cpp)
// against yolo_candidates over the whole output: the same candidates, bit for bit, in the
// same order, whatever order the rows come in; and postprocess over rows against the whole
// output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/detect/detection.h"

namespace dlr {
namespace {

constexpr int kW = 7, kH = 5, kAnchors = 3, kClasses = 4, kEntries = kClasses + 5;

YoloParams params(bool new_coords) {
  YoloParams p;
  p.classes = kClasses;
  p.total = 6;
  p.mask = {3, 4, 5};
  p.anchors = {10, 13, 16, 30, 33, 23, 30, 61, 62, 45, 59, 119};
  p.new_coords = new_coords;
  return p;
}

// A head output (anchors x entries planes of kW x kH) of values in (0, 1), objectness
// included, and a few cells exactly at the threshold (not candidates: strict >).
std::vector<float> random_head(uint32_t seed, float thresh) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> out(size_t(kAnchors) * kEntries * kW * kH);
  for (float& v : out) v = u(rng);
  for (int a = 0; a < kAnchors; ++a) out[size_t(a * kEntries + 4) * kW * kH + size_t(a)] = thresh;
  return out;
}

// What the device hands over: every candidate's key and row, in a shuffled order.
void pick_rows(const std::vector<float>& out, float thresh, uint32_t seed, std::vector<int32_t>* keys,
               std::vector<float>* rows) {
  const int cells = kW * kH;
  std::vector<int32_t> found;
  for (int cell = 0; cell < cells; ++cell)
    for (int a = 0; a < kAnchors; ++a)
      if (out[size_t(a * kEntries + 4) * cells + size_t(cell)] > thresh) found.push_back(cell * kAnchors + a);
  std::shuffle(found.begin(), found.end(), std::mt19937(seed));
  keys->assign(found.begin(), found.end());
  rows->clear();
  for (int32_t key : found) {
    const int cell = key / kAnchors, a = key % kAnchors;
    for (int e = 0; e < kEntries; ++e) rows->push_back(out[size_t(a * kEntries + e) * cells + size_t(cell)]);
  }
}

void expect_same(const std::vector<Candidate>& a, const std::vector<Candidate>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(&a[i].box, &b[i].box, sizeof(Box))) << "candidate " << i;
    EXPECT_EQ(a[i].objectness, b[i].objectness) << "candidate " << i;
    EXPECT_EQ(a[i].prob, b[i].prob) << "candidate " << i;
  }
}

TEST(DetectRows, SameCandidatesInTheSameOrderAsTheWholeOutput) {
  for (bool new_coords : {false, true}) {
    for (float thresh : {0.25f, 0.6f, 0.95f}) {
      const YoloParams p = params(new_coords);
      const std::vector<float> out = random_head(7, thresh);
      std::vector<int32_t> keys;
      std::vector<float> rows;
      pick_rows(out, thresh, 11, &keys, &rows);
      std::vector<Candidate> whole, picked;
      yolo_candidates(p, out.data(), kW, kH, 416, 320, thresh, &whole);
      yolo_candidates_from_rows(p, keys.data(), rows.data(), int(keys.size()), kW, kH, 416, 320, thresh, &picked);
      ASSERT_FALSE(whole.empty());
      SCOPED_TRACE(std::string("new_coords ") + (new_coords ? "1" : "0") + " thresh " + std::to_string(thresh));
      expect_same(whole, picked);
    }
  }
}

TEST(DetectRows, NoRowsNoCandidates) {
  std::vector<Candidate> got;
  const int32_t key = 0;
  const float row[kEntries] = {};
  yolo_candidates_from_rows(params(false), &key, row, 0, kW, kH, 416, 320, 0.25f, &got);
  EXPECT_TRUE(got.empty());
}

TEST(DetectRows, PostprocessOverRowsEqualsTheWholeOutput) {
  const float thresh = 0.5f;
  const YoloParams p = params(false);
  std::vector<std::vector<float>> outs;
  std::vector<std::vector<int32_t>> keys(2);
  std::vector<std::vector<float>> rows(2);
  for (uint32_t h = 0; h < 2; ++h) {
    outs.push_back(random_head(21 + h, thresh));
    pick_rows(outs.back(), thresh, 5 + h, &keys[h], &rows[h]);
  }
  std::vector<HeadOutput> whole(2), picked(2);
  for (size_t h = 0; h < 2; ++h) {
    whole[h].params = picked[h].params = &p;
    whole[h].w = picked[h].w = kW;
    whole[h].h = picked[h].h = kH;
    whole[h].data = outs[h].data();
    picked[h].data = rows[h].data();
    picked[h].keys = keys[h].data();
    picked[h].rows = int(keys[h].size());
  }
  PostprocessOptions o;
  o.thresh = thresh;
  o.letterbox = true;
  const std::vector<Detection> a = postprocess(whole, 416, 320, 640, 480, o);
  const std::vector<Detection> b = postprocess(picked, 416, 320, 640, 480, o);
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].class_id, b[i].class_id);
    EXPECT_EQ(a[i].prob, b[i].prob);
    EXPECT_EQ(0, std::memcmp(&a[i].box, &b[i].box, sizeof(Box)));
    EXPECT_EQ(a[i].others.size(), b[i].others.size());
  }
}

}  // namespace
}  // namespace dlr
