// Key semantics of the .cfg lexer and parser, from small cfg texts
// (DARKNET.md section 1: whitespace, first-key-wins, pad vs padding, maxpool
// total padding, route indices and groups, defaults).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loaders/cfg_lexer.h"
#include "loaders/network_desc.h"

namespace dlr {
namespace {

// Lines 1-4: a 3x416x416 input.
const std::string kNet = "[net]\nwidth=416\nheight=416\nchannels=3\n";

NetworkDesc parse_ok(const std::string& text, const CfgOptions& opt = {}) {
  Expected<NetworkDesc> net = parse_network_cfg_text(text, "t.cfg", opt);
  EXPECT_TRUE(net.ok()) << net.status().to_string();
  if (!net.ok()) return NetworkDesc{};
  return std::move(net).value();
}

TEST(CfgLexer, SectionsOptionsAndLines) {
  const std::string text = "# comment\n[net]\n; other comment\n\n width = 4 16 \n[conv]\nsize=3\n";
  Expected<std::vector<CfgSection>> s = lex_cfg_text(text, "x.cfg");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].name, "net");
  EXPECT_EQ((*s)[0].line, 2);
  ASSERT_EQ((*s)[0].options.size(), 1u);
  EXPECT_EQ((*s)[0].options[0].key, "width");
  EXPECT_EQ((*s)[0].options[0].value, "416");  // whitespace removed even inside the value
  EXPECT_EQ((*s)[0].options[0].line, 5);
  EXPECT_EQ((*s)[1].name, "conv");
  EXPECT_EQ((*s)[1].find("size")->value, "3");
  EXPECT_EQ((*s)[1].find("filters"), nullptr);
}

TEST(CfgLexer, FirstDuplicateWinsAndLaterOnesAreKept) {
  Expected<std::vector<CfgSection>> s = lex_cfg_text("[net]\na=1\nb=2\na=3\na=4\n", "x.cfg");
  ASSERT_TRUE(s.ok());
  const CfgSection& net = (*s)[0];
  EXPECT_EQ(net.options.size(), 2u);
  EXPECT_EQ(net.find("a")->value, "1");
  ASSERT_EQ(net.duplicates.size(), 2u);
  EXPECT_EQ(net.duplicates[0].value, "3");
  EXPECT_EQ(net.duplicates[0].line, 4);
}

TEST(CfgLexer, CrLfTabsAndValueWithEquals) {
  Expected<std::vector<CfgSection>> s = lex_cfg_text("[net]\r\n\tkey\t=\ta=b \r\n", "x.cfg");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ((*s)[0].find("key")->value, "a=b");  // split at the first '='
}

TEST(CfgLexer, ValueParsers) {
  int i = 0;
  float f = 0;
  std::vector<int> il;
  std::vector<float> fl;
  EXPECT_TRUE(parse_cfg_int("-12", &i));
  EXPECT_EQ(i, -12);
  EXPECT_TRUE(parse_cfg_int("3#comment", &i));
  EXPECT_EQ(i, 3);
  EXPECT_FALSE(parse_cfg_int("3.5", &i));
  EXPECT_FALSE(parse_cfg_int("", &i));
  EXPECT_FALSE(parse_cfg_int("99999999999", &i));
  EXPECT_TRUE(parse_cfg_float(".1", &f));
  EXPECT_FLOAT_EQ(f, 0.1f);
  EXPECT_TRUE(parse_cfg_float("1e-3", &f));
  EXPECT_FALSE(parse_cfg_float("nan", &f));
  EXPECT_FALSE(parse_cfg_float("1.0x", &f));
  EXPECT_TRUE(parse_cfg_int_list("-1,61#skip", &il));
  EXPECT_EQ(il, (std::vector<int>{-1, 61}));
  EXPECT_FALSE(parse_cfg_int_list("1,,2", &il));
  EXPECT_FALSE(parse_cfg_int_list("1,", &il));
  EXPECT_TRUE(parse_cfg_float_list("10,14,23.5", &fl));
  EXPECT_EQ(fl, (std::vector<float>{10, 14, 23.5f}));
}

TEST(CfgParser, WhitespaceIsRemovedEverywhere) {
  NetworkDesc net = parse_ok("[ net ]\n width = 4 16 \nheight=\t416\r\nchannels = 3\n"
                             "[ conv ]\n filters = 1 6\n activation = lea ky\n");
  EXPECT_EQ(net.net.width, 416);
  EXPECT_EQ(net.net.height, 416);
  EXPECT_EQ(net.layers[0].conv().filters, 16);
  EXPECT_EQ(net.layers[0].conv().activation, Activation::kLeaky);
}

