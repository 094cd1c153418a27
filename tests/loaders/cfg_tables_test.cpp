// The shared cfgs parsed end to end and checked against the reference tables:
// shared/models/*_layers.csv (every row: kind, detail, shapes, parameter bytes,
// GFLOPs) and the totals of DARKNET.md sections 1.9 and 6.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

// Splits one CSV line; fields may be double-quoted (no escaped quotes in these files).
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') quoted = !quoted;
    else if (ch == ',' && !quoted) out.push_back(std::move(cur)), cur.clear();
    else if (ch != '\r') cur.push_back(ch);
  }
  out.push_back(cur);
  return out;
}

struct Csv {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
};

Csv read_csv(const std::string& path) {
  Csv csv;
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return csv;
  csv.header = split_csv_line(line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f = split_csv_line(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < csv.header.size() && i < f.size(); ++i) row[csv.header[i]] = f[i];
    csv.rows.push_back(std::move(row));
  }
  return csv;
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// The CSV's "type" column (Darknet section names).
const char* csv_type(LayerKind k) {
  switch (k) {
    case LayerKind::kConv: return "convolutional";
    case LayerKind::kMaxPool: return "maxpool";
    case LayerKind::kRoute: return "route";
    case LayerKind::kShortcut: return "shortcut";
    case LayerKind::kUpsample: return "upsample";
    case LayerKind::kYolo: return "yolo";
    case LayerKind::kDropout: return "dropout";
    default: return layer_kind_name(k);  // not in the 7 cfgs of the CSVs
  }
}

// The CSV's "detail" column rebuilt from a LayerDesc.
std::string csv_detail(const LayerDesc& l) {
  char buf[256];
  switch (l.kind) {
    case LayerKind::kConv: {
      const ConvParams& p = l.conv();
      std::snprintf(buf, sizeof(buf), "conv %d %dx%d/%d g%d bn%d %s", p.filters, p.size, p.size, p.stride_x, p.groups,
                    p.batch_normalize ? 1 : 0, activation_name(p.activation));
      return buf;
    }
    case LayerKind::kMaxPool: {
      const MaxPoolParams& p = l.maxpool();
      std::snprintf(buf, sizeof(buf), "maxpool %dx%d/%d pad%d", p.size, p.size, p.stride_x, p.padding);
      return buf;
    }
    case LayerKind::kRoute: {
      const RouteParams& p = l.route();
      std::string s = "route " + join(p.layers);
      if (p.groups > 1) s += " groups=" + std::to_string(p.groups) + " id=" + std::to_string(p.group_id);
      return s;
    }
    case LayerKind::kShortcut:
      return "shortcut " + join(l.shortcut().from) + " " + activation_name(l.shortcut().activation);
    case LayerKind::kUpsample: return "upsample x" + std::to_string(l.upsample().stride);
    case LayerKind::kYolo: return "yolo mask=" + join(l.yolo().mask);
    case LayerKind::kDropout: return "dropout";
    default: return layer_kind_name(l.kind);  // not in the 7 cfgs of the CSVs
  }
}

// The CSV prints GFLOPs with 6 decimals: equal up to that rounding (and 1e-6 relative).
void expect_gflops(double actual, const std::string& csv_value, const std::string& what) {
  const double ref = std::stod(csv_value);
  EXPECT_LE(std::fabs(actual - ref), 5.0000001e-7 + 1e-6 * std::fabs(ref)) << what << ": " << actual << " vs " << ref;
}

// Checks every row of a layer table against the parse at one input size (column suffix "_608", "_416").
void check_table(const std::string& cfg, const std::string& csv_path, int size) {
  CfgOptions opt;
  opt.width = opt.height = size;
  Expected<NetworkDesc> net = parse_network_cfg(cfg, opt);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  const Csv csv = read_csv(csv_path);
  ASSERT_EQ(csv.rows.size(), net->layers.size()) << csv_path;
  const std::string sfx = "_" + std::to_string(size);
  for (size_t i = 0; i < csv.rows.size(); ++i) {
    const auto& row = csv.rows[i];
    const LayerDesc& l = net->layers[i];
    const std::string what = csv_path + " row " + std::to_string(i) + " @" + std::to_string(size);
    ASSERT_EQ(std::stoi(row.at("index")), l.index) << what;
    EXPECT_EQ(row.at("type"), csv_type(l.kind)) << what;
    EXPECT_EQ(row.at("detail"), csv_detail(l)) << what;
    EXPECT_EQ(row.at("in_shape_CxHxW" + sfx), l.in.to_string()) << what;
    EXPECT_EQ(row.at("out_shape_CxHxW" + sfx), l.out.to_string()) << what;
    EXPECT_EQ(std::stoll(row.at("param_bytes")), 4 * l.file_floats()) << what;
    expect_gflops(l.gflops(), row.at("gflops" + sfx), what + " gflops");
    expect_gflops(l.darknet_bflops(), row.at("darknet_printed_bf" + sfx), what + " darknet bf");
  }
}

TEST(CfgTables, Yolov4EveryRowAt608) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4.cfg");
  DLR_REQUIRE_FILE(csv, "models/yolov4_layers.csv");
  check_table(cfg, csv, 608);
}

