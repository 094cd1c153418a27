// --names with a Darknet .data file (tools/common/class_names.h), and the
// progress line and summary percentiles (tools/common/progress.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/common/test_paths.h"
#include "tools/common/class_names.h"
#include "tools/common/progress.h"

namespace dlr::tools {
namespace {
namespace fs = std::filesystem;

TEST(ClassNames, DataFileNamesKeyRelativeToCwdOrTheDataFile) {
  const std::string d = test::temp_dir() + "/names_data";
  fs::create_directories(d + "/data");
  std::ofstream(d + "/data/obj.names") << "cat\ndog\n";
  std::ofstream(d + "/obj.data") << "# comment\nclasses= 2\ntrain  = data/train.txt\n names = data/obj.names\r\nbackup = backup/\n";
  auto n = read_class_names(d + "/obj.data");  // "data/obj.names" is not under the cwd: found beside obj.data
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n, (std::vector<std::string>{"cat", "dog"}));
  // An absolute names= path is used as is.
  std::ofstream(d + "/abs.data") << "names=" << d << "/data/obj.names\n";
  auto a = read_class_names(d + "/abs.data");
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->size(), 2u);
  // A plain names file is still one name per line.
  auto plain = read_class_names(d + "/data/obj.names");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, (std::vector<std::string>{"cat", "dog"}));
}

TEST(ClassNames, DataFileErrorsNameFileAndLine) {
  const std::string d = test::temp_dir() + "/names_bad";
  fs::create_directories(d);
  std::ofstream(d + "/nonames.data") << "classes=2\n";
  auto r = read_class_names(d + "/nonames.data");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nonames.data: no names= line"), std::string::npos) << r.status().message();
  std::ofstream(d + "/garbage.data") << "classes=2\nthis is not a key\n";
  r = read_class_names(d + "/garbage.data");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("garbage.data:2: expected key=value"), std::string::npos);
  std::ofstream(d + "/missing.data") << "names=no/such.names\n";
  r = read_class_names(d + "/missing.data");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no/such.names"), std::string::npos);
  EXPECT_NE(r.status().message().find("missing.data"), std::string::npos);
  EXPECT_FALSE(read_class_names(d + "/absent.data").ok());
}

TEST(Progress, LineWithTotalShowsBarRateAndEta) {
  EXPECT_EQ(progress_line(25, 100, 5.0, 10), "[##........] 25/100  5.0 frames/s  ETA 0:15");
  EXPECT_EQ(progress_line(0, 100, 0.0, 4), "[....] 0/100  0.0 frames/s  ETA --:--");
  EXPECT_EQ(progress_line(100, 100, 10.0, 4), "[####] 100/100  10.0 frames/s  ETA 0:00");
  EXPECT_EQ(progress_line(1, 10000, 1.0, 4), "[....] 1/10000  1.0 frames/s  ETA 2:46:39");
  EXPECT_EQ(progress_line(30, -1, 2.0), "30 frames  15.0 frames/s");
}

TEST(Progress, NearestRankPercentiles) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(percentile(v, 50), 50);
  EXPECT_EQ(percentile(v, 90), 90);
  EXPECT_EQ(percentile(v, 99), 99);
  EXPECT_EQ(percentile({3.0}, 99), 3.0);
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_GT(peak_host_rss_bytes(), 0);
}

TEST(Progress, SummaryNamesEveryFigure) {
  RunSummary s;
  s.inputs = 2;
  s.frames = 10;
  s.inferences = 5;
  s.batch = 2;
  s.wall_s = 2.0;
  s.latency_ms = {10, 20, 30, 40, 50};
  s.peak_rss_bytes = 100 << 20;
  s.device = "cpu";
  s.device_bytes = 8 << 20;
  s.weight_bytes = 4 << 20;
  const std::string t = summary_text(s);
  EXPECT_NE(t.find("2 inputs, 10 frames, 5 inferences (batch 2) in 2.00 s: 5.00 frames/s"), std::string::npos) << t;
  EXPECT_NE(t.find("p50 30.00 ms, p90 50.00 ms, p99 50.00 ms (5 runs)"), std::string::npos) << t;
  EXPECT_NE(t.find("peak host RSS 100.0 MiB; cpu memory held by the engine 8.0 MiB (weights 4.0 MiB)"),
            std::string::npos)
      << t;
  EXPECT_EQ(t.find("cudaMemGetInfo"), std::string::npos) << "not measured on the CPU";
  s.device_used_bytes = 300 << 20;
  EXPECT_NE(summary_text(s).find("(cudaMemGetInfo) 300.0 MiB"), std::string::npos);
}

}  // namespace
}  // namespace dlr::tools