TEST(CfgParser, YoloAnchorsWithSpaces) {
  NetworkDesc net = parse_ok(kNet + "[conv]\nfilters=12\n[yolo]\nclasses = 1\nnum = 2\nanchors = 1 0, 2 0 , 30,40\n");
  ASSERT_EQ(net.layers.size(), 2u);
  EXPECT_EQ(net.layers[1].yolo().anchors, (std::vector<float>{10, 20, 30, 40}));
  EXPECT_EQ(net.layers[1].yolo().mask, (std::vector<int>{0, 1}));  // default 0..num-1
}

TEST(CfgParser, FirstKeyWinsWithAWarning) {
  NetworkDesc net = parse_ok(kNet + "[convolutional]\nfilters=16\nfilters=32\nactivation=leaky\n");
  EXPECT_EQ(net.layers[0].conv().filters, 16);
  ASSERT_EQ(net.warnings.size(), 1u);
  EXPECT_EQ(net.warnings[0],
            "t.cfg:7: [convolutional] filters=32: duplicate key ignored; the first one (line 6, filters=16) wins, "
            "as in Darknet");
}

TEST(CfgParser, ConvDefaultsAreDarknets) {
  NetworkDesc net = parse_ok(kNet + "[convolutional]\n");
  const LayerDesc& l = net.layers[0];
  EXPECT_EQ(l.kind, LayerKind::kConv);
  EXPECT_EQ(l.conv().filters, 1);
  EXPECT_EQ(l.conv().size, 1);
  EXPECT_EQ(l.conv().stride_x, 1);
  EXPECT_EQ(l.conv().padding, 0);
  EXPECT_EQ(l.conv().groups, 1);
  EXPECT_FALSE(l.conv().batch_normalize);
  EXPECT_EQ(l.conv().activation, Activation::kLogistic);  // not linear
  EXPECT_EQ(l.out.to_string(), "1x416x416");
  EXPECT_EQ(l.inputs, (std::vector<int>{-1}));
  EXPECT_EQ(l.in.to_string(), "3x416x416");
  EXPECT_EQ(l.cfg_line, 5);
}

TEST(CfgParser, PadOverridesPadding) {
  NetworkDesc net = parse_ok(kNet +
                             "[conv]\nfilters=8\nsize=3\npad=1\npadding=5\nactivation=linear\n"    // padding 1
                             "[conv]\nfilters=8\nsize=3\npad=0\npadding=2\nactivation=linear\n"    // padding 2
                             "[conv]\nfilters=8\nsize=5\npad=1\nstride=2\nactivation=linear\n"     // 5/2 = 2
                             "[conv]\nfilters=8\nsize=4\npad=1\nactivation=linear\n");             // 4/2 = 2
  EXPECT_EQ(net.layers[0].conv().padding, 1);
  EXPECT_EQ(net.layers[0].out.to_string(), "8x416x416");
  EXPECT_EQ(net.layers[1].conv().padding, 2);
  EXPECT_EQ(net.layers[1].out.to_string(), "8x418x418");
  EXPECT_EQ(net.layers[2].conv().padding, 2);
  EXPECT_EQ(net.layers[2].out.to_string(), "8x209x209");  // (418+4-5)/2+1
  EXPECT_EQ(net.layers[3].conv().padding, 2);
  EXPECT_EQ(net.layers[3].out.to_string(), "8x210x210");  // (209+4-4)/1+1
}

