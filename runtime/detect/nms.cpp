// Darknet box.c NMS (AlexeyAB/darknet src/box.c): overlap/box_iou, box_diou
// (GREEDY_NMS, exponent 0.6 as a double literal), box_diounms (DIOU_NMS, exponent
// beta_nms: a float promoted to double), do_nms_sort and diounms_sort.
//
// Determinism: Darknet qsorts the detections per class with an unstable sort, so
// the order of equal probabilities depends on libc. Here candidates are never
// moved: each class sorts an index list with std::stable_sort by probability
// descending, ties broken by the original candidate index (lower first, i.e.
// the earlier candidate - earlier head, cell, anchor - wins a tie).
// Darknet compares every pair of every class; where that adds up to more pairs than
// the candidates have, the pairs whose criterion passes the threshold are found once
// (suppression_graph) and the classes walk them, which zeroes the same probabilities
// (tests/runtime/detect_nms_graph_test.cpp).
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

namespace {

// The criterion NMS compares with its threshold: IoU, or DIoU with `exponent`.
float criterion(const Box& a, const Box& b, NmsKind kind, double exponent) {
  return kind == NmsKind::kDefault ? box_iou(a, b) : diou_impl(a, b, exponent);
}

// A box's edges as overlap() computes them.
struct Extent {
  float l, r, t, b;
};

Extent extent_of(const Box& a) { return {a.x - a.w / 2, a.x + a.w / 2, a.y - a.h / 2, a.y + a.h / 2}; }

bool all_finite(const Box& a, const Extent& e) {
  for (float v : {a.x, a.y, a.w, a.h, e.l, e.r, e.t, e.b})
    if (!std::isfinite(v)) return false;
  return true;
}

// Above this many edges the suppression graph is not built (memory); NMS then compares
// every pair of every class as Darknet does.
constexpr size_t kMaxEdges = size_t(1) << 22;

// The suppression graph over the candidates dets[order[p]]: out[p] holds every q with
// criterion(box p, box q) > thresh, the only pairs in which p can suppress q. One pass
// for all classes: the criterion does not depend on the class. Between finite boxes it
// is symmetric and, for thresh >= 0, needs the two boxes to overlap with positive width
// and height (else the intersection, the IoU and so the criterion are at most 0), so
// a sweep over the boxes sorted by left edge compares only boxes whose x ranges meet.
// A box with a non-finite coordinate is compared with every other, both ways (with a
// NaN the criterion is not symmetric). false when the graph passes kMaxEdges.
bool suppression_graph(const std::vector<Candidate>& dets, const std::vector<int>& order, float thresh, NmsKind kind,
                       double exponent, std::vector<std::vector<int>>* out) {
  const size_t m = order.size();
  out->assign(m, {});
  std::vector<Extent> ext(m);
  std::vector<int> sweep, other;
  for (size_t p = 0; p < m; ++p) {
    ext[p] = extent_of(dets[size_t(order[p])].box);
    (thresh >= 0 && all_finite(dets[size_t(order[p])].box, ext[p]) ? sweep : other).push_back(int(p));
  }
  size_t edges = 0;
  auto box = [&](int p) -> const Box& { return dets[size_t(order[size_t(p)])].box; };
  auto link = [&](int p, int q) {
    if (criterion(box(p), box(q), kind, exponent) > thresh) (*out)[size_t(p)].push_back(q), ++edges;
  };
  std::stable_sort(sweep.begin(), sweep.end(), [&](int a, int b) { return ext[size_t(a)].l < ext[size_t(b)].l; });
  for (size_t i = 0; i < sweep.size() && edges <= kMaxEdges; ++i) {
    const int a = sweep[i];
    const Extent& ea = ext[size_t(a)];
    for (size_t j = i + 1; j < sweep.size(); ++j) {
      const int b = sweep[j];
      const Extent& eb = ext[size_t(b)];
      if (eb.l >= ea.r) break;  // this and every later box: no x overlap with a
      if (std::max(ea.t, eb.t) >= std::min(ea.b, eb.b)) continue;
      if (criterion(box(a), box(b), kind, exponent) <= thresh) continue;
      (*out)[size_t(a)].push_back(b);
      (*out)[size_t(b)].push_back(a);
      edges += 2;
    }
  }
  std::vector<char> is_other(m, 0);
  for (int a : other) is_other[size_t(a)] = 1;
  for (int a : other)
    for (size_t q = 0; q < m && edges <= kMaxEdges; ++q) {
      if (int(q) == a) continue;
      link(a, int(q));
      if (!is_other[q]) link(int(q), a);  // two such boxes are linked from each side in turn
    }
  return edges <= kMaxEdges;
}

// Darknet's loop for one class over `idx` (sorted by probability): every candidate
// still above 0 zeroes each later one whose criterion with it passes thresh.
void suppress_pairs(std::vector<Candidate>& dets, const std::vector<int>& idx, int k, float thresh, NmsKind kind,
                    double exponent) {
  const size_t n = idx.size();
  for (size_t i = 0; i < n; ++i) {
    const Candidate& ci = dets[size_t(idx[i])];
    if (ci.prob[size_t(k)] == 0) continue;
    const Box a = ci.box;
    for (size_t j = i + 1; j < n; ++j) {
      Candidate& cj = dets[size_t(idx[j])];
      if (cj.prob[size_t(k)] == 0) continue;  // already suppressed: nothing to change
      if (criterion(a, cj.box, kind, exponent) > thresh) cj.prob[size_t(k)] = 0;
    }
  }
}

// The same through the suppression graph: p zeroes its neighbours ranked after it.
// pos[i]: the position in `order` of candidate i; rank: per position, -1 or its place
// in idx (left -1 again).
void suppress_graph(std::vector<Candidate>& dets, const std::vector<int>& order, const std::vector<int>& pos,
                    const std::vector<std::vector<int>>& out, const std::vector<int>& idx, int k,
                    std::vector<int>* rank) {
  for (size_t r = 0; r < idx.size(); ++r) (*rank)[size_t(pos[size_t(idx[r])])] = int(r);
  for (size_t r = 0; r < idx.size(); ++r) {
    const int p = pos[size_t(idx[r])];
    if (dets[size_t(idx[r])].prob[size_t(k)] == 0) continue;
    for (int q : out[size_t(p)]) {
      if ((*rank)[size_t(q)] <= int(r)) continue;  // ranked before p, or not in this class's list
      float& prob = dets[size_t(order[size_t(q)])].prob[size_t(k)];
      if (prob != 0) prob = 0;
    }
  }
  for (int i : idx) (*rank)[size_t(pos[size_t(i)])] = -1;
}

double all_pairs(size_t n) { return 0.5 * double(n) * double(n > 0 ? n - 1 : 0); }

}  // namespace

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
  // Darknet's loop compares the pairs of each class's candidates. Where those pairs, at
  // the rate of the classes so far, would add up to more than the pairs of all the
  // candidates (the most the sweep compares), as with an untrained detector's many
  // candidates in many classes, the pairs that can suppress are found once and the
  // remaining classes walk them. Each class's result is the same either way.
  std::vector<std::vector<int>> out;
  std::vector<int> pos, rank, idx;
  bool graph = false, tried = false;
  double compared = 0;
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
    const double expected = (compared + all_pairs(idx.size())) * double(classes) / double(k + 1);
    if (!tried && expected > all_pairs(order.size())) {
      tried = true;
      graph = suppression_graph(dets, order, thresh, kind, exponent, &out);
      pos.assign(dets.size(), -1);
      rank.assign(order.size(), -1);
      for (size_t p = 0; p < order.size(); ++p) pos[size_t(order[p])] = int(p);
    }
    if (graph) {
      suppress_graph(dets, order, pos, out, idx, k, &rank);
    } else {
      suppress_pairs(dets, idx, k, thresh, kind, exponent);
      compared += all_pairs(idx.size());
    }
  }
}

}  // namespace dlr
