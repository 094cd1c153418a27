// Darknet box.c NMS (AlexeyAB/darknet src/box.c): overlap/box_iou, box_diou
// (GREEDY_NMS, exponent 0.6 as a double literal), box_diounms (DIOU_NMS, exponent
// beta_nms: a float promoted to double), do_nms_sort and diounms_sort.
//
// Determinism: Darknet qsorts the detections per class with an unstable sort, so
// the order of equal probabilities depends on libc. Here candidates are never
// moved: each class sorts an index list with std::stable_sort by probability
// descending, ties broken by the original candidate index (lower first, i.e.
// the earlier candidate - earlier head, cell, anchor - wins a tie).
// No contraction into FMA (it would change the last bit of an IoU).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/core/status.h"
#include "runtime/detect/detection.h"

namespace dlr {
namespace {

// Darknet overlap(): length of the intersection of two 1-D segments given as
// center/size (negative when they do not meet).
float overlap(float x1, float w1, float x2, float w2) {
  const float l1 = x1 - w1 / 2;
  const float l2 = x2 - w2 / 2;
  const float left = l1 > l2 ? l1 : l2;
  const float r1 = x1 + w1 / 2;
  const float r2 = x2 + w2 / 2;
  const float right = r1 < r2 ? r1 : r2;
  return right - left;
}

float box_intersection(const Box& a, const Box& b) {
  const float w = overlap(a.x, a.w, b.x, b.w);
  const float h = overlap(a.y, a.h, b.y, b.h);
  if (w < 0 || h < 0) return 0;
  return w * h;
}

// box_diou / box_diounms with the exponent as the double Darknet passes to pow().
float diou_impl(const Box& a, const Box& b, double beta) {
  // box_c: the smallest box enclosing both (fmin/fmax in double of float values: exact).
  const float top = std::min(a.y - a.h / 2, b.y - b.h / 2);
  const float bot = std::max(a.y + a.h / 2, b.y + b.h / 2);
  const float left = std::min(a.x - a.w / 2, b.x - b.w / 2);
  const float right = std::max(a.x + a.w / 2, b.x + b.w / 2);
  const float w = right - left;
  const float h = bot - top;
  const float c = w * w + h * h;
  const float iou = box_iou(a, b);
  if (c == 0) return iou;
  const float d = (a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y);
  const float u = static_cast<float>(std::pow(static_cast<double>(d / c), beta));
  return iou - u;
}

}  // namespace

float box_iou(const Box& a, const Box& b) {
  const float i = box_intersection(a, b);
  const float u = a.w * a.h + b.w * b.h - i;  // box_union (recomputes the same intersection)
  if (i == 0 || u == 0) return 0;
  return i / u;
}

float box_diou(const Box& a, const Box& b, float beta) { return diou_impl(a, b, static_cast<double>(beta)); }

void nms_sort(std::vector<Candidate>* cands, int classes, float thresh, NmsKind kind, float beta) {
  DLR_ASSERT(cands != nullptr);
  std::vector<Candidate>& dets = *cands;
  // Darknet's preamble moves detections with objectness == 0 out of the NMS range:
  // they neither suppress nor get suppressed.
  std::vector<int> order;
  order.reserve(dets.size());
  for (int i = 0; i < static_cast<int>(dets.size()); ++i) {
    if (dets[i].objectness != 0) order.push_back(i);
  }
  // GREEDY_NMS calls box_diou (pow(.., 0.6) with a double literal); DIOU_NMS calls
  // box_diounms(.., l.beta_nms) whose float exponent is promoted to double.
  const double exponent = kind == NmsKind::kGreedy ? 0.6 : static_cast<double>(beta);

  std::vector<int> idx;
  for (int k = 0; k < classes; ++k) {
    // Only candidates with prob[k] != 0 can suppress; zeroing a zero is a no-op,
    // so the sorted list is restricted to the nonzero ones (same outcome).
    idx.clear();
    for (int i : order) {
      if (k < static_cast<int>(dets[i].prob.size()) && dets[i].prob[k] != 0) idx.push_back(i);
    }
    if (idx.size() < 2) continue;
    // `order` is ascending, so stable_sort leaves equal probabilities in index order.
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return dets[a].prob[k] > dets[b].prob[k]; });
    const size_t n = idx.size();
    for (size_t i = 0; i < n; ++i) {
      const Candidate& ci = dets[idx[i]];
      if (ci.prob[k] == 0) continue;
      const Box a = ci.box;
      for (size_t j = i + 1; j < n; ++j) {
        Candidate& cj = dets[idx[j]];
        if (cj.prob[k] == 0) continue;  // already suppressed: nothing to change
        const float crit = kind == NmsKind::kDefault ? box_iou(a, cj.box) : diou_impl(a, cj.box, exponent);
        if (crit > thresh) cj.prob[k] = 0;
      }
    }
  }
}

}  // namespace dlr
