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

enum class LayerKind : uint8_t { kConv, kMaxPool, kRoute, kShortcut, kUpsample, kYolo, kDropout };

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

using LayerParams =
    std::variant<ConvParams, MaxPoolParams, RouteParams, ShortcutParams, UpsampleParams, YoloParams, DropoutParams>;

inline const char* layer_kind_name(LayerKind k) {  // "conv", "maxpool", ...
  switch (k) {
    case LayerKind::kConv: return "conv";
    case LayerKind::kMaxPool: return "maxpool";
    case LayerKind::kRoute: return "route";
    case LayerKind::kShortcut: return "shortcut";
    case LayerKind::kUpsample: return "upsample";
    case LayerKind::kYolo: return "yolo";
    case LayerKind::kDropout: return "dropout";
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