TEST(CfgTables, Yolov4EveryRowAt416ViaOptions) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4.cfg");
  DLR_REQUIRE_FILE(csv, "models/yolov4_layers.csv");
  check_table(cfg, csv, 416);
}

TEST(CfgTables, Yolov4TinyEveryRowAt416) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4-tiny.cfg");
  DLR_REQUIRE_FILE(csv, "models/yolov4-tiny_layers.csv");
  check_table(cfg, csv, 416);
}

// DARKNET.md section 6: parameter floats, .weights bytes (20-byte header),
// conv-only GFLOPs and Darknet's printed "Total BFLOPS" (3 decimals).
struct TotalsCase {
  const char* cfg;
  int size;  // 0 = the cfg's own
  int64_t floats;
  int64_t bytes;
  double conv_gflops;
  double darknet_bflops;
};

const TotalsCase kTotals[] = {
    {"models/yolov4.cfg", 608, 64429405, 257717640, 128.389, 128.459},
    {"models/yolov4.cfg", 512, 64429405, 257717640, 91.046, 91.095},
    {"models/yolov4.cfg", 416, 64429405, 257717640, 60.105, 60.137},
    {"models/yolov4.cfg", 320, 64429405, 257717640, 35.565, 35.584},
    {"models/yolov4-tiny.cfg", 0, 6062814, 24251276, 6.908, 6.910},
    {"models/yolov4-csp.cfg", 0, 52986205, 211944840, 76.953, 77.003},
    {"models/yolov4x-mish.cfg", 0, 99847037, 399388168, 221.885, 221.986},
    {"models/yolov3.cfg", 0, 62001757, 248007048, 65.864, 65.879},
    {"models/yolov3-tiny.cfg", 0, 8858734, 35434956, 5.565, 5.571},
    {"models/yolov7-tiny.cfg", 0, 6241885, 24967560, 5.789, 5.802},
};

TEST(CfgTables, TotalsOfEverySharedCfg) {
  DLR_REQUIRE_SHARED_DIR();
  int checked = 0;
  for (const TotalsCase& t : kTotals) {
    const std::string cfg = test::required_shared_file(t.cfg);  // missing: a failure
    if (cfg.empty()) continue;
    CfgOptions opt;
    opt.width = opt.height = t.size;
    Expected<NetworkDesc> net = parse_network_cfg(cfg, opt);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    const std::string what = std::string(t.cfg) + " @" + std::to_string(net->net.width);
    EXPECT_EQ(net->total_file_floats(), t.floats) << what;
    EXPECT_EQ(20 + 4 * net->total_file_floats(), t.bytes) << what;
    EXPECT_NEAR(net->total_gflops(), t.conv_gflops, 0.0005) << what;
    EXPECT_NEAR(net->total_darknet_bflops(), t.darknet_bflops, 0.0005) << what;
    ++checked;
  }
  EXPECT_EQ(checked, int(sizeof(kTotals) / sizeof(kTotals[0])));
}

