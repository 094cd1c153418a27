// The layer table's rows (layer_table.h) of the network outputs: [yolo], [region],
// [Gaussian_yolo].
#include "loaders/layer_table_rows.h"

#include <cstdint>
#include <string>
#include <utility>

namespace dlr::layer_rows {

// ---- [yolo] ------------------------------------------------------------------------------

namespace {

const KeyRule kYoloRules[] = {
    {"classes", U::kUsed}, {"num", U::kUsed}, {"mask", U::kUsed}, {"anchors", U::kUsed},
    {"scale_x_y", U::kUsed}, {"new_coords", U::kUsed}, {"nms_kind", U::kUsed}, {"beta_nms", U::kUsed},
    {"jitter", U::kIgnored}, {"ignore_thresh", U::kIgnored}, {"truth_thresh", U::kIgnored},
    {"iou_thresh", U::kIgnored}, {"random", U::kIgnored}, {"iou_loss", U::kIgnored},
    {"iou_normalizer", U::kIgnored}, {"obj_normalizer", U::kIgnored}, {"cls_normalizer", U::kIgnored},
    {"delta_normalizer", U::kIgnored}, {"max_delta", U::kIgnored}, {"label_smooth_eps", U::kIgnored},
    {"objectness_smooth", U::kIgnored}, {"resize", U::kIgnored}, {"focal_loss", U::kIgnored},
    {"iou_thresh_kind", U::kIgnored}, {"counters_per_class", U::kIgnored}, {"max", U::kIgnored},
    {"show_details", U::kIgnored}, {"embedding_layer", U::kIgnored}, {"track_history_size", U::kIgnored},
    {"sim_thresh", U::kIgnored}, {"dets_for_track", U::kIgnored}, {"dets_for_show", U::kIgnored},
    {"track_ciou_norm", U::kIgnored},
    // not read by parse_yolo (Darknet prints "Unused field"), found in Darknet's own cfgs
    {"uc_normalizer", U::kIgnored}, {"beta1", U::kIgnored},
    {"map", U::kReject, "remaps class ids through a file"},
};

// ---- what [yolo] and [Gaussian_yolo] share ----

// classes, num, mask, anchors (pixels) and scale_x_y, in this order.
Status parse_yolo_head(CfgParser& P, const CfgSection& s, YoloParams* p) {
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "classes", 20, 1, kMaxClasses, &p->classes));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "num", 1, 1, kMaxAnchors, &p->total));
  DLR_RETURN_IF_ERROR(P.get_yolo_mask(s, p->total, &p->mask));
  DLR_RETURN_IF_ERROR(P.get_anchors(s, p->total, 0.5f, &p->anchors));
  return P.get_float(s, "scale_x_y", 1.0f, &p->scale_x_y);
}

// nms_kind and beta_nms. An unknown nms_kind is Darknet's default NMS (a warning);
// cornersnms is refused where Darknet would run it ([Gaussian_yolo]).
Status parse_yolo_nms(CfgParser& P, const CfgSection& s, bool refuse_corners, YoloParams* p) {
  const CfgOption* nk = s.find("nms_kind");
  const std::string nms = nk ? nk->value : "default";
  if (nms == "greedynms") {
    p->nms_kind = NmsKind::kGreedy;
  } else if (nms == "diounms") {
    p->nms_kind = NmsKind::kDiou;
  } else if (refuse_corners && nms == "cornersnms") {
    return unsupported(P.at(s, nk) + "not supported by dlrun (corners NMS); expected default, greedynms or diounms");
  } else {
    p->nms_kind = NmsKind::kDefault;
    if (nms != "default")
      P.warn(P.at(s, nk) + "unrecognised nms_kind; Darknet uses the default NMS (as does dlrun)");
  }
  return P.get_float(s, "beta_nms", 0.6f, &p->beta_nms);
}

