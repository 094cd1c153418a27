// The dlrun command line: output format, exit codes (0 ok, 1 error with one line
// on stderr, 2 usage), --json, and that our models/ cfg is the shared one; dlbench's
// --units errors and startup report.
#include <gtest/gtest.h>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"
#include "tools/common/tool_support.h"

namespace dlr {
namespace {

using Result = test::ToolResult;
using test::run_tool;
int lines(const std::string& s) { return test::count_lines(s); }

TEST(DlrunCli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_tool("dlrun").code, 2);
  EXPECT_EQ(run_tool("dlrun a.cfg b.weights img.jpg --thresh 7").code, 2);
  EXPECT_EQ(run_tool("dlrun a.cfg b.weights img.jpg --device tpu").code, 2);
  EXPECT_EQ(run_tool("dlrun --help").code, 0);
}

TEST(DlrunCli, MissingFilesAreOneLineErrors) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  Result r = run_tool("dlrun /nonexistent.cfg x.weights x.jpg");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("/nonexistent.cfg"), std::string::npos) << r.err;
  r = run_tool("dlrun " + cfg + " /nonexistent.weights x.jpg");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("/nonexistent.weights"), std::string::npos) << r.err;
}

TEST(DlrunCli, WeightsOfAnotherCfgAreRejected) {
  DLR_REQUIRE_FILE(fastest, "weights/yolo-fastest-1.1.weights");
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  Result r = run_tool("dlrun " + cfg + " " + fastest + " x.jpg");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("yolo-fastest-1.1.weights"), std::string::npos) << r.err;
}

TEST(DlrunCli, CudaWithoutBackendOrDeviceIsAClearError) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string w = test::synthetic_weights(cfg);
  const std::string ppm = test::temp_dir() + "/gray.ppm";
  tools::LoadedImage img;
  img.width = 64;
  img.height = 48;
  img.pixels.assign(size_t(64) * 48 * 3, 128);
  ASSERT_TRUE(tools::save_ppm(ppm, img).ok());
  Result r = run_tool("dlrun " + cfg + " " + w + " " + ppm + " --device cuda");
  if (r.code == 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;
}

TEST(DlrunCli, DarknetTextAndJsonOutput) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  DLR_REQUIRE_FILE(dog, "images/dog.jpg");
  if (!tools::have_opencv()) GTEST_SKIP() << "needs OpenCV to decode dog.jpg";
  Result r = run_tool("dlrun " + cfg + " " + weights + " " + dog + " --ext-output");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Predicted in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dog: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("%\t(left_x: "), std::string::npos) << r.out;
  r = run_tool("dlrun " + cfg + " " + weights + " " + dog + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["width"], 768);
  EXPECT_EQ(j["height"], 576);
  bool dog_found = false;
  for (const auto& d : j["detections"]) {
    EXPECT_TRUE(d.contains("box") && d.contains("relative") && d.contains("prob") && d.contains("id"));
    if (d["class"] == "dog") dog_found = true;
  }
  EXPECT_TRUE(dog_found) << r.out;
  const std::string out = test::temp_dir() + "/annotated.jpg";
  r = run_tool("dlrun " + cfg + " " + weights + " " + dog + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::ifstream(out).good());
}

TEST(DlbenchCli, BadUnitsAreOneLineErrorsBeforeAnyWork) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  Result r = run_tool("dlbench " + cfg + " --synthetic --mode stream --units search,bogus");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "dlbench: --units bogus: expected search, chunks or chunks:SIZE\n");
  EXPECT_EQ(r.out, "");
  for (const char* bad : {"chunks:", "chunks:lots", "chunks:min"}) {
    r = run_tool("dlbench " + cfg + " --synthetic --mode stream --units " + bad);
    EXPECT_EQ(r.code, 1) << bad;
    EXPECT_EQ(r.err, std::string("dlbench: --units ") + bad +
                         ": expected a chunk size after 'chunks:', e.g. chunks:16MiB\n");
  }
}

