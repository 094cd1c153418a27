// Op parameters: the plain values a kernel needs for one layer, carried by the
// steps of a compiled plan (runtime/compile/plan.h). The cfg loader fills them
// (loaders/network_desc.h, loaders/layer_table*.cpp); both backends read them. This
// header depends on runtime/core only: kernels never include loaders/.
//
// DLR_OPS (below the structs) is THE list of layer kinds: LayerKind, its names,
// the LayerParams variant, is_output_kind(), the JSON of every params struct
// (through its fields()) and both backends' dispatch tables (cpu::run_op,
// cuda::run_op) are generated from it. docs/architecture.md "Adding an op".
//
// fields(self, visit) lists a params struct's members as visit("name", member), in
// the order they are written; runtime/compile/compile_json.cpp reads and writes every
// struct through it (a struct without members has an empty fields()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <variant>
#include <vector>

#include "runtime/core/types.h"

namespace dlr {

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
  template <class S, class V> static void fields(S& s, V&& v) {
    v("filters", s.filters); v("size", s.size); v("stride_x", s.stride_x); v("stride_y", s.stride_y);
    v("dilation", s.dilation); v("padding", s.padding); v("groups", s.groups);
    v("batch_normalize", s.batch_normalize); v("activation", s.activation);
  }
};

struct MaxPoolParams {
  int size = 1;
  int stride_x = 1;
  int stride_y = 1;
  int padding = 0;  // TOTAL padding (Darknet); window starts at -padding/2
  template <class S, class V> static void fields(S& s, V&& v) {
    v("size", s.size); v("stride_x", s.stride_x); v("stride_y", s.stride_y); v("padding", s.padding);
  }
};

struct RouteParams {
  std::vector<int> layers;  // absolute indices, in cfg order
  int groups = 1;
  int group_id = 0;  // takes channels [group_id*C_i/groups, (group_id+1)*C_i/groups) of each input
  template <class S, class V> static void fields(S& s, V&& v) {
    v("layers", s.layers); v("groups", s.groups); v("group_id", s.group_id);
  }
};

struct ShortcutParams {
  std::vector<int> from;  // absolute indices (only plain unweighted add is supported)
  Activation activation = Activation::kLinear;
  template <class S, class V> static void fields(S& s, V&& v) {
    v("from", s.from); v("activation", s.activation);
  }
};

struct UpsampleParams {
  int stride = 2;  // nearest neighbour, out = in * stride (negative strides are rejected)
  float scale = 1.0f;
  template <class S, class V> static void fields(S& s, V&& v) {
    v("stride", s.stride); v("scale", s.scale);
  }
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
  template <class S, class V> static void fields(S& s, V&& v) {
    v("classes", s.classes); v("total", s.total); v("mask", s.mask); v("anchors", s.anchors);
    v("scale_x_y", s.scale_x_y); v("new_coords", s.new_coords); v("nms_kind", s.nms_kind); v("beta_nms", s.beta_nms);
  }
};

struct DropoutParams {
  float probability = 0.5f;  // identity at inference
  template <class S, class V> static void fields(S& s, V&& v) {
    v("probability", s.probability);
  }
};

// [avgpool]: global average pool, C x H x W -> C x 1 x 1 (Darknet avgpool_layer.c). No keys.
struct AvgPoolParams {
  template <class S, class V> static void fields(S&, V&&) {}
};

// [scale_channels]: out = act(scales * from), out has `from`'s shape; the previous layer
// holds the scales: C x 1 x 1 (one per channel) or, with scale_wh, 1 x H x W (one per pixel).
struct ScaleChannelsParams {
  int from = 0;  // absolute index
  bool scale_wh = false;
  Activation activation = Activation::kLinear;
  template <class S, class V> static void fields(S& s, V&& v) {
    v("from", s.from); v("scale_wh", s.scale_wh); v("activation", s.activation);
  }
};

// [sam]: out = act(prev * from) elementwise, both of the same shape.
struct SamParams {
  int from = 0;  // absolute index
  Activation activation = Activation::kLinear;
  template <class S, class V> static void fields(S& s, V&& v) {
    v("from", s.from); v("activation", s.activation);
  }
};

// [reorg] (Darknet's REORG_OLD) and [reorg3d] (REORG): space-to-depth by `stride`,
// C x H x W -> C*s*s x H/s x W/s. The two differ in the index mapping (kernels/cpu/reorg.cpp).
struct ReorgParams {
  int stride = 1;
  template <class S, class V> static void fields(S& s, V&& v) {
    v("stride", s.stride);
  }
};

// [region] (YOLOv2): num anchors of coords + 1 + classes entries per cell.
struct RegionParams {
  int classes = 20;
  int coords = 4;              // only 4 is supported
  int num = 1;                 // anchors
  bool softmax = false;        // softmax over the class entries
  std::vector<float> anchors;  // 2*num values, w,h pairs in GRID CELLS (not pixels)
  template <class S, class V> static void fields(S& s, V&& v) {
    v("classes", s.classes); v("coords", s.coords); v("num", s.num); v("softmax", s.softmax); v("anchors", s.anchors);
  }
};

// Where a [Gaussian_yolo] box's (x, y) point sits (Darknet's yolo_point).
enum class YoloPoint : uint8_t { kCenter, kLeftTop, kRightBottom };

// [Gaussian_yolo] (Gaussian YOLOv3): a [yolo] head whose entries per anchor are
// x, sigma_x, y, sigma_y, w, sigma_w, h, sigma_h, objectness, classes (classes + 9).
struct GaussianYoloParams {
  YoloParams yolo;  // classes, num, mask, anchors (pixels), scale_x_y, nms_kind, beta_nms
  YoloPoint point = YoloPoint::kCenter;
  template <class S, class V> static void fields(S& s, V&& v) {
    v("yolo", s.yolo); v("point", s.point);
  }
};

