// Every kind of .cfg error, with its exact one-line message
// ("FILE:LINE: [section] key=value: what was expected") and status code.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include "loaders/network_desc.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

// Lines 1-4: a 3x416x416 input; the first layer section starts on line 5.
const std::string kNet = "[net]\nwidth=416\nheight=416\nchannels=3\n";
// Lines 5-13: layers 0..2 (16, 32, 16 channels at 416x416).
const std::string kConvs = kNet +
                           "[conv]\nfilters=16\nsize=3\npad=1\n"  // 5-8
                           "[conv]\nfilters=32\n"                 // 9-10
                           "[conv]\nfilters=16\n"                 // 11-12
                           "\n";                                  // 13

Status parse_status(const std::string& text, const CfgOptions& opt = {}) {
  Expected<NetworkDesc> net = parse_network_cfg_text(text, "t.cfg", opt);
  return net.ok() ? Status::ok_status() : net.status();
}

#define EXPECT_CFG_ERROR(text, code_, msg)                   \
  do {                                                       \
    const Status st_ = parse_status(text);                   \
    EXPECT_EQ(st_.code(), StatusCode::code_) << st_.to_string(); \
    EXPECT_EQ(st_.message(), msg);                           \
  } while (0)

// ---- files and lexing -------------------------------------------------------

TEST(CfgErrors, MissingFile) {
  Expected<NetworkDesc> net = parse_network_cfg("/nonexistent/yolov4.cfg");
  EXPECT_EQ(net.status().code(), StatusCode::kIoError);
  EXPECT_EQ(net.status().message(), "/nonexistent/yolov4.cfg: cannot open: No such file or directory");
}

TEST(CfgErrors, UnreadableFile) {
  const std::string dir = test::temp_dir();  // a directory opens but is not a regular file
  Expected<NetworkDesc> net = parse_network_cfg(dir);
  EXPECT_EQ(net.status().code(), StatusCode::kIoError);
  EXPECT_EQ(net.status().message(), dir + ": not a regular file (a directory); expected a file");
}

TEST(CfgErrors, ErrorsNameTheGivenPath) {
  const std::string path = test::temp_dir() + "/bad_route.cfg";
  {
    std::ofstream f(path);
    f << kNet << "[route]\nlayers=3\n";
  }
  Expected<NetworkDesc> net = parse_network_cfg(path);
  EXPECT_EQ(net.status().message(), path + ":6: [route] layers=3: layer 3 does not exist yet (this is layer 0)");
}

TEST(CfgErrors, LineWithoutEquals) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters 16\n", kParseError,
                   "t.cfg:6: 'filters16': expected 'key=value', '[section]' or a comment ('#' or ';')");
}

TEST(CfgErrors, MalformedSectionHeader) {
  EXPECT_CFG_ERROR(kNet + "[conv\n", kParseError,
                   "t.cfg:5: '[conv': expected a section header '[name]' alone on its line");
  EXPECT_CFG_ERROR(kNet + "[conv]#x\n", kParseError,
                   "t.cfg:5: '[conv]#x': expected a section header '[name]' alone on its line");
}

TEST(CfgErrors, EmptyKey) {
  EXPECT_CFG_ERROR(kNet + "[conv]\n=3\n", kParseError, "t.cfg:6: '=3': expected a key before '='");
}

TEST(CfgErrors, OptionBeforeAnySection) {
  EXPECT_CFG_ERROR("width=416\n" + kNet, kParseError,
                   "t.cfg:1: 'width=416': option before the first section (expected '[net]' first)");
}

// ---- sections ----------------------------------------------------------------

TEST(CfgErrors, EmptyFile) {
  EXPECT_CFG_ERROR("# nothing\n\n", kParseError, "t.cfg: no sections (expected [net] first, then layers)");
}

TEST(CfgErrors, NetMissingOrNotFirst) {
  EXPECT_CFG_ERROR("[conv]\nfilters=3\n" + kNet, kParseError,
                   "t.cfg:1: [conv]: expected [net] or [network] as the first section");
  EXPECT_CFG_ERROR(kConvs + "[net]\n", kParseError, "t.cfg:14: [net]: [net] may only be the first section");
}

