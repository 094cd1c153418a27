// Real shared data: the pretrained yolo-fastest-1.1 weights against their cfg, and the
// documented .weights sizes of the shared model cfgs (DARKNET.md section 3).
#include <gtest/gtest.h>

#include <cmath>

#include "loaders/prepare.h"
#include "loaders/weights_file.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

TEST(RealWeights, YoloFastestOpensAgainstItsCfg) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  Expected<NetworkDesc> net = parse_network_cfg(cfg);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  Expected<WeightsFile> f = WeightsFile::open(weights, *net);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const WeightsHeader& h = f->index().header;
  EXPECT_EQ(h.major, 0);
  EXPECT_EQ(h.minor, 2);
  EXPECT_EQ(h.revision, 5);
  EXPECT_EQ(h.seen, 14231680u);
  EXPECT_EQ(f->file_bytes(), 1384268u);
  EXPECT_EQ((f->file_bytes() - h.header_bytes()) / 4, 346062u);

  // Every conv prepares to finite values; BN layers have positive variances.
  int convs = 0, bn = 0;
  for (const LayerDesc& l : net->layers) {
    if (l.kind != LayerKind::kConv) continue;
    ++convs;
    const LayerBlobs& lb = f->index().layers[static_cast<size_t>(l.index)];
    if (const BlobRef* var = lb.find(BlobRole::kVariance)) {
      ++bn;
      const float* v = f->data(*var);
      for (uint64_t i = 0; i < var->count; ++i) ASSERT_GE(v[i], 0.0f) << "layer " << l.index;
    }
    const PreparedSizes s = prepared_sizes(l);
    std::vector<float> w(static_cast<size_t>(s.weights)), b(static_cast<size_t>(s.bias));
    ASSERT_TRUE(prepare_conv(l, *f, w.data(), b.data()).ok()) << "layer " << l.index;
    for (float x : w) ASSERT_TRUE(std::isfinite(x)) << "layer " << l.index;
    for (float x : b) ASSERT_TRUE(std::isfinite(x)) << "layer " << l.index;
  }
  EXPECT_EQ(convs, 84);
  EXPECT_EQ(bn, 82);
}

TEST(RealWeights, SharedCfgFileSizes) {
  struct Case {
    const char* cfg;
    uint64_t bytes;
  };
  const Case cases[] = {
      {"models/yolov4.cfg", 257717640ull},      {"models/yolov4-tiny.cfg", 24251276ull},
      {"models/yolov4-csp.cfg", 211944840ull},  {"models/yolov4x-mish.cfg", 399388168ull},
      {"models/yolov3.cfg", 248007048ull},      {"models/yolov3-tiny.cfg", 35434956ull},
      {"models/yolov7-tiny.cfg", 24967560ull},
  };
  DLR_REQUIRE_SHARED_DIR();
  int checked = 0;
  for (const Case& c : cases) {
    const std::string path = test::required_shared_file(c.cfg);  // missing: a failure
    if (path.empty()) continue;
    Expected<NetworkDesc> net = parse_network_cfg(path);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    EXPECT_EQ(build_weights_index(*net, WeightsHeader{}).payload_end, c.bytes) << c.cfg;
    ++checked;
  }
  EXPECT_EQ(checked, int(sizeof(cases) / sizeof(cases[0])));
}

}  // namespace
}  // namespace dlr
