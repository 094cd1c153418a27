// Host-side fault injection (runtime/core/fault_injection.h): every host
// allocation and file operation on the way through Session::open and
// load_image is made to fail in turn; each gives a one-line error naming the
// site, and the next attempt works (nothing is left half-open).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "runtime/core/fault_injection.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/fault_site.h"
#include "tests/common/test_paths.h"
#include "tools/common/tool_support.h"

namespace dlr {
namespace {

std::string site_of(const std::string& message) { return test::fault_site_of(message); }
using Disarm = test::DisarmFaults;

TEST(FaultInjection, EverySiteOfSessionOpenFailsCleanly) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  Disarm disarm;
  std::map<std::string, int> seen;
  int n = 1;
  for (; n < 100; ++n) {
    fault::arm(n);
    auto s = Session::open(cfg, weights);
    if (fault::count() < n) {  // fewer sites than n: this open ran without a fault
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      break;
    }
    ASSERT_FALSE(s.ok()) << "fault " << n << " was not reported";
    const std::string& m = s.status().message();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    const std::string site = site_of(m);
    EXPECT_FALSE(site.empty()) << "fault " << n << ": " << m;
    ++seen[site];
  }
  fault::disarm();
  // cfg read, weights open and mmap, the weight store and the activation arena.
  EXPECT_EQ(seen, (std::map<std::string, int>{{"file_read", 1}, {"host_alloc", 2}, {"weights_mmap", 1},
                                              {"weights_open", 1}}));
  auto s = Session::open(cfg, weights);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  tools::LoadedImage img;
  img.width = img.height = 32;
  img.pixels.assign(32 * 32 * 3, 90);
  EXPECT_TRUE((*s)->detect(img.view()).ok());
}

TEST(FaultInjection, ImageReadFailsCleanly) {
  const std::string path = test::temp_dir() + "/fault.ppm";
  tools::LoadedImage img;
  img.width = img.height = 2;
  img.pixels.assign(12, 7);
  ASSERT_TRUE(tools::save_ppm(path, img).ok());
  Disarm disarm;
  fault::arm(1);
  auto r = tools::load_image(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ": cannot read: Input/output error [fault injected at file_read]");
  fault::disarm();
  EXPECT_TRUE(tools::load_image(path).ok());
}

}  // namespace
}  // namespace dlr
