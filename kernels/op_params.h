// Small parameter structs of kernels added for issue 9, shared by the CPU
// (kernels/cpu) and CUDA (kernels/cuda) backends. Plain values only: nothing
// here depends on loaders/ (an engine or a compile step fills them in).
#pragma once

#include <cstdint>

namespace dlr {

// Which of Darknet's two reorg index mappings (kernels/cpu/reorg.cpp states both).
enum class ReorgMapping : uint8_t {
  kDarknetOld,    // [reorg] (REORG_OLD, YOLOv2): reorg_cpu called with the INPUT's w, h, c
  kSpaceToDepth,  // [reorg3d] (REORG): reorg_cpu called with the OUTPUT's w, h, c
};

// [region] forward at inference: `anchors` blocks of (coords + 1 + classes) channels.
struct RegionOp {
  int anchors = 1;
  int classes = 20;
  int coords = 4;
  bool softmax = false;
};

// [Gaussian_yolo] forward at inference: `anchors` blocks of (9 + classes) channels.
struct GaussianYoloOp {
  int anchors = 1;
  int classes = 20;
  float scale_x_y = 1.0f;
};

}  // namespace dlr
