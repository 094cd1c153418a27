// NetworkDesc: a validated, shape-inferred Darknet network read from a .cfg.
//
// Produced by parse_network_cfg() (loaders/cfg_parser.cpp); consumed by the
// weights index, the planner and the backends. Plain data, no CUDA.
// Semantics follow Darknet (Darknet's src/parser.c and layer files); docs/cfg-support.md
// lists every section and key and whether it is supported, ignored or rejected.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "kernels/op_params.h"
#include "runtime/core/status.h"
#include "runtime/core/types.h"

namespace dlr {

// Limits on sizes read from a .cfg or an option, checked by the parser (and the
// weight counts again by WeightsFile::open). Generous for real models; the
// reasons and the largest values real cfgs use are in docs/reliability.md.
namespace limits {
constexpr int64_t kInputPixels = int64_t(1) << 24;        // [net] width*height (4096x4096)
constexpr int kKernelSize = 1024;                         // conv and maxpool size
constexpr int64_t kLayerWeights = int64_t(1) << 28;       // filters*(channels/groups)*size*size
constexpr int64_t kNetworkWeights = int64_t(1) << 32;     // floats in a .weights payload (16 GiB)
constexpr int kLayers = 10000;                            // layer sections after [net]
}  // namespace limits

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
  const RegionParams& region() const { return std::get<RegionParams>(params); }
  const GaussianYoloParams& gaussian_yolo() const { return std::get<GaussianYoloParams>(params); }
  // Any kind's params struct P (a new kind needs no accessor of its own).
  template <class P>
  const P& as() const { return std::get<P>(params); }

  // Conv only (0 otherwise): element counts as stored in the .weights file.
  // Saturating: a count that does not fit int64 is INT64_MAX (WeightsFile::open refuses it).
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
  int64_t total_file_floats() const;  // saturating, like file_floats()
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