// The previous layer must output len(mask)*(classes+entries) channels.
Status check_yolo_channels(CfgParser& P, const CfgSection& s, const LayerDesc& l, const YoloParams& p, int entries) {
  const int64_t expect_c = int64_t(p.mask.size()) * (int64_t(p.classes) + entries);
  if (l.in.c == expect_c) return Status::ok_status();
  const std::string e = std::to_string(entries);
  return parse_error(P.at(s, s.find("classes") ? s.find("classes") : s.find("mask")) + "the previous layer " +
                     std::to_string(l.index - 1) + " outputs " + std::to_string(l.in.c) +
                     " channels but len(mask)*(classes+" + e + ") = " + std::to_string(p.mask.size()) + "*(" +
                     std::to_string(p.classes) + "+" + e + ") = " + std::to_string(expect_c) +
                     " (expected filters=" + std::to_string(expect_c) + " in that [convolutional])" +
                     P.layer_note(l.index));
}

Status parse_yolo(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  YoloParams p;
  DLR_RETURN_IF_ERROR(parse_yolo_head(P, s, &p));
  int new_coords = 0;
  DLR_RETURN_IF_ERROR(P.get_int(s, "new_coords", 0, &new_coords));
  if (new_coords != 0 && new_coords != 1)
    return unsupported(P.at_key(s, "new_coords") + "expected 0 or 1");
  p.new_coords = new_coords == 1;
  DLR_RETURN_IF_ERROR(parse_yolo_nms(P, s, false, &p));
  DLR_RETURN_IF_ERROR(check_yolo_channels(P, s, *l, p, 5));
  l->out = l->in;
  l->params = std::move(p);
  return P.check_output(s, "classes", *l, "yolo");
}

}  // namespace

const LayerRow row_yolo = {
    LayerKind::kYolo,
    {"yolo"},
    rules_of(kYoloRules),
    parse_yolo,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      const YoloParams& p = l.yolo();
      return strfmt("yolo  classes %d mask %s sxy %.2f %s%s ", p.classes, join(p.mask).c_str(), p.scale_x_y,
                    nms_kind_name(p.nms_kind), p.new_coords ? " new_coords" : "") +
             strfmt("%4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
    },
    same_as_input,
    [](const LayerDesc& l) {
      return HeadLayout{static_cast<int>(l.yolo().mask.size()), 5 + l.yolo().classes, 4};
    },  // head
};

// ---- [region] ----------------------------------------------------------------------------

namespace {

const KeyRule kRegionRules[] = {
    {"classes", U::kUsed}, {"coords", U::kUsed}, {"num", U::kUsed}, {"softmax", U::kUsed}, {"anchors", U::kUsed},
    {"classfix", U::kUsed},
    {"max", U::kIgnored}, {"log", U::kIgnored}, {"sqrt", U::kIgnored}, {"focal_loss", U::kIgnored},
    {"jitter", U::kIgnored}, {"resize", U::kIgnored}, {"rescore", U::kIgnored}, {"thresh", U::kIgnored},
    {"absolute", U::kIgnored}, {"random", U::kIgnored}, {"coord_scale", U::kIgnored},
    {"object_scale", U::kIgnored}, {"noobject_scale", U::kIgnored}, {"mask_scale", U::kIgnored},
    {"class_scale", U::kIgnored}, {"bias_match", U::kIgnored},
    {"tree", U::kReject, "hierarchical softmax tree (yolo9000's 9k.tree)"},
    {"map", U::kReject, "remaps class ids through a file"},
};

Status parse_region(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  RegionParams p;
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "classes", 20, 1, kMaxClasses, &p.classes));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "coords", 4, 4, 4, &p.coords));
  DLR_RETURN_IF_ERROR(P.get_int_in(s, "num", 1, 1, kMaxAnchors, &p.num));
  int softmax = 0;
  DLR_RETURN_IF_ERROR(P.get_int(s, "softmax", 0, &softmax));
  p.softmax = softmax != 0;
  int classfix = 0;
  DLR_RETURN_IF_ERROR(P.get_int(s, "classfix", 0, &classfix));
  if (classfix == -1)
    return unsupported(P.at_key(s, "classfix") + "not supported by dlrun (zeroes objectness below 0.5); expected "
                                               "classfix >= 0" + P.layer_note(l->index));
  DLR_RETURN_IF_ERROR(P.get_anchors(s, p.num, 0.5f, &p.anchors));
  const int64_t expect_c = int64_t(p.num) * (int64_t(p.classes) + p.coords + 1);
  if (l->in.c != expect_c)
    return parse_error(P.at(s, s.find("classes") ? s.find("classes") : s.find("num")) + "the previous layer " +
                       std::to_string(l->index - 1) + " outputs " + std::to_string(l->in.c) +
                       " channels but num*(classes+coords+1) = " + std::to_string(p.num) + "*(" +
                       std::to_string(p.classes) + "+" + std::to_string(p.coords) + "+1) = " +
                       std::to_string(expect_c) + " (expected filters=" + std::to_string(expect_c) +
                       " in that [convolutional])" + P.layer_note(l->index));
  l->out = l->in;
  l->params = std::move(p);
  return P.check_output(s, "classes", *l, "region");
}

}  // namespace

