// dlbench --detect N on the CPU: every row also times N whole detections of --batch
// 8-bit images (Session::detect_batch), and the JSON and the table carry them; the parts
// add up to no more than the whole; without the flag, no detect record.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/test_paths.h"
#include "tests/e2e/json_file.h"
#include "tests/e2e/tool_runner.h"

namespace dlr {
namespace {

using test::read_json;
using test::run_tool;

TEST(DlbenchDetect, WholeDetectionsTimedWithTheirParts) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  const std::string weights = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  if (cfg.empty() || weights.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string dir = test::temp_dir();
  for (int detect : {3, 0}) {
    const std::string json = dir + "/detect_" + std::to_string(detect) + ".json";
    const auto r = run_tool("dlbench " + cfg + " --weights " + weights + " --device cpu --size 160 --threads 1" +
                            " --batch 2 --iters 2 --warmup 0 --detect " + std::to_string(detect) + " --json " + json);
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json j = read_json(json);
    ASSERT_FALSE(j.is_discarded());
    ASSERT_EQ(j["results"].size(), 1u);
    const nlohmann::json& row = j["results"][0];
    if (detect == 0) {
      EXPECT_FALSE(row.contains("detect")) << row.dump();
      EXPECT_EQ(r.out.find("\n  detect: "), std::string::npos) << r.out;
      continue;
    }
    ASSERT_TRUE(row.contains("detect")) << row.dump();
    const nlohmann::json& d = row["detect"];
    EXPECT_EQ(d["iters"].get<int>(), detect);
    EXPECT_EQ(d["images"].get<std::string>(), "2 x 640x480 u8");
    const double whole = d["end_to_end"]["median_ms"].get<double>();
    const double parts = d["preprocess_median_ms"].get<double>() + d["network_median_ms"].get<double>() +
                         d["postprocess_median_ms"].get<double>();
    EXPECT_GT(d["network_median_ms"].get<double>(), 0.0) << d.dump();
    EXPECT_GT(d["preprocess_median_ms"].get<double>(), 0.0) << d.dump();
    EXPECT_LE(parts, whole * 1.5 + 1.0) << d.dump();  // medians of parts against the median whole
    EXPECT_GT(d["images_per_s"].get<double>(), 0.0) << d.dump();
    EXPECT_NEAR(d["images_per_s"].get<double>(), 2000.0 / whole, 1e-6 * d["images_per_s"].get<double>() + 1e-9);
    EXPECT_NE(r.out.find("\n  detect: "), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace dlr