TEST(CfgErrors, EmptyNetwork) {
  EXPECT_CFG_ERROR(kNet, kParseError,
                   "t.cfg:1: [net]: the network has no layers (expected layer sections after [net])");
}

TEST(CfgErrors, UnknownSection) {
  EXPECT_CFG_ERROR(kNet + "[convolution]\n", kParseError,
                   "t.cfg:5: [convolution]: unknown section (not a Darknet layer type)");
}

TEST(CfgErrors, UnsupportedDarknetSections) {
  for (const char* name : {"connected", "batchnorm", "activation", "implicit", "local_avgpool", "softmax", "empty"}) {
    EXPECT_CFG_ERROR(kConvs + "[" + name + "]\n", kUnsupported,
                     std::string("t.cfg:14: [") + name +
                         "]: section not supported by dlrun (expected one of net, convolutional, maxpool, route, "
                         "shortcut, upsample, yolo, dropout, avgpool, scale_channels, sam, reorg, reorg3d, region, "
                         "Gaussian_yolo)");
  }
}

// Sections added for issue 9: their shape checks and rejected keys, one line each.
TEST(CfgErrors, Issue9SectionErrors) {
  EXPECT_CFG_ERROR(kConvs + "[region]\n", kParseError,
                   "t.cfg:14: [region]: the previous layer 2 outputs 16 channels but num*(classes+coords+1) = "
                   "1*(20+4+1) = 25 (expected filters=25 in that [convolutional]) (this is layer 3)");
  EXPECT_CFG_ERROR(kConvs + "[region]\ncoords=5\n", kParseError, "t.cfg:15: [region] coords=5: expected coords in 4..4");
  EXPECT_CFG_ERROR(kConvs + "[region]\ntree=data/9k.tree\n", kUnsupported,
                   "t.cfg:15: [region] tree=data/9k.tree: not supported by dlrun (hierarchical softmax tree "
                   "(yolo9000's 9k.tree))");
  EXPECT_CFG_ERROR(kConvs + "[Gaussian_yolo]\nclasses=1\nnum=1\n", kParseError,
                   "t.cfg:15: [Gaussian_yolo] classes=1: the previous layer 2 outputs 16 channels but "
                   "len(mask)*(classes+9) = 1*(1+9) = 10 (expected filters=10 in that [convolutional]) (this is layer 3)");
  EXPECT_CFG_ERROR(kConvs + "[reorg]\nstride=3\n", kParseError,
                   "t.cfg:15: [reorg] stride=3: the input 16x416x416 is not divisible by the stride 3 (expected H and "
                   "W divisible by stride and C by stride*stride) (this is layer 3)");
  EXPECT_CFG_ERROR(kConvs + "[reorg3d]\nstride=2\nreverse=1\n", kUnsupported,
                   "t.cfg:16: [reorg3d] reverse=1: not supported by dlrun (depth-to-space (reverse reorg)); expected 0 "
                   "or no key");
  EXPECT_CFG_ERROR(kConvs + "[sam]\nfrom=-2\n", kParseError,
                   "t.cfg:15: [sam] from=-2: layer 1 outputs 32x416x416 but the previous layer outputs 16x416x416 "
                   "(expected equal shapes) (this is layer 3)");
  EXPECT_CFG_ERROR(kConvs + "[sam]\nfrom=-1\nactivation=mish\n", kUnsupported,
                   "t.cfg:16: [sam] activation=mish: Darknet's [sam] does not apply mish (expected another activation) "
                   "(this is layer 3)");
  EXPECT_CFG_ERROR(kConvs + "[scale_channels]\nfrom=-2\n", kParseError,
                   "t.cfg:15: [scale_channels] from=-2: the previous layer outputs 16x416x416 and layer 1 outputs "
                   "32x416x416 (expected C x 1 x 1 scales for a C x H x W layer) (this is layer 3)");
  EXPECT_CFG_ERROR(kConvs + "[scale_channels]\nfrom=-2,-1\n", kParseError,
                   "t.cfg:15: [scale_channels] from=-2,-1: expected exactly one layer index (this is layer 3)");
}

