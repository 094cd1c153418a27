// Hostile sizes: every count read from a cfg or an option is checked before it
// is multiplied or trusted (docs/reliability.md lists the limits).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <string>

#include "loaders/cfg_lexer.h"
#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "tests/loaders/weights_test_util.h"

namespace dlr {
namespace {

// size=2^30 with pad=1 fits any input; 4 filters x 1 channel x 2^60 weights x 4 bytes
// is 2^64, which wrapped to 0 in the index: a 36-byte file (header + 4 biases)
// passed WeightsFile::open before the limits existed.
const std::string kOverflowCfg =
    "[net]\nwidth=1\nheight=1\nchannels=1\n"
    "[convolutional]\nfilters=4\nsize=1073741824\npad=1\n";

// A version 0.2.5 header (20 bytes) and four zero biases: what the wrapped index expected.
std::string wrapped_weights() { return std::string("\0\0\0\0\2\0\0\0\5\0\0\0", 12) + std::string(24, '\0'); }

TEST(Limits, CraftedKernelSizeCannotWrapTheWeightsSize) {
  const std::string cfg = test::tmp_path("overflow.cfg");
  test::write_bytes(cfg, kOverflowCfg);
  const std::string weights = test::tmp_path("overflow.weights");
  test::write_bytes(weights, wrapped_weights());
  Expected<NetworkDesc> net = parse_network_cfg(cfg);
  if (net.ok()) {
    // Without the parser limit, the weights file must still refuse the layer.
    Expected<WeightsFile> wf = WeightsFile::open(weights, *net);
    EXPECT_FALSE(wf.ok()) << "a 36-byte file passed for a layer of 2^62 weights";
  }
  ASSERT_FALSE(net.ok());
  EXPECT_EQ(net.status().message(), cfg + ":7: [convolutional] size=1073741824: expected size in 1..1024");
}

Status parse_status(const std::string& text, const CfgOptions& opt = {}) {
  Expected<NetworkDesc> net = parse_network_cfg_text(text, "t.cfg", opt);
  return net.ok() ? Status::ok_status() : net.status();
}

const std::string kTiny = "[net]\nwidth=8\nheight=8\nchannels=3\n";  // layers start on line 5

TEST(Limits, HandBuiltLayerWithAHugeCountIsRefusedByTheWeightsFile) {
  NetworkDesc net;
  net.cfg_path = "hand.cfg";
  net.net = {1, 1, 1, false};
  net.layers.push_back(test::make_conv(0, 5, {1, 1, 1}, 4, 1 << 30, 1, false, Activation::kLinear));
  net.layers[0].out = {4, 1, 1};
  const std::string weights = test::tmp_path("hand.weights");
  test::write_bytes(weights, wrapped_weights());
  Expected<WeightsFile> wf = WeightsFile::open(weights, net);
  ASSERT_FALSE(wf.ok());
  EXPECT_EQ(wf.status().message(), weights + ": layer 0 (conv, cfg line 5) has 4611686018427387904 weights and 4 "
                                             "filters; expected 1..268435456 of each");
  // Counts that do not fit int64 saturate instead of wrapping.
  net.layers[0] = test::make_conv(0, 5, {1 << 30, 1, 1}, 1 << 20, 1 << 20, 1, false, Activation::kLinear);
  EXPECT_EQ(net.layers[0].weight_count(), INT64_MAX);
  EXPECT_EQ(net.total_file_floats(), INT64_MAX);
}

TEST(Limits, KernelSizes) {
  for (const char* kind : {"convolutional", "maxpool"}) {
    const Status st = parse_status(kTiny + "[" + kind + "]\nsize=2147483647\n");
    EXPECT_EQ(st.code(), StatusCode::kParseError);
    EXPECT_EQ(st.message(), "t.cfg:6: [" + std::string(kind) + "] size=2147483647: expected size in 1..1024");
  }
  EXPECT_TRUE(parse_status(kTiny + "[convolutional]\nsize=1024\npad=1\n").ok());
}

TEST(Limits, WeightsPerLayer) {
  const Status st = parse_status(kTiny + "[conv]\nfilters=65536\n[conv]\nfilters=65536\nsize=3\npad=1\n");
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  EXPECT_EQ(st.message(), "t.cfg:7: [conv]: 65536 filters x 65536 input channels per group x 3x3 kernel = "
                          "38654705664 weights; expected at most 268435456 per layer (this is layer 1)");
}

TEST(Limits, WeightsPerNetwork) {
  std::string cfg = "[net]\nwidth=1\nheight=1\nchannels=3\n";
  for (int i = 0; i < 17; ++i) cfg += "[conv]\nfilters=16384\n";  // 16 x (2^28 + 16384) after the first
  const Status st = parse_status(cfg);
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  EXPECT_EQ(st.message(), "t.cfg: the network has 4295294976 weights in total; expected at most 4294967296");
}

TEST(Limits, LayerCount) {
  std::string cfg = kTiny;
  for (int i = 0; i <= limits::kLayers; ++i) cfg += "[maxpool]\nsize=1\nstride=1\n";
  const Status st = parse_status(cfg);
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  EXPECT_EQ(st.message(), "t.cfg:30005: [maxpool]: more than 10000 layers; expected at most 10000");
}

TEST(Limits, InputSizeInTheCfg) {
  const Status st = parse_status("[net]\nwidth=16384\nheight=16384\nchannels=3\n[conv]\n");
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  EXPECT_EQ(st.message(), "t.cfg:2: [net] width=16384: input 16384x16384 is 268435456 pixels; expected "
                          "width*height <= 16777216 (e.g. 4096x4096)");
  EXPECT_TRUE(parse_status("[net]\nwidth=4096\nheight=4096\nchannels=3\n[maxpool]\n").ok());
  EXPECT_TRUE(parse_status("[net]\nwidth=16384\nheight=1024\nchannels=3\n[maxpool]\n").ok());
}

TEST(Limits, InputSizeFromOptions) {
  CfgOptions o;
  o.width = 8192;
  o.height = 8192;
  const Status st = parse_status(kTiny + "[maxpool]\n", o);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "t.cfg: width override 8192, height override 8192: input 8192x8192 is 67108864 pixels; "
                          "expected width*height <= 16777216 (e.g. 4096x4096)");
}

TEST(Limits, AnOverrideThatBreaksALayerBlamesTheOverride) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  CfgOptions o;
  o.width = 33;
  Expected<NetworkDesc> net = parse_network_cfg(cfg, o);
  ASSERT_FALSE(net.ok());
  EXPECT_EQ(net.status().code(), StatusCode::kInvalidArgument);
  const std::string want = "width override 33: this network does not accept that input size (expected multiples of "
                           "32, as the cfg's 416x416): " + cfg + ":";
  EXPECT_EQ(net.status().message().substr(0, want.size()), want) << net.status().message();
  o.width = 64;
  EXPECT_TRUE(parse_network_cfg(cfg, o).ok());
}