TEST(CfgTables, YoloFastestMatchesItsWeightsFile) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  Expected<NetworkDesc> net = parse_network_cfg(cfg);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  EXPECT_EQ(net->net.width, 320);
  EXPECT_EQ(net->net.height, 320);
  EXPECT_EQ(net->total_file_floats(), 346062);
  EXPECT_EQ(20 + 4 * net->total_file_floats(), 1384268);
  EXPECT_NEAR(net->total_darknet_bflops(), 0.252, 0.0005);  // published "0.252 BFLOPs"
  std::map<LayerKind, int> counts;
  int bn = 0, depthwise = 0;
  for (const LayerDesc& l : net->layers) {
    ++counts[l.kind];
    if (l.kind == LayerKind::kConv) {
      bn += l.conv().batch_normalize;
      depthwise += l.conv().groups > 1;
    }
  }
  EXPECT_EQ(counts[LayerKind::kConv], 84);
  EXPECT_EQ(bn, 82);
  EXPECT_EQ(depthwise, 28);
  EXPECT_EQ(counts[LayerKind::kDropout], 18);
  EXPECT_EQ(counts[LayerKind::kShortcut], 18);
  EXPECT_EQ(counts[LayerKind::kYolo], 2);
  for (const LayerDesc& l : net->layers) {
    if (l.kind == LayerKind::kDropout) {
      EXPECT_EQ(l.out, l.in);
      EXPECT_EQ(l.inputs, (std::vector<int>{l.index - 1}));
    }
  }
  // The file itself has exactly that size.
  const std::string weights = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  ASSERT_FALSE(weights.empty());
  std::ifstream f(weights, std::ios::binary | std::ios::ate);
  EXPECT_EQ(static_cast<int64_t>(f.tellg()), 20 + 4 * net->total_file_floats());
}

// DARKNET.md section 1.9: layer inventory of the 7 cfgs.
struct InventoryCase {
  const char* cfg;
  int width, height;
  bool letter_box;
  int layers, conv, route, shortcut, maxpool, upsample;
  std::vector<int> yolo;        // layer indices
  std::vector<int> yolo_grid;   // out.h of each head
  NmsKind nms;
  bool new_coords;
  float scale_x_y_last;
};

TEST(CfgTables, InventoryOfEverySharedCfg) {
  const InventoryCase cases[] = {
      {"models/yolov4.cfg", 608, 608, false, 162, 110, 21, 23, 3, 2, {139, 150, 161}, {76, 38, 19},
       NmsKind::kGreedy, false, 1.05f},
      {"models/yolov4-tiny.cfg", 416, 416, false, 38, 21, 11, 0, 3, 1, {30, 37}, {13, 26}, NmsKind::kGreedy, false,
       1.05f},
      {"models/yolov4-csp.cfg", 512, 512, true, 175, 115, 29, 23, 3, 2, {144, 159, 174}, {64, 32, 16},
       NmsKind::kDiou, true, 2.0f},
      {"models/yolov4x-mish.cfg", 640, 640, true, 203, 137, 29, 29, 3, 2, {168, 185, 202}, {80, 40, 20},
       NmsKind::kDiou, true, 2.0f},
      {"models/yolov3.cfg", 416, 416, false, 107, 75, 4, 23, 0, 2, {82, 94, 106}, {13, 26, 52}, NmsKind::kDefault,
       false, 1.0f},
      {"models/yolov3-tiny.cfg", 416, 416, false, 24, 13, 2, 0, 6, 1, {16, 23}, {13, 26}, NmsKind::kDefault, false,
       1.0f},
      {"models/yolov7-tiny.cfg", 416, 416, false, 99, 58, 30, 0, 6, 2, {90, 94, 98}, {52, 26, 13}, NmsKind::kDiou,
       true, 2.0f},
  };
  DLR_REQUIRE_SHARED_DIR();
  int checked = 0;
  for (const InventoryCase& c : cases) {
    const std::string cfg = test::required_shared_file(c.cfg);  // missing: a failure
    if (cfg.empty()) continue;
    Expected<NetworkDesc> net = parse_network_cfg(cfg);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    SCOPED_TRACE(c.cfg);
    EXPECT_EQ(net->net.width, c.width);
    EXPECT_EQ(net->net.height, c.height);
    EXPECT_EQ(net->net.channels, 3);
    EXPECT_EQ(net->net.letter_box, c.letter_box);
    EXPECT_EQ(static_cast<int>(net->layers.size()), c.layers);
    std::map<LayerKind, int> counts;
    for (const LayerDesc& l : net->layers) ++counts[l.kind];
    EXPECT_EQ(counts[LayerKind::kConv], c.conv);
    EXPECT_EQ(counts[LayerKind::kRoute], c.route);
    EXPECT_EQ(counts[LayerKind::kShortcut], c.shortcut);
    EXPECT_EQ(counts[LayerKind::kMaxPool], c.maxpool);
    EXPECT_EQ(counts[LayerKind::kUpsample], c.upsample);
    EXPECT_EQ(net->yolo_layers(), c.yolo);
    for (size_t i = 0; i < c.yolo.size() && i < net->yolo_layers().size(); ++i) {
      const LayerDesc& y = net->layers[static_cast<size_t>(c.yolo[i])];
      EXPECT_EQ(y.out.h, c.yolo_grid[i]);
      EXPECT_EQ(y.yolo().classes, 80);
      EXPECT_EQ(y.out.c, static_cast<int>(y.yolo().mask.size()) * 85);
      EXPECT_EQ(y.yolo().nms_kind, c.nms);
      EXPECT_EQ(y.yolo().new_coords, c.new_coords);
      EXPECT_FLOAT_EQ(y.yolo().beta_nms, 0.6f);
    }
    EXPECT_FLOAT_EQ(net->layers.back().yolo().scale_x_y, c.scale_x_y_last);
    EXPECT_TRUE(net->warnings.empty()) << net->warnings.front();
    ++checked;
  }
  EXPECT_EQ(checked, int(sizeof(cases) / sizeof(cases[0])));
}