// ---- keys ----------------------------------------------------------------------

TEST(CfgErrors, UnknownKey) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilter=16\n", kParseError,
                   "t.cfg:6: [conv] filter=16: unknown key (not a [conv] key Darknet uses for inference or "
                   "training; check the spelling)");
  EXPECT_CFG_ERROR("[net]\nwidht=416\n", kParseError,
                   "t.cfg:2: [net] widht=416: unknown key (not a [net] key Darknet uses for inference or "
                   "training; check the spelling)");
}

TEST(CfgErrors, MalformedInteger) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nsize=3x3\n", kParseError, "t.cfg:6: [conv] size=3x3: expected an integer");
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=2.5\n", kParseError, "t.cfg:6: [conv] filters=2.5: expected an integer");
  EXPECT_CFG_ERROR(kNet + "[conv]\npad=\n", kParseError, "t.cfg:6: [conv] pad=: expected an integer");
  EXPECT_CFG_ERROR("[net]\nwidth=abc\n", kParseError, "t.cfg:2: [net] width=abc: expected an integer");
}

TEST(CfgErrors, MalformedFloat) {
  EXPECT_CFG_ERROR(kConvs + "[upsample]\nscale=two\n", kParseError,
                   "t.cfg:15: [upsample] scale=two: expected a finite number");
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=255\n[yolo]\nclasses=80\nnum=3\nscale_x_y=inf\n", kParseError,
                   "t.cfg:10: [yolo] scale_x_y=inf: expected a finite number");
}

TEST(CfgErrors, MalformedList) {
  EXPECT_CFG_ERROR(kConvs + "[route]\nlayers=-1,,-3\n", kParseError,
                   "t.cfg:15: [route] layers=-1,,-3: expected a comma-separated list of layer indices");
  EXPECT_CFG_ERROR(kConvs + "[shortcut]\nfrom=-3,\n", kParseError,
                   "t.cfg:15: [shortcut] from=-3,: expected a comma-separated list of layer indices");
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=255\n[yolo]\nnum=9\nmask=0,1;2\n", kParseError,
                   "t.cfg:9: [yolo] mask=0,1;2: expected a comma-separated list of anchor indices");
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=75\n[yolo]\nnum=1\nanchors=10,x\n", kParseError,
                   "t.cfg:9: [yolo] anchors=10,x: expected a comma-separated list of numbers (w,h pairs)");
}

TEST(CfgErrors, UnknownActivation) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nactivation=leakyrelu\n", kParseError,
                   "t.cfg:6: [conv] activation=leakyrelu: unknown activation (expected one of linear, leaky, "
                   "logistic, relu, relu6, elu, selu, gelu, tanh, swish, mish, hard_mish)");
  EXPECT_CFG_ERROR(kConvs + "[shortcut]\nfrom=-2\nactivation=Linear\n", kParseError,
                   "t.cfg:16: [shortcut] activation=Linear: unknown activation (expected one of linear, leaky, "
                   "logistic, relu, relu6, elu, selu, gelu, tanh, swish, mish, hard_mish)");
}

TEST(CfgErrors, MissingRequiredKey) {
  EXPECT_CFG_ERROR(kConvs + "[route]\ngroups=1\n", kParseError,
                   "t.cfg:14: [route]: missing required key layers= (comma-separated layer indices)");
  EXPECT_CFG_ERROR(kConvs + "[shortcut]\n", kParseError,
                   "t.cfg:14: [shortcut]: missing required key from= (comma-separated layer indices)");
}

// ---- layer references ----------------------------------------------------------

TEST(CfgErrors, RouteForwardReference) {
  EXPECT_CFG_ERROR(kConvs + "[route]\nlayers=-1,200\n", kParseError,
                   "t.cfg:15: [route] layers=-1,200: layer 200 does not exist yet (this is layer 3)");
}

TEST(CfgErrors, RouteToItself) {
  EXPECT_CFG_ERROR(kConvs + "[route]\nlayers=3\n", kParseError,
                   "t.cfg:15: [route] layers=3: layer 3 is this layer itself (this is layer 3)");
}