TEST(Limits, ControlCharactersInTheCfg) {
  const Status st = parse_status(kTiny + "[conv]\nfil" + std::string(1, '\0') + "ters=16\n");
  EXPECT_EQ(st.code(), StatusCode::kParseError);
  EXPECT_EQ(st.message(), "t.cfg:6: control character 0x00 at column 4: expected text (is this a .cfg file?)");
  EXPECT_EQ(parse_status(kTiny + "[conv\x1b]\n").message(),
            "t.cfg:5: control character 0x1b at column 6: expected text (is this a .cfg file?)");
  EXPECT_TRUE(parse_status(kTiny + "[conv]\r\n\tfilters = 16\f\v\n").ok());  // whitespace is fine
}

// cfg and weights: regular files only, the cfg at most kMaxCfgBytes; nothing blocks.
TEST(Limits, OnlyRegularFiles) {
  const std::string dir = test::temp_dir();
  const std::string fifo = dir + "/fifo.cfg";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(parse_network_cfg(fifo).status().message(), fifo + ": not a regular file (a FIFO); expected a file");
  EXPECT_EQ(parse_network_cfg("/dev/zero").status().message(),
            "/dev/zero: not a regular file (a character device); expected a file");
  EXPECT_EQ(parse_network_cfg(dir).status().message(), dir + ": not a regular file (a directory); expected a file");
  const NetworkDesc net = test::small_net();
  EXPECT_EQ(WeightsFile::open(fifo, net).status().message(),
            fifo + ": not a regular file (a FIFO); expected a .weights file");
  EXPECT_EQ(WeightsFile::open("/dev/zero", net).status().message(),
            "/dev/zero: not a regular file (a character device); expected a .weights file");
  EXPECT_EQ(WeightsFile::open(dir, net).status().code(), StatusCode::kIoError);
}

TEST(Limits, CfgSizeCap) {
  const std::string path = test::tmp_path("big.cfg");
  {
    std::ofstream f(path);
    f << kTiny << "[conv]\n";
    f << std::string(kMaxCfgBytes, '#');  // one long comment line
  }
  const Status st = parse_network_cfg(path).status();
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_EQ(st.message(), path + ": file has " + std::to_string(kTiny.size() + 7 + kMaxCfgBytes) +
                              " bytes; expected at most 4194304");
}

}  // namespace
}  // namespace dlr
