// dlbench --period-ms on the CPU: the timed inferences begin one period apart (the run
// takes at least (iters - 1) periods), the JSON records the period, and from storage the
// gaps let the next inference's first reads land before it begins (read_ahead_mib),
// unless --prefetch-reads off; when the last read landed (reads_end_ms) lies within the
// inference's network time, before it when every read landed ahead.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/test_paths.h"
#include "tests/e2e/json_file.h"
#include "tests/e2e/tool_runner.h"

namespace dlr {
namespace {

using test::read_json;
using test::run_tool;

TEST(DlbenchPeriod, FramesBeginAPeriodApartAndStorageReadsAheadInTheGaps) {
  const std::string cfg = test::required_shared_file("models/yolov4-tiny.cfg");
  if (cfg.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string dir = test::temp_dir();
  const int period_ms = 300, iters = 3;
  for (const char* prefetch : {"on", "off"}) {
    const std::string json = dir + "/period_" + prefetch + ".json";
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_tool("dlbench " + cfg + " --synthetic --device cpu --size 160 --threads 1 --weights-from storage" +
                            " --prepared " + dir + "/tiny.dlrw --prefetch-reads " + prefetch + " --period-ms " +
                            std::to_string(period_ms) + " --iters " + std::to_string(iters) + " --warmup 0 --json " + json);
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_GE(wall_ms, (iters - 1) * period_ms) << prefetch;
    const nlohmann::json j = read_json(json);
    ASSERT_FALSE(j.is_discarded());
    ASSERT_EQ(j["results"].size(), 1u);
    const nlohmann::json& row = j["results"][0];
    EXPECT_EQ(row["period_ms"].get<double>(), double(period_ms));
    const nlohmann::json& s = row["storage"];
    const double ahead = s["read_ahead_mib"]["median"].get<double>();
    if (std::string(prefetch) == "on") {
      ASSERT_GT(s["read_ahead_units"].get<int>(), 0) << s.dump();
      EXPECT_GT(ahead, 0.0) << s.dump();
      EXPECT_NE(r.out.find("read ahead"), std::string::npos) << r.out;
    } else {
      EXPECT_EQ(s["read_ahead_units"].get<int>(), 0) << s.dump();
      EXPECT_EQ(ahead, 0.0) << s.dump();
      // Every read lands during its inference (the CPU reads each blob before its layer).
      const double end = s["reads_end_ms"]["median"].get<double>();
      EXPECT_GT(end, 0.0) << s.dump();
      EXPECT_LE(end, row["network"]["median_ms"].get<double>() + 1.0) << s.dump();
    }
    EXPECT_NE(r.out.find("last read landed at"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace dlr
