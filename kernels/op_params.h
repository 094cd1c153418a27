// Op parameters: the plain values a kernel needs for one layer, carried by the
// steps of a compiled plan (runtime/plan.h). The cfg loader fills them
// (loaders/network_desc.h); both backends read them. This header depends on
// runtime/core only: kernels never include loaders/.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "runtime/core/types.h"

namespace dlr {

enum class LayerKind : uint8_t {
  kConv, kMaxPool, kRoute, kShortcut, kUpsample, kYolo, kDropout,
  kAvgPool, kScaleChannels, kSam, kReorg, kReorg3d, kRegion, kGaussianYolo,
};

struct ConvParams {
  int filters = 1;
  int size = 1;      // square kernel
  int stride_x = 1;
  int stride_y = 1;
  int dilation = 1;  // forced to 1 when size == 1
  int padding = 0;   // per side; pad=1 means size/2. With dilation d > 1 Darknet pads d*padding
                     // per side and the kernel spans d*(size-1)+1; the parser accepts dilation only
                     // where that yields the same output size as (H + 2*padding - size)/stride + 1.
  int groups = 1;
  bool batch_normalize = false;
  Activation activation = Activation::kLogistic;  // Darknet's default
};

struct MaxPoolParams {
  int size = 1;
  int stride_x = 1;
  int stride_y = 1;
  int padding = 0;  // TOTAL padding (Darknet); window starts at -padding/2
};

struct RouteParams {
  std::vector<int> layers;  // absolute indices, in cfg order
  int groups = 1;
  int group_id = 0;  // takes channels [group_id*C_i/groups, (group_id+1)*C_i/groups) of each input
};

struct ShortcutParams {
  std::vector<int> from;  // absolute indices (only plain unweighted add is supported)
  Activation activation = Activation::kLinear;
};

struct UpsampleParams {
  int stride = 2;  // nearest neighbour, out = in * stride (negative strides are rejected)
  float scale = 1.0f;
};

enum class NmsKind : uint8_t { kDefault, kGreedy, kDiou };

struct YoloParams {
  int classes = 20;
  int total = 1;                // num: anchors in the cfg
  std::vector<int> mask;        // anchor indices used by this head
  std::vector<float> anchors;   // 2*total values, w,h pairs in network-input pixels
  float scale_x_y = 1.0f;
  bool new_coords = false;
  NmsKind nms_kind = NmsKind::kDefault;
  float beta_nms = 0.6f;
};

struct DropoutParams {
  float probability = 0.5f;  // identity at inference
};

// [avgpool]: global average pool, C x H x W -> C x 1 x 1 (Darknet avgpool_layer.c). No keys.
struct AvgPoolParams {};

// [scale_channels]: out = act(scales * from), out has `from`'s shape; the previous layer
// holds the scales: C x 1 x 1 (one per channel) or, with scale_wh, 1 x H x W (one per pixel).
struct ScaleChannelsParams {
  int from = 0;  // absolute index
  bool scale_wh = false;
  Activation activation = Activation::kLinear;
};

// [sam]: out = act(prev * from) elementwise, both of the same shape.
struct SamParams {
  int from = 0;  // absolute index
  Activation activation = Activation::kLinear;
};

// [reorg] (Darknet's REORG_OLD) and [reorg3d] (REORG): space-to-depth by `stride`,
// C x H x W -> C*s*s x H/s x W/s. The two differ in the index mapping (kernels/cpu/reorg.cpp).
struct ReorgParams {
  int stride = 1;
};

// [region] (YOLOv2): num anchors of coords + 1 + classes entries per cell.
struct RegionParams {
  int classes = 20;
  int coords = 4;              // only 4 is supported
  int num = 1;                 // anchors
  bool softmax = false;        // softmax over the class entries
  std::vector<float> anchors;  // 2*num values, w,h pairs in GRID CELLS (not pixels)
};

// Where a [Gaussian_yolo] box's (x, y) point sits (Darknet's yolo_point).
enum class YoloPoint : uint8_t { kCenter, kLeftTop, kRightBottom };

// [Gaussian_yolo] (Gaussian YOLOv3): a [yolo] head whose entries per anchor are
// x, sigma_x, y, sigma_y, w, sigma_w, h, sigma_h, objectness, classes (classes + 9).
struct GaussianYoloParams {
  YoloParams yolo;  // classes, num, mask, anchors (pixels), scale_x_y, nms_kind, beta_nms
  YoloPoint point = YoloPoint::kCenter;
};

// Kinds whose output is a network output, read by the host post-processing.
inline bool is_output_kind(LayerKind k) {
  return k == LayerKind::kYolo || k == LayerKind::kRegion || k == LayerKind::kGaussianYolo;
}

using LayerParams =
    std::variant<ConvParams, MaxPoolParams, RouteParams, ShortcutParams, UpsampleParams, YoloParams, DropoutParams,
                 AvgPoolParams, ScaleChannelsParams, SamParams, ReorgParams, RegionParams, GaussianYoloParams>;

// ---- kernel-side structs of the newer ops (filled from the params above by the engines) ----

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


inline const char* layer_kind_name(LayerKind k) {  // "conv", "maxpool", ...
  switch (k) {
    case LayerKind::kConv: return "conv";
    case LayerKind::kMaxPool: return "maxpool";
    case LayerKind::kRoute: return "route";
    case LayerKind::kShortcut: return "shortcut";
    case LayerKind::kUpsample: return "upsample";
    case LayerKind::kYolo: return "yolo";
    case LayerKind::kDropout: return "dropout";
    case LayerKind::kAvgPool: return "avgpool";
    case LayerKind::kScaleChannels: return "scale_channels";
    case LayerKind::kSam: return "sam";
    case LayerKind::kReorg: return "reorg";
    case LayerKind::kReorg3d: return "reorg3d";
    case LayerKind::kRegion: return "region";
    case LayerKind::kGaussianYolo: return "Gaussian_yolo";
  }
  return "?";
}

inline const char* nms_kind_name(NmsKind k) {
  switch (k) {
    case NmsKind::kDefault: return "default";
    case NmsKind::kGreedy: return "greedynms";
    case NmsKind::kDiou: return "diounms";
  }
  return "?";
}

}  // namespace dlr