TEST(DlbenchCli, BadOptionValuesFailBeforeTheCfgIsRead) {
  // The cfg does not exist: each error must be the option's, not the file's.
  const std::string cfg = "/nonexistent/x.cfg";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--mode stream --weight-budget lots",
       "weight budget \"lots\": expected min, all, auto, a percentage (25%) or a size (64MiB, 1.5GB, bytes)"},
      {"--mode stream --weight-pool rung", "--weight-pool rung: expected auto, ring or slots"},
      {"--mode streem", "--mode streem: expected preload or stream"},
      {"--device gpu", "--device gpu: expected cuda or cpu"},
      {"--layout nhcw", "--layout nhcw: expected auto, nchw or nhwc"},
      {"--precision fp8", "--precision fp8: expected fp32, tf32 or fp16"},
      {"--mode stream --copy-profile h10",
       "copy profile 'h10' is neither auto, a file nor a built-in profile (discrete, h100, jetson-xavier; a file is a path "
       "with '/' or ending in .json)"},
      {"--batch 0", "batch 0 is out of range (1..64)"},
  };
  for (const auto& [args, message] : cases) {
    const Result r = run_tool("dlbench " + cfg + " --synthetic " + args);
    EXPECT_EQ(r.code, 1) << args;
    EXPECT_EQ(r.err, "dlbench: " + message + "\n") << args;
    EXPECT_EQ(r.out, "") << args;
  }
  // CUDA-only options with only the CPU: refused, not ignored.
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--device cpu --mode stream", "--mode applies to --device cuda only"},
           {"--device cpu --weight-budget 50%", "--weight-budget applies to --device cuda only"},
           {"--device cpu --residency none", "--residency applies to --device cuda only"},
           {"--device cpu --no-calibrate", "--no-calibrate applies to --device cuda only"},
           {"--device cpu --warm-threads 0,4", "--warm-threads applies to --device cuda only"},
           {"--warm-threads 0,65", "warm threads 65: expected 0 to 64"}}) {
    const Result r = run_tool("dlbench " + cfg + " --synthetic " + args);
    EXPECT_EQ(r.code, 1) << args;
    EXPECT_EQ(r.err, "dlbench: " + message + "\n") << args;
    EXPECT_EQ(r.out, "") << args;
  }
}

TEST(DlbenchCli, StartupReport) {
  EXPECT_EQ(run_tool("dlbench").code, 2);
  EXPECT_EQ(run_tool("dlbench").err, "dlbench: give a cfg (or --models, or --startup-floor)\n");
  // --startup-floor needs no cfg; without a CUDA backend (or a GPU) it is one line.
  Result r = run_tool("dlbench --startup-floor");
#ifndef DLR_HAVE_CUDA
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "dlbench: --startup-floor measures a CUDA open: this build has no CUDA backend\n");
#else
  if (r.code != 0) {
    EXPECT_EQ(r.code, 1);
    EXPECT_EQ(lines(r.err), 1) << r.err;
  } else {
    EXPECT_NE(r.out.find("startup floor ("), std::string::npos) << r.out;
  }
#endif
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  const std::string json = test::temp_dir() + "/startup.json";
  r = run_tool("dlbench " + cfg + " --weights " + weights + " --device cpu --size 160 --iters 1 --warmup 0 --json " +
               json);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("  startup: open "), std::string::npos) << r.out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  const nlohmann::json& s = j["results"][0]["startup"];
  for (const char* k : {"open_ms", "parse_ms", "compile_ms", "engine_ms", "first_inference_ms",
                        "open_to_first_result_ms", "process_age_at_first_result_ms"})
    EXPECT_GT(s.at(k).get<double>(), 0) << k;
  EXPECT_NEAR(s["open_to_first_result_ms"].get<double>(),
              s["open_ms"].get<double>() + s["first_inference_ms"].get<double>(), 1e-6);
  EXPECT_GE(s["process_age_at_first_result_ms"].get<double>() + 10, s["open_to_first_result_ms"].get<double>())
      << "the process is older than its open (10 ms: the start time's resolution)";
  // The CPU engine's phases only: the CUDA ones (convolution set-up, algorithm cache) are absent.
  for (const char* k : {"weights_ms", "buffers_ms"}) EXPECT_TRUE(s["engine"].contains(k)) << k;
  for (const char* k :
       {"conv_setup_ms", "conv_query_ms", "convs", "convs_cached", "convs_workspace_cached", "algo_cache"})
    EXPECT_FALSE(s["engine"].contains(k)) << k;
  EXPECT_FALSE(s.at("warmup_run").get<bool>()) << "the CPU engine has no warm-up";
  EXPECT_NE(r.out.find("warm-up 0.0 (none)"), std::string::npos) << r.out;
  // The warm-up switch is a CUDA option.
  r = run_tool("dlbench " + cfg + " --weights " + weights + " --device cpu --warm-up-at-open");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "dlbench: --warm-up-at-open applies to --device cuda only\n");
}

TEST(Models, BundledYolov4TinyCfgEqualsTheSharedOne) {
  DLR_REQUIRE_FILE(shared, "models/yolov4-tiny.cfg");
  auto a = parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  auto b = parse_network_cfg(shared);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  auto body = [](const std::string& s) { return s.substr(s.find('\n')); };  // the first line names the file
  EXPECT_EQ(body(network_summary(*a)), body(network_summary(*b)));
  ASSERT_EQ(a->layers.size(), b->layers.size());
  for (size_t i = 0; i < a->layers.size(); ++i) {
    EXPECT_EQ(a->layers[i].inputs, b->layers[i].inputs) << "layer " << i;
    EXPECT_EQ(a->layers[i].out, b->layers[i].out) << "layer " << i;
    EXPECT_EQ(a->layers[i].file_floats(), b->layers[i].file_floats()) << "layer " << i;
  }
}

}  // namespace
}  // namespace dlr
