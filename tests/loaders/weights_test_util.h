// Hand-made networks and file helpers for the .weights tests (no cfg parser needed).
#pragma once

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "tests/common/test_paths.h"

namespace dlr::test {

inline LayerDesc make_conv(int index, int cfg_line, Shape3 in, int filters, int size, int groups, bool bn,
                           Activation act, int stride = 1) {
  LayerDesc l;
  l.index = index;
  l.kind = LayerKind::kConv;
  l.cfg_line = cfg_line;
  l.inputs = {index - 1};
  l.in = in;
  ConvParams p;
  p.filters = filters;
  p.size = size;
  p.stride_x = p.stride_y = stride;
  p.padding = size / 2;
  p.groups = groups;
  p.batch_normalize = bn;
  p.activation = act;
  l.params = p;
  l.out = {filters, (in.h + 2 * p.padding - size) / stride + 1, (in.w + 2 * p.padding - size) / stride + 1};
  return l;
}

// 7 layers, 20x20x3 input:
//   0 conv 4 3x3 BN leaky       (cfg line 10)  bias 4, scale/mean/var 4 each, weights 4*3*9 = 108
//   1 conv 6 1x1 groups=2 linear (line 20)     bias 6, weights 6*2 = 12
//   2 maxpool 2/2                (line 30)     no blobs
//   3 conv 4 3x3 groups=2 BN mish (line 40)    bias 4, BN 12, weights 4*3*9 = 108
//   4 route -1                   (line 45)     no blobs
//   5 conv 6 1x1 logistic        (line 50)     bias 6, weights 6*4 = 24 (head: 1 anchor, 1 class)
//   6 yolo classes=1 mask=0      (line 55)
// Payload floats: 16+108 + 6+12 + 16+108 + 6+24 = 296; 20-byte header -> 1204 bytes.
inline NetworkDesc small_net() {
  NetworkDesc net;
  net.cfg_path = "small.cfg";
  net.net.width = 20;
  net.net.height = 20;
  net.net.channels = 3;
  LayerDesc l0 = make_conv(0, 10, {3, 20, 20}, 4, 3, 1, true, Activation::kLeaky);
  l0.inputs = {-1};
  net.layers.push_back(l0);
  net.layers.push_back(make_conv(1, 20, {4, 20, 20}, 6, 1, 2, false, Activation::kLinear));
  LayerDesc mp;
  mp.index = 2;
  mp.kind = LayerKind::kMaxPool;
  mp.cfg_line = 30;
  mp.inputs = {1};
  mp.in = {6, 20, 20};
  mp.out = {6, 10, 10};
  MaxPoolParams mpp;
  mpp.size = 2;
  mpp.stride_x = mpp.stride_y = 2;
  mpp.padding = 1;
  mp.params = mpp;
  net.layers.push_back(mp);
  net.layers.push_back(make_conv(3, 40, {6, 10, 10}, 4, 3, 2, true, Activation::kMish));
  LayerDesc route;
  route.index = 4;
  route.kind = LayerKind::kRoute;
  route.cfg_line = 45;
  route.inputs = {3};
  route.in = {4, 10, 10};
  route.out = {4, 10, 10};
  RouteParams rp;
  rp.layers = {3};
  route.params = rp;
  net.layers.push_back(route);
  net.layers.push_back(make_conv(5, 50, {4, 10, 10}, 6, 1, 1, false, Activation::kLogistic));
  LayerDesc yolo;
  yolo.index = 6;
  yolo.kind = LayerKind::kYolo;
  yolo.cfg_line = 55;
  yolo.inputs = {5};
  yolo.in = yolo.out = {6, 10, 10};
  YoloParams yp;
  yp.classes = 1;
  yp.total = 1;
  yp.mask = {0};
  yp.anchors = {10, 14};
  yolo.params = yp;
  net.layers.push_back(yolo);
  return net;
}

inline constexpr uint64_t kSmallNetPayloadFloats = 296;

// Per-layer float payloads for small_net(): the whole payload counts up in steps
// of 0.001 from 0.001, so every value (variances included) is positive and
// every position is recognisable.
inline std::vector<std::vector<float>> small_net_floats() {
  const std::vector<size_t> sizes = {16 + 108, 6 + 12, 16 + 108, 6 + 24};
  std::vector<std::vector<float>> out;
  float v = 0.0f;
  for (size_t s : sizes) {
    std::vector<float> layer(s);
    for (float& x : layer) x = (v += 0.001f);
    out.push_back(layer);
  }
  return out;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string tmp_path(const std::string& name) { return temp_dir() + "/" + name; }

}  // namespace dlr::test
