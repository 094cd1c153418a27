// Darknet image.c:get_actual_detections + compare_by_lefts (AlexeyAB/darknet
// src/image.c):
//  - best class: the running maximum starting at thresh with a strict '>', so the
//    class must exceed thresh and ties go to the lowest index;
//  - a candidate without a best class is dropped;
//  - extras: every other class with prob > thresh, in class order (the extra lines
//    draw_detections_v3 prints);
//  - order: left edge x - w/2 ascending. Darknet uses qsort (unstable); here the
//    sort is stable, so equal left edges keep the candidate order.
// Darknet also skips classes whose name starts with "dont_show" when choosing the
// best class; the overload taking names does that.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>

#include "runtime/core/status.h"
#include "runtime/detect/detection.h"

namespace dlr {
namespace {

std::vector<Detection> select_impl(const std::vector<Candidate>& cands, int classes, float thresh,
                                   const std::vector<std::string>* names) {
  std::vector<Detection> out;
  for (const Candidate& c : cands) {
    const int n = std::min(classes, static_cast<int>(c.prob.size()));
    int best = -1;
    float best_prob = thresh;
    for (int j = 0; j < n; ++j) {
      if (names != nullptr && j < static_cast<int>(names->size()) &&
          (*names)[j].compare(0, 9, "dont_show") == 0) {
        continue;
      }
      if (c.prob[j] > best_prob) {
        best = j;
        best_prob = c.prob[j];
      }
    }
    if (best < 0) continue;
    Detection d;
    d.class_id = best;
    d.prob = c.prob[best];
    d.box = c.box;
    for (int j = 0; j < n; ++j) {
      if (j != best && c.prob[j] > thresh) d.others.push_back({j, c.prob[j]});
    }
    out.push_back(std::move(d));
  }
  // compare_by_lefts: delta = left(a) - left(b) in float; a first when delta < 0.
  std::stable_sort(out.begin(), out.end(), [](const Detection& a, const Detection& b) {
    const float delta = (a.box.x - a.box.w / 2) - (b.box.x - b.box.w / 2);
    return delta < 0;
  });
  return out;
}

}  // namespace

std::vector<Detection> select_detections(const std::vector<Candidate>& cands, int classes, float thresh) {
  return select_impl(cands, classes, thresh, nullptr);
}

std::vector<Detection> select_detections(const std::vector<Candidate>& cands, int classes, float thresh,
                                         const std::vector<std::string>& names) {
  return select_impl(cands, classes, thresh, &names);
}

}  // namespace dlr