TEST(CfgErrors, RouteBeforeTheFirstLayer) {
  EXPECT_CFG_ERROR(kConvs + "[route]\nlayers=-4\n", kParseError,
                   "t.cfg:15: [route] layers=-4: -4 refers to layer -1, which does not exist (this is layer 3)");
}

TEST(CfgErrors, ShortcutOutOfRange) {
  EXPECT_CFG_ERROR(kConvs + "[shortcut]\nfrom=-9\n", kParseError,
                   "t.cfg:15: [shortcut] from=-9: -9 refers to layer -6, which does not exist (this is layer 3)");
  EXPECT_CFG_ERROR(kConvs + "[shortcut]\nfrom=5\n", kParseError,
                   "t.cfg:15: [shortcut] from=5: layer 5 does not exist yet (this is layer 3)");
}

TEST(CfgErrors, ShortcutAsFirstLayer) {
  EXPECT_CFG_ERROR(kNet + "[shortcut]\nfrom=-1\n", kParseError,
                   "t.cfg:5: [shortcut]: a shortcut needs a previous layer (this is layer 0)");
}

// [net] keys Darknet itself never reads (it prints "Unused field") are ignored, not rejected.
TEST(CfgErrors, NetKeysDarknetIgnoresAreAccepted) {
  auto net = parse_network_cfg_text("[net]\nwidth=416\nheight=416\nchannels=3\nmax_epochs = 300\nseen=64\n[conv]\n",
                                    "t.cfg");
  EXPECT_TRUE(net.ok()) << net.status().to_string();
}

// Darknet adds the overlapping elements of a shortcut's `from` layers of another shape
// (the output keeps the previous layer's shape): accepted, not an error.
TEST(CfgErrors, ShortcutShapeMismatchIsAccepted) {
  auto net = parse_network_cfg_text(kConvs + "[shortcut]\nfrom=-2\n", "t.cfg");
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  EXPECT_EQ(net->layers[3].out, (Shape3{16, 416, 416}));
  EXPECT_EQ(net->layers[3].inputs, (std::vector<int>{2, 1}));
}

TEST(CfgErrors, RouteSpatialSizesDiffer) {
  EXPECT_CFG_ERROR(kConvs + "[maxpool]\nsize=2\nstride=2\n[route]\nlayers=-1,0\n", kParseError,
                   "t.cfg:18: [route] layers=-1,0: inputs differ in width/height: layer 3 is 16x208x208 but layer 0 "
                   "is 16x416x416 (expected equal height and width) (this is layer 4)");
}

TEST(CfgErrors, RouteGroups) {
  EXPECT_CFG_ERROR(kConvs + "[route]\nlayers=-1\ngroups=3\n", kParseError,
                   "t.cfg:16: [route] groups=3: layer 2 has 16 channels, not divisible by groups (this is layer 3)");
  EXPECT_CFG_ERROR(kConvs + "[route]\nlayers=-1\ngroups=2\ngroup_id=2\n", kParseError,
                   "t.cfg:17: [route] group_id=2: expected 0 <= group_id < groups (2)");
  EXPECT_CFG_ERROR(kConvs + "[route]\nlayers=-1\ngroups=0\n", kParseError,
                   "t.cfg:16: [route] groups=0: expected groups in 1..65536");
}

// ---- yolo ------------------------------------------------------------------------

TEST(CfgErrors, YoloFiltersMismatch) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=256\n[yolo]\nmask=0,1,2\nclasses=80\nnum=9\n", kParseError,
                   "t.cfg:9: [yolo] classes=80: the previous layer 0 outputs 256 channels but len(mask)*(classes+5) "
                   "= 3*(80+5) = 255 (expected filters=255 in that [convolutional]) (this is layer 1)");
}

TEST(CfgErrors, YoloMaskIndexOutOfRange) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=255\n[yolo]\nmask=6,7,9\nnum=9\nclasses=80\n", kParseError,
                   "t.cfg:8: [yolo] mask=6,7,9: anchor index 9 out of range (expected 0 <= index < num=9)");
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=255\n[yolo]\nmask=-1,0,1\nnum=3\nclasses=80\n", kParseError,
                   "t.cfg:8: [yolo] mask=-1,0,1: anchor index -1 out of range (expected 0 <= index < num=3)");
}