TEST(CfgParser, ConvStrideXYDilationAndGroups) {
  NetworkDesc net = parse_ok(kNet +
                             "[conv]\nfilters=6\nsize=3\npad=1\nstride=2\nstride_x=1\nactivation=relu\n"
                             "[conv]\nfilters=12\nsize=1\ndilation=3\ngroups=3\nbatch_normalize=1\n"
                             "[conv]\nfilters=12\nsize=3\npad=1\ndilation=2\nactivation=mish\n");
  const LayerDesc& a = net.layers[0];
  EXPECT_EQ(a.conv().stride_x, 1);
  EXPECT_EQ(a.conv().stride_y, 2);
  EXPECT_EQ(a.out.to_string(), "6x208x416");
  const LayerDesc& b = net.layers[1];
  EXPECT_EQ(b.conv().dilation, 1);  // forced to 1 when size == 1
  EXPECT_EQ(b.conv().groups, 3);
  EXPECT_EQ(b.weight_count(), 12 * 2 * 1 * 1);
  EXPECT_EQ(b.file_floats(), 12 + 3 * 12 + 24);
  const LayerDesc& c = net.layers[2];
  EXPECT_EQ(c.conv().dilation, 2);
  EXPECT_EQ(c.conv().padding, 1);
  EXPECT_EQ(c.out.to_string(), "12x208x416");
  EXPECT_EQ(c.conv().activation, Activation::kMish);
  EXPECT_DOUBLE_EQ(c.gflops(), 2.0 * 12 * 12 * 9 * 208 * 416 / 1e9);
  EXPECT_EQ(c.file_floats(), 12 + 12 * 12 * 9);  // no batch norm
}

TEST(CfgParser, MaxPoolTotalPaddingDefault) {
  CfgOptions opt;
  opt.width = opt.height = 13;
  NetworkDesc net = parse_ok(kNet +
                             "[maxpool]\nsize=2\nstride=2\n"   // padding 1 -> (13+1-2)/2+1 = 7
                             "[maxpool]\nsize=2\nstride=1\n"   // padding 1 -> 7
                             "[maxpool]\nsize=5\nstride=1\n"   // SPP: padding 4 -> same
                             "[max]\nstride=2\n"               // size = stride = 2, padding 1 -> 4
                             "[maxpool]\nsize=3\nstride=2\npadding=0\n"  // (4-3)/2+1 = 1
                             "[maxpool]\nsize=1\nstride_x=1\nstride_y=1\n",
                             opt);
  EXPECT_EQ(net.layers[0].maxpool().padding, 1);
  EXPECT_EQ(net.layers[0].out.to_string(), "3x7x7");
  EXPECT_EQ(net.layers[1].out.to_string(), "3x7x7");
  EXPECT_EQ(net.layers[2].maxpool().padding, 4);
  EXPECT_EQ(net.layers[2].out.to_string(), "3x7x7");
  EXPECT_EQ(net.layers[3].maxpool().size, 2);
  EXPECT_EQ(net.layers[3].out.to_string(), "3x4x4");
  EXPECT_EQ(net.layers[4].maxpool().padding, 0);
  EXPECT_EQ(net.layers[4].out.to_string(), "3x1x1");
  EXPECT_EQ(net.layers[5].out.to_string(), "3x1x1");
  EXPECT_DOUBLE_EQ(net.layers[2].darknet_bflops(), 25.0 * 3 * 7 * 7 / 1e9);
  EXPECT_DOUBLE_EQ(net.layers[2].gflops(), 0.0);
}

TEST(CfgParser, MaxPoolStrideXY) {
  NetworkDesc net = parse_ok(kNet + "[maxpool]\nstride_x=2\nstride_y=1\n");
  EXPECT_EQ(net.layers[0].maxpool().stride_x, 2);
  EXPECT_EQ(net.layers[0].maxpool().stride_y, 1);
  EXPECT_EQ(net.layers[0].maxpool().size, 1);  // size defaults to stride (1), not stride_x
  EXPECT_EQ(net.layers[0].out.to_string(), "3x416x208");
}

// Lines 5..: conv(16) conv(32) conv(16) then routes.
const std::string kThreeConvs = kNet +
                                "[conv]\nfilters=16\nsize=3\npad=1\nactivation=leaky\n"
                                "[conv]\nfilters=32\nsize=1\nactivation=leaky\n"
                                "[conv]\nfilters=16\nsize=1\nactivation=leaky\n";

