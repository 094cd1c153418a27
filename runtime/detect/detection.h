// Post-processing exactly like Darknet (AlexeyAB/darknet src/yolo_layer.c,
// src/box.c, src/image.c):
// yolo decode -> correct_yolo_boxes -> per-class NMS -> best-class selection.
// Pure host code, fp32, no CUDA.
#pragma once

#include <cstdint>
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

// The same for the candidates the device picked of one head (runtime/engine.h, OutputRows):
// `count` rows of 5 + classes values, keys[k] = cell * anchors + anchor of row k (any order,
// each once); appended in the order yolo_candidates appends them, with its arithmetic.
void yolo_candidates_from_rows(const YoloParams& p, const int32_t* keys, const float* rows, int count, int lw, int lh,
                               int net_w, int net_h, float thresh, std::vector<Candidate>* out);

// Darknet's [region] decode as its detector runs it (network.c custom_get_region_detections ->
// region_layer.c get_region_boxes / get_region_box with DOABS, then correct_yolo_boxes): for
// every cell (row-major) and anchor (inner): x = (col + logistic(tx))/lw, y = (row +
// logistic(ty))/lh, w = exp(tw)*anchor_w/lw, h = exp(th)*anchor_h/lh (anchors in grid cells),
// prob[j] = objectness*class_j if > thresh else 0. `output` is cpu::region's (NCHW, objectness
// logistic, classes softmaxed). Darknet keeps every cell as a detection (objectness 1); one whose
// probabilities are all 0 can neither suppress nor be reported, so only the others are appended.
void region_candidates(const RegionParams& p, const float* output, int lw, int lh, float thresh,
                       std::vector<Candidate>* out);

// Darknet's [Gaussian_yolo] decode (gaussian_yolo_layer.c get_gaussian_yolo_detections):
// candidates with objectness > thresh; x = (col + x)/lw, y = (row + y)/lh, w = exp(tw)*anchor_w/net_w,
// h likewise (yolo_point left_top / right_bottom move the centre by +-w/2, +-h/2), and the
// uncertainty-weighted score prob[j] = obj*cls_j*(1 - mean(sigma_x, sigma_y, sigma_w, sigma_h))
// if > thresh else 0. `output` is cpu::gaussian_yolo's.
void gaussian_yolo_candidates(const GaussianYoloParams& p, const float* output, int lw, int lh, int net_w, int net_h,
                              float thresh, std::vector<Candidate>* out);

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

// The whole pipeline for one image, given each output layer's output in network order.
struct HeadOutput {
  const YoloParams* params = nullptr;  // [yolo]; for [Gaussian_yolo]: &gaussian->yolo
  const float* data = nullptr;  // fp32 NCHW, one image; with keys: the device's rows
  const int32_t* keys = nullptr;  // kYolo: the candidates the device picked (yolo_candidates_from_rows)
  int rows = 0;                   // how many
  int w = 0, h = 0;
  LayerKind kind = LayerKind::kYolo;            // kYolo, kRegion or kGaussianYolo
  const RegionParams* region = nullptr;         // kRegion
  const GaussianYoloParams* gaussian = nullptr; // kGaussianYolo
};
// The HeadOutput of output layer `l` (is_output_kind) for one image's output data.
HeadOutput head_output(const LayerDesc& l, const float* data);
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
