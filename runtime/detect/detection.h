// Post-processing exactly like Darknet (shared docs DARKNET.md 4.4-4.6):
// yolo decode -> correct_yolo_boxes -> per-class NMS -> best-class selection.
// Pure host code, fp32, no CUDA.
#pragma once

#include <string>
#include <vector>

#include "loaders/network_desc.h"

namespace dlr {

// Center/size box relative to the image (0..1 when inside it).
struct Box {
  float x = 0, y = 0, w = 0, h = 0;
};

// A Darknet candidate: one anchor of one cell with objectness > thresh.
struct Candidate {
  Box box;
  float objectness = 0;
  std::vector<float> prob;  // per class: obj*cls if > thresh else 0; NMS zeroes suppressed entries
};

// A detection as reported: best class plus every other class above thresh.
struct Detection {
  int class_id = -1;
  float prob = 0;
  Box box;  // relative to the original image
  struct Extra {
    int class_id;
    float prob;
  };
  std::vector<Extra> others;  // other classes with prob > thresh, in class order
};

struct PostprocessOptions {
  float thresh = 0.25f;  // strict: kept when > thresh
  float nms = 0.45f;     // NMS threshold (Darknet hard-codes .45)
  bool letterbox = false;
};

// Decodes one yolo head's output (one image, fp32 NCHW [n*(5+classes)][lh][lw],
// after the yolo layer's activations) into candidates with box relative to the
// network input. Appends to `out`. Cells row-major, anchors inner (Darknet order).
void yolo_candidates(const YoloParams& p, const float* output, int lw, int lh, int net_w, int net_h, float thresh,
                     std::vector<Candidate>* out);

// correct_yolo_boxes: network-relative -> image-relative (changes boxes only with letterbox).
void correct_boxes(std::vector<Candidate>* cands, int image_w, int image_h, int net_w, int net_h, bool letterbox);

// In-place per-class NMS: do_nms_sort for NmsKind::kDefault (IoU), DIoU with exponent
// beta (0.6 for greedynms) for kGreedy/kDiou. Only zeroes per-class probabilities.
void nms_sort(std::vector<Candidate>* cands, int classes, float thresh, NmsKind kind, float beta);

// Best class (> thresh, lowest index on ties), sorted by left edge ascending (Darknet output order).
std::vector<Detection> select_detections(const std::vector<Candidate>& cands, int classes, float thresh);
// Same, and like Darknet never picks as best class one whose name starts with "dont_show"
// (such classes can still appear in `others`, as Darknet prints them as extra lines).
std::vector<Detection> select_detections(const std::vector<Candidate>& cands, int classes, float thresh,
                                         const std::vector<std::string>& names);

// The whole pipeline for one image, given each yolo head's output in network order.
struct HeadOutput {
  const YoloParams* params = nullptr;
  const float* data = nullptr;  // fp32 NCHW, one image
  int w = 0, h = 0;
};
std::vector<Detection> postprocess(const std::vector<HeadOutput>& heads, int net_w, int net_h, int image_w,
                                   int image_h, const PostprocessOptions& options);

// IoU / DIoU helpers (exposed for tests).
float box_iou(const Box& a, const Box& b);
float box_diou(const Box& a, const Box& b, float beta);

// Darknet text output for one image: "dog: 98%" per line (+ ext_output box tuple,
// + extra lines for other classes above thresh), in select_detections order.
std::string format_darknet(const std::vector<Detection>& dets, const std::vector<std::string>& names, int image_w,
                           int image_h, bool ext_output);

}  // namespace dlr
