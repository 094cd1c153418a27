// Darknet [region] decode (detection.h region_candidates): network.c
// custom_get_region_detections -> region_layer.c get_region_boxes(l, 1, 1, ...) with
// DOABS = 1, Darknet's float/double promotions kept:
//  - x = (col + logistic(tx)) / lw in float (logistic = 1.f/(1.f + expf(-x)));
//  - w = exp(double tw) * anchor_w / lw in double, stored as float (same for h);
//  - prob[j] = objectness * class_j (float) if > thresh else 0.
// Output order: cells row-major, anchors inner (Darknet's index = cell*num + anchor).
// No contraction into FMA.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cmath>

#include "runtime/core/status.h"
#include "runtime/detect/detection.h"

namespace dlr {
namespace {

float logistic(float x) { return 1.f / (1.f + std::exp(-x)); }

}  // namespace

void region_candidates(const RegionParams& p, const float* output, int lw, int lh, float thresh,
                       std::vector<Candidate>* out) {
  DLR_ASSERT(output != nullptr && out != nullptr && lw > 0 && lh > 0);
  DLR_ASSERT(p.coords == 4 && p.anchors.size() >= 2 * size_t(p.num));
  const int64_t stride = int64_t(lw) * lh;
  const int entries = p.coords + 1 + p.classes;
  const int64_t anchor_stride = stride * entries;
  for (int64_t i = 0; i < stride; ++i) {
    const int row = static_cast<int>(i / lw);
    const int col = static_cast<int>(i % lw);
    for (int a = 0; a < p.num; ++a) {
      const float* base = output + a * anchor_stride + i;  // entry e at base[e*stride]
      const float scale = base[p.coords * stride];       // objectness (logistic applied by the layer)
      Candidate c;
      c.prob.assign(size_t(p.classes), 0.f);
      bool any = false;
      for (int j = 0; j < p.classes; ++j) {
        const float prob = scale * base[(p.coords + 1 + j) * stride];
        c.prob[size_t(j)] = prob > thresh ? prob : 0;
        any = any || prob > thresh;
      }
      if (!any) continue;
      c.box.x = (col + logistic(base[0])) / lw;
      c.box.y = (row + logistic(base[stride])) / lh;
      c.box.w = static_cast<float>(std::exp(static_cast<double>(base[2 * stride])) * p.anchors[2 * size_t(a)] / lw);
      c.box.h = static_cast<float>(std::exp(static_cast<double>(base[3 * stride])) * p.anchors[2 * size_t(a) + 1] / lh);
      c.objectness = 1;  // Darknet sets every region detection's objectness to 1
      out->push_back(std::move(c));
    }
  }
}

}  // namespace dlr