TEST(CfgParser, RouteRelativeAbsoluteAndMultiInput) {
  NetworkDesc net = parse_ok(kThreeConvs +
                             "[route]\nlayers=-1\n"              // 3: [2]
                             "[route]\nlayers=0\n"               // 4: absolute [0]
                             "[route]\nlayers=-1,1,-4,0\n"       // 5: 4-input [4,1,1,0]
                             "[route]\nlayers=1\ngroups=2\ngroup_id=1\n");  // 6: second half of layer 1
  EXPECT_EQ(net.layers[3].route().layers, (std::vector<int>{2}));
  EXPECT_EQ(net.layers[3].out.to_string(), "16x416x416");
  EXPECT_EQ(net.layers[4].route().layers, (std::vector<int>{0}));
  EXPECT_EQ(net.layers[4].in.to_string(), "16x416x416");  // previous layer, as Darknet prints
  EXPECT_EQ(net.layers[5].route().layers, (std::vector<int>{4, 1, 1, 0}));
  EXPECT_EQ(net.layers[5].inputs, (std::vector<int>{4, 1, 1, 0}));
  EXPECT_EQ(net.layers[5].out.to_string(), "96x416x416");  // 16+32+32+16
  EXPECT_EQ(net.layers[6].route().groups, 2);
  EXPECT_EQ(net.layers[6].route().group_id, 1);
  EXPECT_EQ(net.layers[6].out.to_string(), "16x416x416");  // 32/2
  EXPECT_EQ(net.layers[6].file_floats(), 0);
}

TEST(CfgParser, ShortcutDefaultsAndInputs) {
  NetworkDesc net = parse_ok(kThreeConvs + "[shortcut]\nfrom=-3\n[shortcut]\nfrom=0,-2\nactivation=leaky\n");
  const LayerDesc& a = net.layers[3];
  EXPECT_EQ(a.shortcut().activation, Activation::kLinear);  // default linear
  EXPECT_EQ(a.shortcut().from, (std::vector<int>{0}));
  EXPECT_EQ(a.inputs, (std::vector<int>{2, 0}));  // previous layer first
  EXPECT_EQ(a.out, net.layers[2].out);
  const LayerDesc& b = net.layers[4];
  EXPECT_EQ(b.inputs, (std::vector<int>{3, 0, 2}));
  EXPECT_EQ(b.shortcut().activation, Activation::kLeaky);
  EXPECT_DOUBLE_EQ(b.darknet_bflops(), 2.0 * 16 * 416 * 416 / 1e9);
}

TEST(CfgParser, UpsampleStrideAndScale) {
  NetworkDesc net = parse_ok(kNet + "[upsample]\n[upsample]\nstride=3\nscale=0.5\n");
  EXPECT_EQ(net.layers[0].upsample().stride, 2);
  EXPECT_EQ(net.layers[0].out.to_string(), "3x832x832");
  EXPECT_EQ(net.layers[1].upsample().stride, 3);
  EXPECT_FLOAT_EQ(net.layers[1].upsample().scale, 0.5f);
  EXPECT_EQ(net.layers[1].out.to_string(), "3x2496x2496");
}

TEST(CfgParser, YoloDefaultsAndKeys) {
  NetworkDesc net = parse_ok(kNet +
                             "[conv]\nfilters=25\n[yolo]\n"  // classes 20, num 1 -> 1*(25)
                             "[conv]\nfilters=18\n[yolo]\nclasses=1\nnum=4\nmask=3,1,3\nanchors=1,2,3,4,5,6,7,8,9,10\n"
                             "scale_x_y=1.05\nnew_coords=1\nnms_kind=diounms\nbeta_nms=0.4\njitter=.3\nmax=90\n"
                             "[conv]\nfilters=18\n[yolo]\nclasses=1\nnum=3\nnms_kind=greedynms\n");
  const YoloParams& a = net.layers[1].yolo();
  EXPECT_EQ(a.classes, 20);
  EXPECT_EQ(a.total, 1);
  EXPECT_EQ(a.mask, (std::vector<int>{0}));
  EXPECT_EQ(a.anchors, (std::vector<float>{0.5f, 0.5f}));
  EXPECT_FLOAT_EQ(a.scale_x_y, 1.0f);
  EXPECT_FALSE(a.new_coords);
  EXPECT_EQ(a.nms_kind, NmsKind::kDefault);
  EXPECT_FLOAT_EQ(a.beta_nms, 0.6f);
  const YoloParams& b = net.layers[3].yolo();
  EXPECT_EQ(b.mask, (std::vector<int>{3, 1, 3}));
  EXPECT_EQ(b.anchors, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));  // first 2*num values
  EXPECT_FLOAT_EQ(b.scale_x_y, 1.05f);
  EXPECT_TRUE(b.new_coords);
  EXPECT_EQ(b.nms_kind, NmsKind::kDiou);
  EXPECT_FLOAT_EQ(b.beta_nms, 0.4f);
  EXPECT_EQ(net.layers[3].out.to_string(), "18x416x416");
  EXPECT_EQ(net.layers[5].yolo().nms_kind, NmsKind::kGreedy);
  EXPECT_EQ(net.yolo_layers(), (std::vector<int>{1, 3, 5}));
  EXPECT_STREQ(nms_kind_name(NmsKind::kGreedy), "greedynms");
}

