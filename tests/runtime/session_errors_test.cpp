// Bad input at the Session / Engine / tool-support boundary: every error is a
// one-line Status naming what was wrong.
#include <gtest/gtest.h>

#include <fstream>
#include <new>
#include <stdexcept>
#include <iterator>
#include <sstream>

#include "runtime/core/log.h"

#include "runtime/engine.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tools/common/tool_support.h"

namespace dlr {
namespace {

class SessionErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    m_cfg = test::source_file("models/yolov4-tiny.cfg");
    m_weights = test::synthetic_weights(m_cfg);
    ASSERT_FALSE(m_weights.empty());
  }
  std::string open_error(const SessionOptions& o) {
    auto s = Session::open(m_cfg, m_weights, o);
    EXPECT_FALSE(s.ok());
    return s.ok() ? "" : s.status().message();
  }
  std::string m_cfg, m_weights;
};

TEST_F(SessionErrors, OptionsOutOfRange) {
  SessionOptions o;
  o.batch = 0;
  EXPECT_EQ(open_error(o), "batch 0 is out of range (1..64)");
  o = SessionOptions();
  o.thresh = 1.5f;
  EXPECT_EQ(open_error(o), "thresh must be in [0, 1)");
  o = SessionOptions();
  o.nms = 0.f;
  EXPECT_EQ(open_error(o), "nms must be in (0, 1]");
  o = SessionOptions();
  o.precision = Precision::kFP16;
  EXPECT_EQ(open_error(o), "the CPU backend runs fp32 only (asked for fp16)");
  PoolLayout pool = PoolLayout::kAuto;  // typed now: a pool name is parsed at the boundary
  EXPECT_FALSE(parse_pool_layout("rings", &pool));
  EXPECT_TRUE(parse_pool_layout("slots", &pool));
  EXPECT_EQ(pool, PoolLayout::kSlots);
  o = SessionOptions();
  o.unit_search_min_gain = -0.5;
  EXPECT_EQ(open_error(o), "unit search minimum gain -0.500000 must be in [0, 1)");
  o = SessionOptions();
  o.mode = WeightMode::kStream;
  EXPECT_EQ(open_error(o),
            "the CPU backend keeps every weight in host memory (mode stream needs device cuda)");
  for (int bad : {-1, 65}) {
    o = SessionOptions();
    o.warm_threads = bad;
    EXPECT_EQ(open_error(o), "warm threads " + std::to_string(bad) + ": expected 0 to 64");
  }
}

TEST_F(SessionErrors, ImagesAreChecked) {
  SessionOptions o;
  o.batch = 2;
  auto s = Session::open(m_cfg, m_weights, o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  tools::LoadedImage img;
  img.width = 8;
  img.height = 8;
  img.pixels.assign(8 * 8 * 3, 100);
  ImageView views[3] = {img.view(), img.view(), img.view()};
  auto r = (*s)->detect_batch(views, 3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "got 3 images for a batch of 2");
  r = (*s)->detect_batch(views, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "got 0 images for a batch of 2");
  views[1].channels = 1;
  r = (*s)->detect_batch(views, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "image 1 is empty or not 3-channel");
  views[1] = img.view();
  views[1].data = nullptr;
  r = (*s)->detect_batch(views, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "image 1 is empty or not 3-channel");
  ASSERT_TRUE((*s)->detect_batch(views, 1).ok()) << "the session stays usable after an error";
}

TEST(SessionErrorsCfg, ACfgWithoutYoloBlamesTheCfgNotTheWeights) {
  const std::string cfg = test::temp_dir() + "/noyolo.cfg";
  std::ofstream(cfg) << "[net]\nwidth=32\nheight=32\nchannels=3\n[convolutional]\nfilters=4\n";
  auto s = Session::open(cfg, test::temp_dir() + "/any.weights");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(s.status().message(), cfg + ": the network has no detection output layer (expected [yolo], [region] or "
                                       "[Gaussian_yolo])");
}

// NetworkDesc::warnings reach the log once at open.
TEST_F(SessionErrors, ParserWarningsAreLoggedAtOpen) {
  std::ifstream in(m_cfg);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("channels=3\n");
  ASSERT_NE(at, std::string::npos);
  text.insert(at, "width=608\n");  // a duplicate: the first width=416 wins, with a warning
  const std::string cfg = test::temp_dir() + "/dup.cfg";
  std::ofstream(cfg) << text;
  std::ostringstream log;
  set_log_callback([&log](spdlog::level::level_enum, const std::string& m) { log << m << "\n"; });
  auto s = Session::open(cfg, m_weights);
  set_log_callback(nullptr);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const std::string line = cfg + ":9: [net] width=608: duplicate key ignored; the first one (line 7, width=416) wins, "
                                 "as in Darknet";
  EXPECT_NE(log.str().find(line), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find(line), log.str().rfind(line)) << "logged more than once";
}

TEST(ToolSupport, GuardedMainTurnsExceptionsIntoOneLine) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(tools::guarded_main("t", []() -> int { throw std::bad_alloc(); }), tools::kExitError);
  EXPECT_EQ(tools::guarded_main("t", []() -> int { throw std::runtime_error("two\nlines"); }), tools::kExitError);
  EXPECT_EQ(tools::guarded_main("t", []() -> int { throw 42; }), tools::kExitError);
  EXPECT_EQ(tools::guarded_main("t", [] { return tools::kExitUsage; }), tools::kExitUsage);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "t: out of memory (std::bad_alloc)\nt: unexpected error: two lines\n"
            "t: unexpected error (unknown exception)\n");
}

TEST(ToolSupport, NamesAndImageFiles) {
  const std::string dir = test::temp_dir();
  auto n = read_names(dir + "/missing.names");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(), dir + "/missing.names: cannot open names file");
  std::ofstream(dir + "/empty.names") << "\n\n";
  n = read_names(dir + "/empty.names");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().message(), dir + "/empty.names: names file is empty");
  std::ofstream(dir + "/two.names") << "cat\r\ndog \n";
  n = read_names(dir + "/two.names");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, (std::vector<std::string>{"cat", "dog"}));

  std::ofstream(dir + "/bad.ppm") << "P3\n2 2\n255\n";
  auto img = tools::load_image(dir + "/bad.ppm");
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.status().message(), dir + "/bad.ppm: not a binary PPM (P6) image");
  std::ofstream(dir + "/short.ppm", std::ios::binary) << "P6\n4 4\n255\n" << std::string(10, 'x');
  img = tools::load_image(dir + "/short.ppm");
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.status().message(),
            dir + "/short.ppm: PPM data is truncated: 4x4x3 = 48 bytes of pixels expected, 10 present");
  std::ofstream(dir + "/deep.ppm", std::ios::binary) << "P6\n4 4\n65535\n";
  img = tools::load_image(dir + "/deep.ppm");
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.status().message(), dir + "/deep.ppm: PPM maxval 65535 is not supported (expected 255, 8-bit)");
  // A round trip keeps BGR pixels.
  tools::LoadedImage a;
  a.width = 3;
  a.height = 2;
  for (int i = 0; i < 18; ++i) a.pixels.push_back(uint8_t(i * 13));
  ASSERT_TRUE(tools::save_ppm(dir + "/rt.ppm", a).ok());
  auto b = tools::load_image(dir + "/rt.ppm");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->pixels, a.pixels);
}

}  // namespace
}  // namespace dlr
