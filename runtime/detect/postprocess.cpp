// The whole Darknet detection post-processing for one image (AlexeyAB/darknet
// src/network.c, src/detector.c): get_network_boxes over the output layers ([yolo],
// [region], [Gaussian_yolo]) in network order -> correct_yolo_boxes -> NMS with the
// LAST output layer's nms_kind/beta_nms and classes (Darknet reads net.layers[net.n-1])
// -> get_actual_detections.
#include "runtime/core/status.h"
#include "runtime/detect/detection.h"

namespace dlr {

HeadOutput head_output(const LayerDesc& l, const float* data) {
  HeadOutput h;
  h.data = data;
  h.w = l.out.w;
  h.h = l.out.h;
  h.kind = l.kind;
  if (l.kind == LayerKind::kYolo) h.params = &l.yolo();
  if (l.kind == LayerKind::kRegion) h.region = &l.region();
  if (l.kind == LayerKind::kGaussianYolo) {
    h.gaussian = &l.gaussian_yolo();
    h.params = &h.gaussian->yolo;
  }
  return h;
}

std::vector<Detection> postprocess(const std::vector<HeadOutput>& heads, int net_w, int net_h, int image_w,
                                   int image_h, const PostprocessOptions& options) {
  if (heads.empty()) return {};
  std::vector<Candidate> cands;
  for (const HeadOutput& h : heads) {
    DLR_ASSERT(h.data != nullptr);
    switch (h.kind) {
      case LayerKind::kRegion:
        DLR_ASSERT(h.region != nullptr);
        region_candidates(*h.region, h.data, h.w, h.h, options.thresh, &cands);
        break;
      case LayerKind::kGaussianYolo:
        DLR_ASSERT(h.gaussian != nullptr);
        gaussian_yolo_candidates(*h.gaussian, h.data, h.w, h.h, net_w, net_h, options.thresh, &cands);
        break;
      default:
        DLR_ASSERT(h.params != nullptr);
        if (h.keys != nullptr)
          yolo_candidates_from_rows(*h.params, h.keys, h.data, h.rows, h.w, h.h, net_w, net_h, options.thresh, &cands);
        else
          yolo_candidates(*h.params, h.data, h.w, h.h, net_w, net_h, options.thresh, &cands);
        break;
    }
  }
  // Darknet corrects per head inside get_yolo_detections; the operation is per box,
  // so one pass over all candidates is the same.
  correct_boxes(&cands, image_w, image_h, net_w, net_h, options.letterbox);
  // NMS and classes of the LAST layer; a [region] layer has Darknet's default nms_kind (0).
  const HeadOutput& last = heads.back();
  const int classes = last.kind == LayerKind::kRegion ? last.region->classes : last.params->classes;
  const NmsKind kind = last.kind == LayerKind::kRegion ? NmsKind::kDefault : last.params->nms_kind;
  const float beta = last.kind == LayerKind::kRegion ? 0.6f : last.params->beta_nms;
  if (options.nms != 0) nms_sort(&cands, classes, options.nms, kind, beta);  // `if (nms)`
  return select_detections(cands, classes, options.thresh);
}

}  // namespace dlr
