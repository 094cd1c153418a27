// Loader parameters -> the plain kernel parameter structs of kernels/op_params.h.
// Shared by the CPU and CUDA engines' dispatch (the one place that knows both sides;
// a compile step can take these over).
#pragma once

#include "kernels/op_params.h"
#include "kernels/op_params.h"

namespace dlr {

inline RegionOp region_op(const RegionParams& p) {
  RegionOp op;
  op.anchors = p.num;
  op.classes = p.classes;
  op.coords = p.coords;
  op.softmax = p.softmax;
  return op;
}

inline GaussianYoloOp gaussian_yolo_op(const GaussianYoloParams& p) {
  GaussianYoloOp op;
  op.anchors = static_cast<int>(p.yolo.mask.size());
  op.classes = p.yolo.classes;
  op.scale_x_y = p.yolo.scale_x_y;
  return op;
}

}  // namespace dlr
