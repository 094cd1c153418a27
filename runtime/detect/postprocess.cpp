// The whole Darknet detection post-processing for one image (shared docs
// DARKNET.md 4.2 steps 7-9): get_network_boxes over the yolo heads in network
// order -> correct_yolo_boxes -> NMS with the LAST yolo head's nms_kind/beta_nms
// and classes (Darknet reads net.layers[net.n-1]) -> get_actual_detections.
#include "runtime/core/status.h"
#include "runtime/detect/detection.h"

namespace dlr {

std::vector<Detection> postprocess(const std::vector<HeadOutput>& heads, int net_w, int net_h, int image_w,
                                   int image_h, const PostprocessOptions& options) {
  if (heads.empty()) return {};
  std::vector<Candidate> cands;
  for (const HeadOutput& h : heads) {
    DLR_ASSERT(h.params != nullptr && h.data != nullptr);
    yolo_candidates(*h.params, h.data, h.w, h.h, net_w, net_h, options.thresh, &cands);
  }
  // Darknet corrects per head inside get_yolo_detections; the operation is per box,
  // so one pass over all candidates is the same.
  correct_boxes(&cands, image_w, image_h, net_w, net_h, options.letterbox);
  const YoloParams& last = *heads.back().params;
  if (options.nms != 0) nms_sort(&cands, last.classes, options.nms, last.nms_kind, last.beta_nms);  // `if (nms)`
  return select_detections(cands, last.classes, options.thresh);
}

}  // namespace dlr
