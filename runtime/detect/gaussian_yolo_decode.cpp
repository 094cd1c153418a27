// Darknet [Gaussian_yolo] decode (detection.h gaussian_yolo_candidates):
// gaussian_yolo_layer.c get_gaussian_yolo_detections / get_gaussian_yolo_box, Darknet's
// float/double promotions kept:
//  - w = exp(double tw) * anchor_w / net_w in double, stored as float (same for h);
//  - x = (col + x) / lw in float; left_top: x = that + w/2, right_bottom: x = that - w/2 (float);
//  - uc_aver = (float)((s_x + s_y + s_w + s_h) / 4.0) (sum in float, division in double);
//    prob[j] = (float)(obj * cls_j * (1.0 - uc_aver)) (obj*cls in float, the rest in double),
//    kept if > thresh.
// Candidates: objectness > thresh (strict), cells row-major, anchors inner.
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

void gaussian_yolo_candidates(const GaussianYoloParams& g, const float* output, int lw, int lh, int net_w, int net_h,
                              float thresh, std::vector<Candidate>* out) {
  DLR_ASSERT(output != nullptr && out != nullptr && lw > 0 && lh > 0 && net_w > 0 && net_h > 0);
  const YoloParams& p = g.yolo;
  const int64_t stride = int64_t(lw) * lh;
  const int64_t anchor_stride = stride * (9 + p.classes);
  for (int m : p.mask) DLR_ASSERT(m >= 0 && 2 * size_t(m) + 1 < p.anchors.size());
  for (int64_t i = 0; i < stride; ++i) {
    const int row = static_cast<int>(i / lw);
    const int col = static_cast<int>(i % lw);
    for (size_t a = 0; a < p.mask.size(); ++a) {
      const float* base = output + int64_t(a) * anchor_stride + i;  // entry e at base[e*stride]
      const float objectness = base[8 * stride];
      if (!(objectness > thresh)) continue;
      const float anchor_w = p.anchors[2 * size_t(p.mask[a])];
      const float anchor_h = p.anchors[2 * size_t(p.mask[a]) + 1];
      Candidate c;
      c.box.w = static_cast<float>(std::exp(static_cast<double>(base[4 * stride])) * anchor_w / net_w);
      c.box.h = static_cast<float>(std::exp(static_cast<double>(base[6 * stride])) * anchor_h / net_h);
      c.box.x = (col + base[0]) / lw;
      c.box.y = (row + base[2 * stride]) / lh;
      if (g.point == YoloPoint::kLeftTop) {
        c.box.x = c.box.x + c.box.w / 2;
        c.box.y = c.box.y + c.box.h / 2;
      } else if (g.point == YoloPoint::kRightBottom) {
        c.box.x = c.box.x - c.box.w / 2;
        c.box.y = c.box.y - c.box.h / 2;
      }
      c.objectness = objectness;
      const float uc_sum = base[stride] + base[3 * stride] + base[5 * stride] + base[7 * stride];
      const float uc_aver = static_cast<float>(uc_sum / 4.0);
      c.prob.resize(size_t(p.classes));
      for (int j = 0; j < p.classes; ++j) {
        const float prob = static_cast<float>(objectness * base[(9 + j) * stride] * (1.0 - uc_aver));
        c.prob[size_t(j)] = prob > thresh ? prob : 0;
      }
      out->push_back(std::move(c));
    }
  }
}

}  // namespace dlr
