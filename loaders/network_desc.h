// NetworkDesc: a validated, shape-inferred Darknet network read from a .cfg.
//
// Produced by parse_network_cfg() (loaders/cfg_parser.cpp); consumed by the
// weights index, the planner and the backends. Plain data, no CUDA.
// Semantics follow Darknet (shared docs DARKNET.md section 1); docs/cfg-support.md
// lists every section and key and whether it is supported, ignored or rejected.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/types.h"

namespace dlr {

enum class LayerKind : uint8_t {
  kConv, kMaxPool, kRoute, kShortcut, kUpsample, kYolo, kDropout,
  kAvgPool, kScaleChannels, kSam, kReorg, kReorg3d, kRegion, kGaussianYolo,
};
const char* layer_kind_name(LayerKind k);  // "conv", "maxpool", ...

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
const char* nms_kind_name(NmsKind k);

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

struct LayerDesc {
  int index = 0;           // position after [net], from 0
  LayerKind kind = LayerKind::kConv;
  int cfg_line = 0;        // line of the [section] header, 1-based
  std::vector<int> inputs; // absolute indices of the layers read; -1 = network input
  Shape3 in;               // shape of inputs[0] (for route/shortcut: the previous layer, as Darknet prints)
  Shape3 out;
  LayerParams params;

  const ConvParams& conv() const { return std::get<ConvParams>(params); }
  const MaxPoolParams& maxpool() const { return std::get<MaxPoolParams>(params); }
  const RouteParams& route() const { return std::get<RouteParams>(params); }
  const ShortcutParams& shortcut() const { return std::get<ShortcutParams>(params); }
  const UpsampleParams& upsample() const { return std::get<UpsampleParams>(params); }
  const YoloParams& yolo() const { return std::get<YoloParams>(params); }
  const DropoutParams& dropout() const { return std::get<DropoutParams>(params); }
  const ScaleChannelsParams& scale_channels() const { return std::get<ScaleChannelsParams>(params); }
  const SamParams& sam() const { return std::get<SamParams>(params); }
  const ReorgParams& reorg() const { return std::get<ReorgParams>(params); }
  const RegionParams& region() const { return std::get<RegionParams>(params); }
  const GaussianYoloParams& gaussian_yolo() const { return std::get<GaussianYoloParams>(params); }

  // Conv only (0 otherwise): element counts as stored in the .weights file.
  int64_t weight_count() const;  // filters * (c/groups) * size * size
  int64_t bias_count() const;    // filters
  // Floats this layer occupies in a .weights file (bias + [scale, mean, var] + weights).
  int64_t file_floats() const;
  // Multiply-adds x2 / 1e9, as Darknet counts convolution work.
  double gflops() const;
  // What Darknet adds to its printed "Total BFLOPS": gflops() for conv,
  // size*size*C*Hout*Wout/1e9 for maxpool, C*H*W*len(from)/1e9 for shortcut, 0 otherwise.
  double darknet_bflops() const;
};

struct NetParams {
  int width = 0;
  int height = 0;
  int channels = 0;
  bool letter_box = false;
};

struct NetworkDesc {
  std::string cfg_path;  // for messages
  NetParams net;
  std::vector<LayerDesc> layers;

  Shape3 input_shape() const { return {net.channels, net.height, net.width}; }
  std::vector<int> yolo_layers() const;    // [yolo] layers only
  std::vector<int> output_layers() const;  // every is_output_kind() layer ([yolo], [region], [Gaussian_yolo])
  int64_t total_file_floats() const;
  double total_gflops() const;          // conv-only, sum of gflops()
  double total_darknet_bflops() const;  // sum of darknet_bflops(), Darknet's "Total BFLOPS"
  // Non-fatal findings of the parser, one line each in the error-message format
  // (duplicate keys, unrecognised nms_kind, width/height not divisible by 32).
  std::vector<std::string> warnings;
};

struct CfgOptions {
  int width = 0;   // > 0: override [net] width (shapes re-inferred)
  int height = 0;  // > 0: override [net] height
};

// Reads and validates a Darknet .cfg. Errors are one line: "file:line: [section] key=value: what was expected".
Expected<NetworkDesc> parse_network_cfg(const std::string& path, const CfgOptions& options = {});
// Same from text; `name` is used in messages in place of the path.
Expected<NetworkDesc> parse_network_cfg_text(const std::string& text, const std::string& name,
                                            const CfgOptions& options = {});

// Darknet-style layer table ("   0 conv     32       3 x 3/ 1    608 x 608 x   3 ->  608 x 608 x  32 0.639 BF").
std::string network_summary(const NetworkDesc& net);

}  // namespace dlr