TEST(CfgErrors, YoloTooFewAnchors) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=255\n[yolo]\nmask=0,1,2\nnum=3\nclasses=80\nanchors=10,13,16,30,33\n",
                   kParseError, "t.cfg:11: [yolo] anchors=10,13,16,30,33: expected at least 2*num = 6 values, got 5");
}

TEST(CfgErrors, YoloCounts) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=5\n[yolo]\nclasses=0\n", kParseError,
                   "t.cfg:8: [yolo] classes=0: expected classes in 1..65536");
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=5\n[yolo]\nnum=0\n", kParseError,
                   "t.cfg:8: [yolo] num=0: expected num in 1..65536");
}

TEST(CfgErrors, YoloNewCoordsValue) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=25\n[yolo]\nnew_coords=2\n", kUnsupported,
                   "t.cfg:8: [yolo] new_coords=2: expected 0 or 1");
}

// ---- sizes -----------------------------------------------------------------------

TEST(CfgErrors, NetSizes) {
  EXPECT_CFG_ERROR("[net]\nwidth=0\nheight=416\nchannels=3\n[conv]\n", kParseError,
                   "t.cfg:2: [net] width=0: expected width in 1..16384");
  EXPECT_CFG_ERROR("[net]\nwidth=416\nheight=20000\nchannels=3\n[conv]\n", kParseError,
                   "t.cfg:3: [net] height=20000: expected height in 1..16384");
  EXPECT_CFG_ERROR("[net]\nwidth=416\nheight=416\nchannels=-3\n[conv]\n", kParseError,
                   "t.cfg:4: [net] channels=-3: expected channels in 1..16384");
  EXPECT_CFG_ERROR("[net]\nwidth=416\nheight=416\n[conv]\n", kParseError,
                   "t.cfg:1: [net]: missing channels= (expected channels in 1..16384)");
}

TEST(CfgErrors, BadOverride) {
  CfgOptions opt;
  opt.width = -32;
  const Status st = parse_status(kConvs, opt);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "t.cfg: width override -32: expected 1..16384 (or 0 for the cfg value)");
}

TEST(CfgErrors, ConvFilters) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=0\n", kParseError, "t.cfg:6: [conv] filters=0: expected filters in 1..65536");
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=70000\n", kParseError,
                   "t.cfg:6: [conv] filters=70000: expected filters in 1..65536");
}

TEST(CfgErrors, ConvSizeStrideDilation) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nsize=0\n", kParseError, "t.cfg:6: [conv] size=0: expected size in 1..1024");
  EXPECT_CFG_ERROR(kNet + "[conv]\nstride=-2\n", kParseError, "t.cfg:6: [conv] stride=-2: expected stride >= 1");
  EXPECT_CFG_ERROR(kNet + "[conv]\nstride_y=0\n", kParseError, "t.cfg:6: [conv] stride_y=0: expected stride_y >= 1");
  EXPECT_CFG_ERROR(kNet + "[conv]\npadding=-1\n", kParseError, "t.cfg:6: [conv] padding=-1: expected padding >= 0");
  EXPECT_CFG_ERROR(kNet + "[conv]\nsize=3\ndilation=0\n", kParseError,
                   "t.cfg:7: [conv] dilation=0: expected dilation >= 1");
}

TEST(CfgErrors, ConvGroups) {
  EXPECT_CFG_ERROR(kConvs + "[conv]\nfilters=16\ngroups=3\n", kParseError,
                   "t.cfg:16: [conv] groups=3: the input has 16 channels, not divisible by groups (this is layer 3)");
  EXPECT_CFG_ERROR(kConvs + "[conv]\nfilters=12\ngroups=8\n", kParseError,
                   "t.cfg:16: [conv] groups=8: filters=12 is not divisible by groups (this is layer 3)");
  EXPECT_CFG_ERROR(kConvs + "[conv]\ngroups=0\n", kParseError, "t.cfg:15: [conv] groups=0: expected groups in 1..65536");
}