// ---- THE list of layer kinds -------------------------------------------------------
//
// X(Kind, ident, "name", Params, role), in LayerKind order:
//  - Kind: the LayerKind enumerator; ident: the backends' adapter is cpu::run_<ident>
//    (kernels/cpu/<op>.cpp) and cuda::run_<ident> (kernels/cuda/<op>.cu);
//  - "name": layer_kind_name(), the plan's JSON and text, the CUDA error prefix;
//  - Params: the struct a step carries (several kinds may share one);
//  - role: what the activation planner does with the output (OpRole below).
// The loader half of a kind's row (cfg keys and parse, shape inference, FLOPs, summary
// line, synthetic-weights moments) is in loaders/layer_table_<group>.cpp.

// How the activation planner (runtime/compile/planner.cpp) places a kind's output.
enum class OpRole : uint8_t {
  kCompute,  // a fresh buffer of the plan's activation dtype and layout
  kAlias,    // the output IS the first input (no step runs: dropout)
  kRoute,    // channel-slice view of one input, or a concat (in place or by copies)
  kOutput,   // a network output: a fresh packed f32 NCHW buffer read by runtime/detect
};

#define DLR_OPS(X)                                                                  \
  X(kConv, conv, "conv", ConvParams, kCompute)                                      \
  X(kMaxPool, maxpool, "maxpool", MaxPoolParams, kCompute)                          \
  X(kRoute, route, "route", RouteParams, kRoute)                                    \
  X(kShortcut, shortcut, "shortcut", ShortcutParams, kCompute)                      \
  X(kUpsample, upsample, "upsample", UpsampleParams, kCompute)                      \
  X(kYolo, yolo, "yolo", YoloParams, kOutput)                                       \
  X(kDropout, dropout, "dropout", DropoutParams, kAlias)                            \
  X(kAvgPool, avgpool, "avgpool", AvgPoolParams, kCompute)                          \
  X(kScaleChannels, scale_channels, "scale_channels", ScaleChannelsParams, kCompute) \
  X(kSam, sam, "sam", SamParams, kCompute)                                          \
  X(kReorg, reorg, "reorg", ReorgParams, kCompute)                                  \
  X(kReorg3d, reorg3d, "reorg3d", ReorgParams, kCompute)                            \
  X(kRegion, region, "region", RegionParams, kOutput)                               \
  X(kGaussianYolo, gaussian_yolo, "Gaussian_yolo", GaussianYoloParams, kOutput)

#define DLR_OP_ENUM_(K, ident, name, P, role) K,
enum class LayerKind : uint8_t { DLR_OPS(DLR_OP_ENUM_) };
#undef DLR_OP_ENUM_

#define DLR_OP_COUNT_(K, ident, name, P, role) +1
constexpr int kLayerKindCount = 0 DLR_OPS(DLR_OP_COUNT_);
#undef DLR_OP_COUNT_

inline OpRole op_role(LayerKind k) {
#define DLR_OP_ROLE_(K, ident, name, P, role) OpRole::role,
  static constexpr OpRole kRoles[] = {DLR_OPS(DLR_OP_ROLE_)};
#undef DLR_OP_ROLE_
  return kRoles[static_cast<size_t>(k)];
}

// Kinds whose output is a network output, read by the host post-processing.
inline bool is_output_kind(LayerKind k) { return op_role(k) == OpRole::kOutput; }

namespace detail {
// std::variant of the distinct types of Ts..., in first-seen order (kinds may share a struct).
template <class V, class... Ts>
struct UniqueVariant {
  using type = V;
};
template <class... Vs, class T, class... Ts>
struct UniqueVariant<std::variant<Vs...>, T, Ts...> {
  using type = typename std::conditional_t<(std::is_same_v<T, Vs> || ...), UniqueVariant<std::variant<Vs...>, Ts...>,
                                           UniqueVariant<std::variant<Vs..., T>, Ts...>>::type;
};
struct NoParams {};  // heads the generated type list below; dropped
template <class... Ts>
struct ParamsVariant;
template <class... Ts>
struct ParamsVariant<NoParams, Ts...> {
  using type = typename UniqueVariant<std::variant<>, Ts...>::type;
};
}  // namespace detail

// The parameters of any kind, one alternative per distinct params struct of DLR_OPS
// (default: ConvParams, the first).
#define DLR_OP_TYPE_(K, ident, name, P, role) , P
using LayerParams = detail::ParamsVariant<detail::NoParams DLR_OPS(DLR_OP_TYPE_)>::type;
#undef DLR_OP_TYPE_

// The params struct of each kind: LayerParamsOf<LayerKind::kSam> is SamParams.
template <LayerKind K>
struct LayerParamsOfT;
#define DLR_OP_PARAMS_OF_(K, ident, name, P, role) \
  template <>                                      \
  struct LayerParamsOfT<LayerKind::K> {            \
    using type = P;                                \
  };
DLR_OPS(DLR_OP_PARAMS_OF_)
#undef DLR_OP_PARAMS_OF_
template <LayerKind K>
using LayerParamsOf = typename LayerParamsOfT<K>::type;

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


inline const char* layer_kind_name(LayerKind k) {  // "conv", "maxpool", ...
#define DLR_OP_NAME_(K, ident, name, P, role) name,
  static constexpr const char* kNames[] = {DLR_OPS(DLR_OP_NAME_)};
#undef DLR_OP_NAME_
  const size_t i = static_cast<size_t>(k);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "?";
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
