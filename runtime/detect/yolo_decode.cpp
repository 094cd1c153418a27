// Darknet yolo_layer.c:get_yolo_detections / get_yolo_box / correct_yolo_boxes
// (AlexeyAB/darknet src/yolo_layer.c), with Darknet's float/double promotions kept:
//  - bx = (col + x) / lw in float; bw = exp(double tw) * anchor_w / net_w in double,
//    stored as float; new_coords: bw = tw*tw*4*anchor_w/net_w in float;
//  - correct_boxes: x = (x - (net_w-new_w)/2./net_w) / ((float)new_w/net_w) in double,
//    w *= (float)net_w/new_w in float.
// No contraction into FMA (it would change the last bit of a box).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/detect/detection.h"

namespace dlr {

namespace {

// The candidate of anchor `a` of cell (col, row) whose entry e is at base[e * stride]
// (a whole output: stride = lw * lh; a row the device picked: 1), if objectness > thresh.
void append_candidate(const YoloParams& p, const float* base, int64_t stride, int col, int row, int a, int lw, int lh,
                      int net_w, int net_h, float thresh, std::vector<Candidate>* out) {
  const float objectness = base[4 * stride];
  if (!(objectness > thresh)) return;  // strict, like Darknet
  const float anchor_w = p.anchors[2 * p.mask[a]];
  const float anchor_h = p.anchors[2 * p.mask[a] + 1];
  const float tx = base[0];
  const float ty = base[stride];
  const float tw = base[2 * stride];
  const float th = base[3 * stride];
  Candidate c;
  c.box.x = (col + tx) / lw;
  c.box.y = (row + ty) / lh;
  if (p.new_coords) {
    c.box.w = tw * tw * 4 * anchor_w / net_w;
    c.box.h = th * th * 4 * anchor_h / net_h;
  } else {
    c.box.w = static_cast<float>(std::exp(static_cast<double>(tw)) * anchor_w / net_w);
    c.box.h = static_cast<float>(std::exp(static_cast<double>(th)) * anchor_h / net_h);
  }
  c.objectness = objectness;
  c.prob.resize(p.classes);
  for (int j = 0; j < p.classes; ++j) {
    const float prob = objectness * base[(5 + j) * stride];
    c.prob[j] = prob > thresh ? prob : 0;
  }
  out->push_back(std::move(c));
}

void check_masks(const YoloParams& p) {
  for (int m : p.mask) DLR_ASSERT(m >= 0 && 2 * m + 1 < static_cast<int>(p.anchors.size()));
}

}  // namespace

void yolo_candidates(const YoloParams& p, const float* output, int lw, int lh, int net_w, int net_h, float thresh,
                     std::vector<Candidate>* out) {
  DLR_ASSERT(output != nullptr && out != nullptr);
  DLR_ASSERT(lw > 0 && lh > 0 && net_w > 0 && net_h > 0);
  check_masks(p);
  const int n_anchors = static_cast<int>(p.mask.size());
  const int64_t stride = int64_t(lw) * lh;  // one entry plane
  const int64_t anchor_stride = stride * (5 + p.classes);
  for (int64_t i = 0; i < stride; ++i) {
    const int row = static_cast<int>(i / lw);
    const int col = static_cast<int>(i % lw);
    for (int a = 0; a < n_anchors; ++a)
      append_candidate(p, output + a * anchor_stride + i, stride, col, row, a, lw, lh, net_w, net_h, thresh, out);
  }
}

void yolo_candidates_from_rows(const YoloParams& p, const int32_t* keys, const float* rows, int count, int lw, int lh,
                               int net_w, int net_h, float thresh, std::vector<Candidate>* out) {
  DLR_ASSERT(out != nullptr && count >= 0 && (count == 0 || (keys != nullptr && rows != nullptr)));
  DLR_ASSERT(lw > 0 && lh > 0 && net_w > 0 && net_h > 0);
  check_masks(p);
  const int n_anchors = static_cast<int>(p.mask.size());
  const int64_t keys_end = int64_t(lw) * lh * n_anchors;
  std::vector<int> order(static_cast<size_t>(count));
  for (int k = 0; k < count; ++k) {
    DLR_ASSERT(keys[k] >= 0 && keys[k] < keys_end);
    order[size_t(k)] = k;
  }
  std::sort(order.begin(), order.end(), [keys](int a, int b) { return keys[a] < keys[b]; });
  const int entries = 5 + p.classes;
  for (int k : order) {
    const int cell = keys[k] / n_anchors;
    append_candidate(p, rows + int64_t(k) * entries, 1, cell % lw, cell / lw, keys[k] % n_anchors, lw, lh, net_w,
                     net_h, thresh, out);
  }
}

void correct_boxes(std::vector<Candidate>* cands, int image_w, int image_h, int net_w, int net_h, bool letterbox) {
  DLR_ASSERT(cands != nullptr);
  DLR_ASSERT(image_w > 0 && image_h > 0 && net_w > 0 && net_h > 0);
  int new_w = net_w;
  int new_h = net_h;
  if (letterbox) {
    if (static_cast<float>(net_w) / image_w < static_cast<float>(net_h) / image_h) {
      new_w = net_w;
      new_h = static_cast<int>((int64_t(image_h) * net_w) / image_w);
    } else {
      new_h = net_h;
      new_w = static_cast<int>((int64_t(image_w) * net_h) / image_h);
    }
  }
  const double off_x = (net_w - new_w) / 2. / net_w;
  const double off_y = (net_h - new_h) / 2. / net_h;
  const float scale_x = static_cast<float>(new_w) / net_w;
  const float scale_y = static_cast<float>(new_h) / net_h;
  const float grow_w = static_cast<float>(net_w) / new_w;
  const float grow_h = static_cast<float>(net_h) / new_h;
  for (Candidate& c : *cands) {
    Box& b = c.box;
    b.x = static_cast<float>((b.x - off_x) / scale_x);
    b.y = static_cast<float>((b.y - off_y) / scale_y);
    b.w *= grow_w;
    b.h *= grow_h;
  }
}

}  // namespace dlr