TEST(CfgErrors, ConvOutputNotPositive) {
  CfgOptions opt;
  opt.width = opt.height = 4;
  // The cfg's 416x416 fits; the override is blamed, with the layer's own message.
  const Status st = parse_status(kNet + "[conv]\nfilters=8\nsize=7\n", opt);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "width override 4, height override 4: this network does not accept that input size: "
            "t.cfg:7: [conv] size=7: the kernel does not fit the padded input 3x4x4 (size 7, stride 1x1, padding 0) "
            "(this is layer 0)");
}

TEST(CfgErrors, ConvDilationThatDarknetMisSizes) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nsize=3\npadding=0\ndilation=2\n", kUnsupported,
                   "t.cfg:8: [conv] dilation=2: not supported by dlrun with size=3 padding=0: Darknet's output-size "
                   "formula ignores dilation and disagrees with the computed window (expected an odd size with "
                   "pad=1) (this is layer 0)");
}

TEST(CfgErrors, MaxPoolSizes) {
  EXPECT_CFG_ERROR(kNet + "[maxpool]\nstride=0\n", kParseError, "t.cfg:6: [maxpool] stride=0: expected stride >= 1");
  EXPECT_CFG_ERROR(kNet + "[maxpool]\nsize=-2\nstride=2\n", kParseError,
                   "t.cfg:6: [maxpool] size=-2: expected size in 1..1024");
  EXPECT_CFG_ERROR(kNet + "[maxpool]\nsize=2\npadding=3\n", kUnsupported,
                   "t.cfg:7: [maxpool] padding=3: windows would lie entirely in the padding (expected padding <= 2 = "
                   "2*(size-1)) (this is layer 0)");
  CfgOptions opt;
  opt.width = opt.height = 2;
  const Status st = parse_status(kNet + "[maxpool]\nsize=5\nstride=1\npadding=0\n", opt);
  EXPECT_EQ(st.message(),
            "width override 2, height override 2: this network does not accept that input size: "
            "t.cfg:6: [maxpool] size=5: the window does not fit the padded input 3x2x2 (size 5, stride 1x1, total "
            "padding 0) (this is layer 0)");
}

TEST(CfgErrors, UpsampleStride) {
  EXPECT_CFG_ERROR(kNet + "[upsample]\nstride=0\n", kParseError,
                   "t.cfg:6: [upsample] stride=0: expected stride >= 1 (this is layer 0)");
  EXPECT_CFG_ERROR(kNet + "[upsample]\nstride=-2\n", kUnsupported,
                   "t.cfg:6: [upsample] stride=-2: a negative stride (downsampling) is not supported by dlrun (this is "
                   "layer 0)");
  EXPECT_CFG_ERROR(kNet + "[upsample]\nstride=100000\n", kParseError,
                   "t.cfg:6: [upsample] stride=100000: output would exceed 2^31-1 elements per image (this is "
                   "layer 0)");
}

// ---- keys that change inference or the weights layout ----------------------------

TEST(CfgErrors, DontLoadChangesTheWeightsLayout) {
  EXPECT_CFG_ERROR(kNet + "[conv]\ndontload=1\n", kUnsupported,
                   "t.cfg:6: [conv] dontload=1: not supported by dlrun (skips this layer in the .weights file, "
                   "changing its layout); expected 0 or no key");
  EXPECT_CFG_ERROR(kNet + "[conv]\nbatch_normalize=1\ndontloadscales=1\n", kUnsupported,
                   "t.cfg:7: [conv] dontloadscales=1: not supported by dlrun (skips the batch-norm scales in the "
                   ".weights file, changing its layout); expected 0 or no key");
}

