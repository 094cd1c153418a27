// nms_sort finds the pairs that can suppress once for every class (a sweep over boxes
// sorted by left edge) instead of comparing every pair of every class. It must give
// Darknet's do_nms_sort result bit for bit: checked here against that loop written
// out plainly, on random candidates with overlapping, identical, degenerate and
// non-finite boxes, tied probabilities, IoU and DIoU NMS and thresholds from -0.1 to 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "runtime/detect/detection.h"

namespace dlr {
namespace {

// Darknet's do_nms_sort / diounms_sort as box.c writes them (every pair of every class),
// with the tie rule of nms.cpp (equal probabilities: the earlier candidate first).
void reference_nms(std::vector<Candidate>* cands, int classes, float thresh, NmsKind kind, float beta) {
  std::vector<Candidate>& d = *cands;
  std::vector<int> order;
  for (int i = 0; i < int(d.size()); ++i)
    if (d[size_t(i)].objectness != 0) order.push_back(i);
  for (int k = 0; k < classes; ++k) {
    std::vector<int> idx;
    for (int i : order)
      if (k < int(d[size_t(i)].prob.size())) idx.push_back(i);  // a shorter list: no probability there
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return d[size_t(a)].prob[size_t(k)] > d[size_t(b)].prob[size_t(k)]; });
    for (size_t i = 0; i < idx.size(); ++i) {
      if (d[size_t(idx[i])].prob[size_t(k)] == 0) continue;
      const Box a = d[size_t(idx[i])].box;
      for (size_t j = i + 1; j < idx.size(); ++j) {
        Candidate& c = d[size_t(idx[j])];
        const float crit = kind == NmsKind::kDefault ? box_iou(a, c.box) : box_diou(a, c.box, beta);
        if (crit > thresh) c.prob[size_t(k)] = 0;
      }
    }
  }
}

// n candidates in a few clusters (so that many overlap), some exact copies, some with a
// zero or negative size, some with NaN or infinite coordinates and some with fewer class
// probabilities than `classes` when `odd`, probabilities from a few levels (ties) or 0,
// objectness 0 now and then.
std::vector<Candidate> random_candidates(std::mt19937& rng, int n, int classes, bool odd) {
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<Candidate> out;
  for (int i = 0; i < n; ++i) {
    Candidate c;
    const float cx = float(int(u(rng) * 4)) / 4 + 0.1f, cy = float(int(u(rng) * 3)) / 3 + 0.1f;
    c.box = {cx + 0.1f * u(rng), cy + 0.1f * u(rng), 0.05f + 0.3f * u(rng), 0.05f + 0.3f * u(rng)};
    const float roll = u(rng);
    if (roll < 0.1f && !out.empty()) c.box = out[size_t(rng() % out.size())].box;  // an exact copy
    if (roll > 0.95f) c.box.w = roll > 0.975f ? 0.f : -0.1f;
    if (odd && roll > 0.9f && roll <= 0.95f) {
      const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(), 3e38f};
      float* field[] = {&c.box.x, &c.box.y, &c.box.w, &c.box.h};
      *field[rng() % 4] = bad[rng() % 4];
    }
    c.objectness = u(rng) < 0.05f ? 0.f : 0.9f;
    const int listed = odd && u(rng) < 0.05f ? int(rng() % unsigned(classes)) : classes;  // now and then fewer
    for (int k = 0; k < listed; ++k) c.prob.push_back(u(rng) < 0.3f ? 0.f : float(1 + rng() % 6) / 8);
    out.push_back(std::move(c));
  }
  return out;
}

bool same_probs(const std::vector<Candidate>& a, const std::vector<Candidate>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].prob.size() != b[i].prob.size() ||
        std::memcmp(a[i].prob.data(), b[i].prob.data(), a[i].prob.size() * sizeof(float)) != 0)
      return false;
  return true;
}

TEST(DetectNmsGraph, SameAsEveryPairOfEveryClass) {
  std::mt19937 rng(7);
  int cases = 0, suppressed = 0;
  for (int round = 0; round < 60; ++round) {
    const int classes = 1 + round % 5, n = 2 + int(rng() % 300);
    const bool odd = round % 3 == 0;
    const std::vector<Candidate> base = random_candidates(rng, n, classes, odd);
    for (NmsKind kind : {NmsKind::kDefault, NmsKind::kDiou})
      for (float thresh : {-0.1f, 0.f, 0.3f, 0.45f, 1.f}) {
        std::vector<Candidate> fast = base, slow = base;
        nms_sort(&fast, classes, thresh, kind, 0.6f);
        reference_nms(&slow, classes, thresh, kind, 0.6f);
        ASSERT_TRUE(same_probs(fast, slow)) << "round " << round << " kind " << int(kind) << " thresh " << thresh;
        for (size_t i = 0; i < base.size(); ++i)
          for (size_t k = 0; k < base[i].prob.size(); ++k) suppressed += base[i].prob[k] != 0 && fast[i].prob[k] == 0;
        ++cases;
      }
  }
  EXPECT_EQ(cases, 600);
  EXPECT_GT(suppressed, 1000);  // the cases do suppress
}

// So many identical boxes that the pairs would pass the graph's edge limit: NMS falls
// back to Darknet's loop and still keeps one box per class.
TEST(DetectNmsGraph, DenseOverlapFallsBackToEveryPair) {
  std::vector<Candidate> c(2100);
  for (size_t i = 0; i < c.size(); ++i) {
    c[i].box = {0.5f, 0.5f, 0.2f, 0.2f};
    c[i].objectness = 0.9f;
    c[i].prob = {float(i % 7 + 1) / 8, 0.5f};
  }
  std::vector<Candidate> slow = c;
  nms_sort(&c, 2, 0.45f, NmsKind::kDefault, 0.6f);
  reference_nms(&slow, 2, 0.45f, NmsKind::kDefault, 0.6f);
  ASSERT_TRUE(same_probs(c, slow));
  for (int k = 0; k < 2; ++k) {
    int kept = 0;
    for (const Candidate& d : c) kept += d.prob[size_t(k)] != 0;
    EXPECT_EQ(kept, 1) << "class " << k;
  }
}

}  // namespace
}  // namespace dlr