TEST(CfgTables, Yolov4Landmarks) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4.cfg");
  Expected<NetworkDesc> net = parse_network_cfg(cfg);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  const auto& L = net->layers;
  EXPECT_EQ(L[113].route().layers, (std::vector<int>{112, 110, 108, 107}));  // SPP concat
  EXPECT_EQ(L[113].out.to_string(), "2048x19x19");
  EXPECT_EQ(L[119].route().layers, (std::vector<int>{85}));
  EXPECT_EQ(L[129].route().layers, (std::vector<int>{54}));
  EXPECT_EQ(L[142].route().layers, (std::vector<int>{141, 126}));  // -1, -16
  EXPECT_EQ(L[153].route().layers, (std::vector<int>{152, 116}));  // -1, -37
  EXPECT_EQ(L[7].inputs, (std::vector<int>{6, 4}));  // shortcut: previous first, then from
  EXPECT_EQ(L[0].inputs, (std::vector<int>{-1}));
  EXPECT_EQ(L[139].yolo().mask, (std::vector<int>{0, 1, 2}));
  EXPECT_FLOAT_EQ(L[139].yolo().scale_x_y, 1.2f);
  EXPECT_EQ(L[139].yolo().anchors,
            (std::vector<float>{12, 16, 19, 36, 40, 28, 36, 75, 76, 55, 72, 146, 142, 110, 192, 243, 459, 401}));
  EXPECT_EQ(L[138].conv().activation, Activation::kLinear);
  EXPECT_FALSE(L[138].conv().batch_normalize);
  // Layer table text: Darknet's conv line layout.
  const std::string table = network_summary(*net);
  EXPECT_NE(table.find("   0 conv     32       3 x 3/ 1    608 x 608 x   3 ->  608 x 608 x  32 0.639 BF"),
            std::string::npos)
      << table.substr(0, 400);
  EXPECT_NE(table.find("Total BFLOPS 128.459"), std::string::npos);
}

TEST(CfgTables, Yolov4TinyHeadsUseTheCfgMasks) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4-tiny.cfg");
  Expected<NetworkDesc> net = parse_network_cfg(cfg);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  EXPECT_EQ(net->layers[30].yolo().mask, (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(net->layers[37].yolo().mask, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(net->layers[30].yolo().total, 6);
  EXPECT_EQ(net->layers[3].route().groups, 2);
  EXPECT_EQ(net->layers[3].route().group_id, 1);
}

}  // namespace
}  // namespace dlr