TEST(CfgErrors, UnsupportedConvKeys) {
  const struct {
    const char* key;
    const char* why;
  } cases[] = {
      {"binary", "binarized weights"},
      {"xnor", "XNOR (binary) convolution"},
      {"flipped", "transposes the weights after loading"},
      {"antialiasing", "adds a fixed blur convolution after this one"},
      {"coordconv", "adds coordinate channels"},
      {"sway", "deformable (sway) weights"},
      {"rotate", "deformable (rotate) weights"},
      {"stretch", "deformable (stretch) weights"},
      {"stretch_sway", "deformable (stretch_sway) weights"},
      {"cbn", "cross-iteration batch normalization"},
  };
  for (const auto& c : cases) {
    EXPECT_CFG_ERROR(kNet + "[convolutional]\n" + c.key + "=1\n", kUnsupported,
                     std::string("t.cfg:6: [convolutional] ") + c.key + "=1: not supported by dlrun (" + c.why +
                         "); expected 0 or no key");
    EXPECT_TRUE(parse_status(kNet + "[convolutional]\n" + c.key + "=0\n").ok()) << c.key;
  }
  EXPECT_CFG_ERROR(kConvs + "[conv]\nshare_index=0\n", kUnsupported,
                   "t.cfg:15: [conv] share_index=0: not supported by dlrun (shares another layer's weights; this "
                   "layer then has none in the .weights file)");
}

TEST(CfgErrors, UnsupportedShortcutWeights) {
  EXPECT_CFG_ERROR(kConvs + "[shortcut]\nfrom=-3\nweights_type=per_feature\n", kUnsupported,
                   "t.cfg:16: [shortcut] weights_type=per_feature: not supported by dlrun (weighted "
                   "(per_feature/per_channel) residual add); expected none or no key");
  EXPECT_CFG_ERROR(kConvs + "[shortcut]\nfrom=-3\nweights_normalization=softmax\n", kUnsupported,
                   "t.cfg:16: [shortcut] weights_normalization=softmax: not supported by dlrun (normalized residual "
                   "weights); expected none or no key");
  EXPECT_TRUE(parse_status(kConvs + "[shortcut]\nfrom=-3\nweights_type=none\nweights_normalization=none\n").ok());
}

TEST(CfgErrors, UnsupportedMaxPoolKeys) {
  EXPECT_CFG_ERROR(kNet + "[maxpool]\nmaxpool_depth=1\n", kUnsupported,
                   "t.cfg:6: [maxpool] maxpool_depth=1: not supported by dlrun (max over channels instead of space); "
                   "expected 0 or no key");
  EXPECT_CFG_ERROR(kNet + "[maxpool]\nantialiasing=1\n", kUnsupported,
                   "t.cfg:6: [maxpool] antialiasing=1: not supported by dlrun (adds a fixed blur convolution after "
                   "the pooling); expected 0 or no key");
}

TEST(CfgErrors, UnsupportedNetInputs) {
  EXPECT_CFG_ERROR("[net]\ninputs=256\n[conv]\n", kUnsupported,
                   "t.cfg:2: [net] inputs=256: not supported by dlrun (non-image (flat vector) inputs are not "
                   "supported; use width, height and channels)");
}

TEST(CfgErrors, UnsupportedYoloMap) {
  EXPECT_CFG_ERROR(kNet + "[conv]\nfilters=25\n[yolo]\nmap=data/inet9k.map\n", kUnsupported,
                   "t.cfg:8: [yolo] map=data/inet9k.map: not supported by dlrun (remaps class ids through a file)");
}

TEST(CfgErrors, FirstErrorInFileOrderWithinASection) {
  // The unknown key is reported even though a later key is malformed.
  EXPECT_CFG_ERROR(kNet + "[conv]\nfoo=1\nsize=x\n", kParseError,
                   "t.cfg:6: [conv] foo=1: unknown key (not a [conv] key Darknet uses for inference or training; "
                   "check the spelling)");
}

TEST(CfgErrors, RealCfgWithAnInjectedBadRoute) {
  DLR_REQUIRE_FILE(cfg, "models/yolov4.cfg");
  std::ifstream in(cfg);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The first "layers = 85" route is layer 119; make it point forward.
  const size_t at = text.find("layers = 85");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "layers = 200");
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
  const Status st = parse_status(text);
  EXPECT_EQ(st.message(), "t.cfg:" + std::to_string(line) +
                              ": [route] layers=200: layer 200 does not exist yet (this is layer 119)");
}

}  // namespace
}  // namespace dlr