TEST(CfgParser, UnknownNmsKindIsDefaultWithAWarning) {
  NetworkDesc net = parse_ok(kNet + "[conv]\nfilters=25\n[yolo]\nnms_kind=cornersnms\n");
  EXPECT_EQ(net.layers[1].yolo().nms_kind, NmsKind::kDefault);
  ASSERT_EQ(net.warnings.size(), 1u);
  EXPECT_EQ(net.warnings[0],
            "t.cfg:8: [yolo] nms_kind=cornersnms: unrecognised nms_kind; Darknet uses the default NMS (as does dlrun)");
}

TEST(CfgParser, OptionsOverrideWidthAndHeight) {
  CfgOptions opt;
  opt.width = 320;
  opt.height = 256;
  NetworkDesc net = parse_ok(kNet + "[conv]\nfilters=4\nsize=3\nstride=2\npad=1\n", opt);
  EXPECT_EQ(net.net.width, 320);
  EXPECT_EQ(net.net.height, 256);
  EXPECT_EQ(net.input_shape().to_string(), "3x256x320");
  EXPECT_EQ(net.layers[0].out.to_string(), "4x128x160");
  // An override also stands in for a missing key.
  NetworkDesc n2 = parse_ok("[net]\nchannels=1\n[conv]\n", opt);
  EXPECT_EQ(n2.input_shape().to_string(), "1x256x320");
}

TEST(CfgParser, AliasesCommentsAndIgnoredKeys) {
  NetworkDesc net = parse_ok(
      "# leading comment\n[network]\nbatch=64\nsubdivisions=8\nwidth=64\nheight=32\nchannels=3\nmomentum=0.9\n"
      "decay=0.0005\nangle=0\nsaturation=1.5\nexposure=1.5\nhue=.1\nlearning_rate=0.001\nburn_in=1000\n"
      "max_batches=500500\npolicy=steps\nsteps=400000,450000\nscales=.1,.1\nmosaic=1\ncutmix=1\nflip=0\n"
      "ema_alpha=0.9998\nletter_box=1\n"
      "; section comment\n[conv]\nfilters=8 # inline comment after a number\nsize=3\npad=1\nstopbackward=1\n"
      "dontload=0\nlearning_rate=0.5\n"
      "[dropout]\nprobability=.1\n"
      "[max]\nsize=2\nstride=2\n");
  EXPECT_TRUE(net.net.letter_box);
  EXPECT_EQ(net.layers[0].conv().filters, 8);
  EXPECT_EQ(net.layers[1].kind, LayerKind::kDropout);
  EXPECT_FLOAT_EQ(net.layers[1].dropout().probability, 0.1f);
  EXPECT_EQ(net.layers[1].out, net.layers[0].out);
  EXPECT_EQ(net.layers[2].kind, LayerKind::kMaxPool);
  EXPECT_EQ(net.layers[2].out.to_string(), "8x16x32");
  EXPECT_TRUE(net.warnings.empty());
}

TEST(CfgParser, SummaryTable) {
  NetworkDesc net = parse_ok(kThreeConvs + "[route]\nlayers=-1,-3\n[shortcut]\nfrom=-3\n[upsample]\n");
  const std::string s = network_summary(net);
  EXPECT_NE(s.find("   0 conv     16       3 x 3/ 1    416 x 416 x   3 ->  416 x 416 x  16 0.150 BF"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("   3 route  2 0"), std::string::npos) << s;
  EXPECT_NE(s.find("   5 upsample"), std::string::npos) << s;
  EXPECT_NE(s.find("Total BFLOPS"), std::string::npos) << s;
  EXPECT_STREQ(layer_kind_name(LayerKind::kMaxPool), "maxpool");
}

TEST(CfgParser, ReadsAFile) {
  // parse_network_cfg reads the path and names it in messages.
  Expected<NetworkDesc> net = parse_network_cfg("/nonexistent/dir/x.cfg");
  ASSERT_FALSE(net.ok());
  EXPECT_EQ(net.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace dlr