const LayerRow row_region = {
    LayerKind::kRegion,
    {"region"},
    rules_of(kRegionRules),
    parse_region,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      const RegionParams& p = l.region();
      return strfmt("region classes %d num %d%s ", p.classes, p.num, p.softmax ? " softmax" : "") +
             strfmt("%4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
    },
    same_as_input,
    [](const LayerDesc& l) {
      const RegionParams& p = l.region();
      return HeadLayout{p.num, p.coords + 1 + p.classes, p.coords};
    },  // head
};

// ---- [Gaussian_yolo] ---------------------------------------------------------------------

namespace {

const KeyRule kGaussianYoloRules[] = {
    {"classes", U::kUsed}, {"num", U::kUsed}, {"mask", U::kUsed}, {"anchors", U::kUsed},
    {"scale_x_y", U::kUsed}, {"nms_kind", U::kUsed}, {"beta_nms", U::kUsed}, {"yolo_point", U::kUsed},
    {"max", U::kIgnored}, {"max_delta", U::kIgnored}, {"counters_per_class", U::kIgnored},
    {"label_smooth_eps", U::kIgnored}, {"objectness_smooth", U::kIgnored}, {"uc_normalizer", U::kIgnored},
    {"iou_normalizer", U::kIgnored}, {"obj_normalizer", U::kIgnored}, {"cls_normalizer", U::kIgnored},
    {"delta_normalizer", U::kIgnored}, {"iou_loss", U::kIgnored}, {"iou_thresh_kind", U::kIgnored},
    {"jitter", U::kIgnored}, {"resize", U::kIgnored}, {"ignore_thresh", U::kIgnored},
    {"truth_thresh", U::kIgnored}, {"iou_thresh", U::kIgnored}, {"random", U::kIgnored},
    {"map", U::kReject, "remaps class ids through a file"},
};

Status parse_gaussian_yolo(CfgParser& P, const CfgSection& s, LayerDesc* l) {
  P.read_previous(l);
  GaussianYoloParams g;
  YoloParams& p = g.yolo;
  DLR_RETURN_IF_ERROR(parse_yolo_head(P, s, &p));
  DLR_RETURN_IF_ERROR(parse_yolo_nms(P, s, true, &p));
  const CfgOption* yp = s.find("yolo_point");
  const std::string point = yp ? yp->value : "center";
  g.point = point == "left_top" ? YoloPoint::kLeftTop
                                : point == "right_bottom" ? YoloPoint::kRightBottom : YoloPoint::kCenter;
  DLR_RETURN_IF_ERROR(check_yolo_channels(P, s, *l, p, 9));
  l->out = l->in;
  l->params = std::move(g);
  return P.check_output(s, "classes", *l, "Gaussian_yolo");
}

}  // namespace

const LayerRow row_gaussian_yolo = {
    LayerKind::kGaussianYolo,
    {"Gaussian_yolo"},
    rules_of(kGaussianYoloRules),
    parse_gaussian_yolo,
    nullptr,  // bflops
    [](const LayerDesc& l) {
      const YoloParams& p = l.gaussian_yolo().yolo;
      return strfmt("Gaussian_yolo classes %d mask %s sxy %.2f %s ", p.classes, join(p.mask).c_str(), p.scale_x_y,
                    nms_kind_name(p.nms_kind)) +
             strfmt("%4d x%4d x%4d", l.out.w, l.out.h, l.out.c);
    },
    same_as_input,
    [](const LayerDesc& l) {
      const YoloParams& p = l.gaussian_yolo().yolo;
      return HeadLayout{static_cast<int>(p.mask.size()), 9 + p.classes, 8};
    },  // head
};

}  // namespace dlr::layer_rows
