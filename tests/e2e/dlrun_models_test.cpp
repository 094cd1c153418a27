// dlrun --model (several models on one runtime, CPU): each model's detections in the
// tagged text, the --json "models" array and the per-model result files equal those of
// a separate single-model dlrun run on the same images; a repeated cfg gets "#2"; usage
// errors and a runtime budget the models cannot fit are one-line errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"
#include "tools/common/tool_support.h"

namespace dlr {
namespace {
namespace fs = std::filesystem;
using test::count_lines;
using test::run_tool;

// The two models (real yolo-fastest, synthetic yolov4-tiny at 128) and two images;
// empty when the shared data is absent.
struct TwoModels {
  std::string fastest_cfg, fastest_weights, tiny_cfg, tiny_weights, images;
  std::string fastest() const { return fastest_cfg + ":" + fastest_weights; }
  std::string tiny() const { return tiny_cfg + ":" + tiny_weights + "@128"; }
};

TwoModels two_models() {
  TwoModels s;
  s.fastest_cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  s.fastest_weights = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  const std::string dog = test::required_shared_file("images/dog.jpg");
  const std::string kite = test::required_shared_file("images/kite.jpg");
  if (s.fastest_cfg.empty() || s.fastest_weights.empty() || dog.empty() || kite.empty()) return TwoModels();
  s.tiny_cfg = test::source_file("models/yolov4-tiny.cfg");
  s.tiny_weights = test::synthetic_weights(s.tiny_cfg);
  s.images = dog + " " + kite;
  return s;
}

#define DLR_REQUIRE_MODELS(s)                                                       \
  const TwoModels s = two_models();                                                          \
  if (s.images.empty()) GTEST_SKIP() << "../shared is not available";              \
  if (!tools::have_opencv()) GTEST_SKIP() << "needs OpenCV to decode the images"; \
  ASSERT_FALSE(s.tiny_weights.empty())

// The text lines of one model: those starting with "[tag] " (tag "": every line),
// the tag and the timing of the "Predicted in" lines taken out.
std::vector<std::string> model_lines(const std::string& out, const std::string& tag) {
  const std::string prefix = tag.empty() ? "" : "[" + tag + "] ";
  const std::regex timing("Predicted in [0-9.]+ milli-seconds\\.");
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, prefix.size(), prefix) == 0)
      lines.push_back(std::regex_replace(line.substr(prefix.size()), timing, "Predicted"));
  return lines;
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> frames;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) frames.push_back(nlohmann::json::parse(line));
  return frames;
}

// dlrun with both models, and each alone (tiny at its @128), with the same options.
struct ThreeRuns {
  test::ToolResult both, fastest, tiny;
};

ThreeRuns run_three(const TwoModels& s, const std::string& opts) {
  ThreeRuns r;
  r.both = run_tool("dlrun --model " + s.fastest() + " --model " + s.tiny() + " " + s.images + opts);
  r.fastest = run_tool("dlrun " + s.fastest_cfg + " " + s.fastest_weights + " " + s.images + opts);
  r.tiny = run_tool("dlrun " + s.tiny_cfg + " " + s.tiny_weights + " " + s.images + opts + " --width 128 --height 128");
  return r;
}

TEST(DlrunModels, TextTaggedPerModelEqualsSeparateRuns) {
  DLR_REQUIRE_MODELS(s);
  const auto [both, fastest, tiny] = run_three(s, " --thresh 0.1 --ext-output --threads 1");
  ASSERT_EQ(both.code, 0) << both.err;
  ASSERT_EQ(fastest.code, 0) << fastest.err;
  ASSERT_EQ(tiny.code, 0) << tiny.err;
  // Every line is tagged by one of the two models.
  EXPECT_EQ(model_lines(both.out, "yolo-fastest-1.1").size() + model_lines(both.out, "yolov4-tiny@128").size(),
            size_t(count_lines(both.out)))
      << both.out;
  const auto f = model_lines(fastest.out, "");
  const auto t = model_lines(tiny.out, "");
  EXPECT_GT(f.size(), 4u) << "two Predicted lines and detections";
  EXPECT_GT(t.size(), 4u) << "two Predicted lines and detections";
  EXPECT_EQ(model_lines(both.out, "yolo-fastest-1.1"), f);
  EXPECT_EQ(model_lines(both.out, "yolov4-tiny@128"), t);
}

// --weights-from storage on the runtime: each model's prepared file made on first use in
// the cache (a temporary DLR_CACHE_DIR here), read each inference; the tagged lines equal
// the separate runs with the weights in memory.
TEST(DlrunModels, FromStorageEqualsSeparateRunsFromMemory) {
  DLR_REQUIRE_MODELS(s);
  const std::string opts = " --thresh 0.1 --ext-output --threads 1";
  const auto [both, fastest, tiny] = run_three(s, opts);
  ASSERT_EQ(fastest.code, 0) << fastest.err;
  ASSERT_EQ(tiny.code, 0) << tiny.err;
  const std::string cache = test::temp_dir() + "/models-storage-cache";
  const auto disk = test::run_shell("DLR_CACHE_DIR=" + cache + " " + std::string(DLR_TOOLS_DIR) + "/dlrun --model " +
                                    s.fastest() + " --model " + s.tiny() + " " + s.images + opts +
                                    " --weights-from storage");
  ASSERT_EQ(disk.code, 0) << disk.err;
  EXPECT_EQ(model_lines(disk.out, "yolo-fastest-1.1"), model_lines(fastest.out, ""));
  EXPECT_EQ(model_lines(disk.out, "yolov4-tiny@128"), model_lines(tiny.out, ""));
  int prepared = 0;
  for (const auto& e : fs::recursive_directory_iterator(cache)) prepared += e.path().extension() == ".dlrw";
  EXPECT_EQ(prepared, 2) << "one prepared file per model in the cache";
}

TEST(DlrunModels, JsonModelsArrayEqualsSeparateRuns) {
  DLR_REQUIRE_MODELS(s);
  const auto [both, fastest, tiny] = run_three(s, " --thresh 0.1 --json --threads 1");
  ASSERT_EQ(both.code, 0) << both.err;
  ASSERT_EQ(fastest.code, 0) << fastest.err;
  ASSERT_EQ(tiny.code, 0) << tiny.err;
  const auto b = json_lines(both.out), f = json_lines(fastest.out), t = json_lines(tiny.out);
  ASSERT_EQ(b.size(), 2u) << both.out;
  ASSERT_EQ(f.size(), 2u);
  ASSERT_EQ(t.size(), 2u);
  size_t tiny_dets = 0;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_FALSE(f[i].contains("models")) << "the single-model format is unchanged";
    EXPECT_EQ(b[i]["image"], f[i]["image"]);
    EXPECT_EQ(b[i]["width"], f[i]["width"]);
    EXPECT_EQ(b[i]["height"], f[i]["height"]);
    EXPECT_FALSE(b[i].contains("detections"));
    const auto& models = b[i]["models"];
    ASSERT_EQ(models.size(), 2u) << b[i].dump();
    EXPECT_EQ(models[0]["model"], "yolo-fastest-1.1");
    EXPECT_EQ(models[1]["model"], "yolov4-tiny@128");
    EXPECT_GT(models[0]["infer_ms"].get<double>(), 0.0);
    EXPECT_EQ(models[0]["detections"], f[i]["detections"]);
    EXPECT_EQ(models[1]["detections"], t[i]["detections"]);
    EXPECT_FALSE(f[i]["detections"].empty());
    tiny_dets += t[i]["detections"].size();
  }
  EXPECT_GT(tiny_dets, 0u);
}

TEST(DlrunModels, ResultFilesPerModelEqualSeparateRuns) {
  DLR_REQUIRE_MODELS(s);
  const std::string d = test::temp_dir() + "/dlrun_models_files";
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string files = " --coco-json " + d + "/coco.json --darknet-json " + d + "/dk.json --out " + d + "/out.jpg";
  const auto both =
      run_tool("dlrun --model " + s.fastest() + " --model " + s.tiny() + " " + s.images + " --thresh 0.1" + files);
  ASSERT_EQ(both.code, 0) << both.err;
  for (const std::string name : {"yolo-fastest-1.1", "yolov4-tiny@128"}) {
    EXPECT_TRUE(fs::exists(d + "/out_" + name + ".jpg")) << name;
    EXPECT_TRUE(fs::exists(d + "/out_" + name + "_1.jpg")) << name;
  }
  EXPECT_FALSE(fs::exists(d + "/coco.json")) << "no untagged file with --model";
  const std::string single = d + "/single";
  fs::create_directories(single);
  const auto fastest = run_tool("dlrun " + s.fastest_cfg + " " + s.fastest_weights + " " + s.images +
                                " --thresh 0.1 --coco-json " + single + "/coco.json --darknet-json " + single +
                                "/dk.json");
  ASSERT_EQ(fastest.code, 0) << fastest.err;
  EXPECT_EQ(test::read_bytes(d + "/coco_yolo-fastest-1.1.json"), test::read_bytes(single + "/coco.json"));
  EXPECT_EQ(test::read_bytes(d + "/dk_yolo-fastest-1.1.json"), test::read_bytes(single + "/dk.json"));
  EXPECT_GT(nlohmann::json::parse(test::read_bytes(d + "/coco_yolov4-tiny@128.json")).size(), 0u);
}

TEST(DlrunModels, ARepeatedCfgGetsANumber) {
  DLR_REQUIRE_MODELS(s);
  const auto r = run_tool("dlrun --model " + s.fastest() + " --model " + s.fastest() + " " + s.images +
                          " --json --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const auto& frame : json_lines(r.out)) {
    ASSERT_EQ(frame["models"].size(), 2u);
    EXPECT_EQ(frame["models"][0]["model"], "yolo-fastest-1.1");
    EXPECT_EQ(frame["models"][1]["model"], "yolo-fastest-1.1#2");
    EXPECT_EQ(frame["models"][0]["detections"], frame["models"][1]["detections"]);
  }
}

TEST(DlrunModels, UsageErrorsAreOneLine) {
  DLR_REQUIRE_MODELS(s);
  const std::string both = " --model " + s.fastest() + " --model " + s.tiny() + " " + s.images;
  struct Case {
    std::string args, expect;
    int code;
  };
  const Case cases[] = {
      {s.fastest_cfg + " " + s.fastest_weights + " --model " + s.tiny() + " " + s.images,
       "--model replaces the positional CFG WEIGHTS", 2},
      {"--model " + s.fastest() + "@33 " + s.images, "--model " + s.fastest() + "@33: the size after @ must be", 2},
      {"--model " + s.fastest_cfg + " " + s.images, "--model " + s.fastest_cfg + ": no WEIGHTS", 2},
      {"--model :x.weights " + s.images, "--model \":x.weights\": expected CFG[:WEIGHTS][@SIZE]", 2},
      {both + " --runtime-budget lots", "--runtime-budget lots: expected all, NN% or a size", 2},
      {s.fastest_cfg + " " + s.fastest_weights + " " + s.images + " --runtime-budget 50%",
       "--runtime-budget needs --model", 2},
      {both + " --save-labels", "--save-labels is not supported with --model", 2},
      {both + " --report table", "--report is not supported with --model", 2},
      {both + " --weights-from storage --prepared x.dlrw", "--prepared is not supported with --model", 2},
      {both + " --weight-budget 8MiB", "--weight-budget is not used with --model (the runtime decides", 2},
      {both + " --no-calibrate", "--no-calibrate is not used with --model", 2},
      {both + " --latency-target 5", "--latency-target is not used with --model", 2},
      {both + " --runtime-budget 2MiB", "runtime budget 2MiB: ", 1},
      {both + " --runtime-budget 15%", "runtime budget \"15%\": a percentage is of the device's memory, and the CPU "
                                       "backend has none",
       1},
      {"--model /nonexistent.cfg:x.weights " + s.images, "/nonexistent.cfg", 1},
  };
  for (const Case& c : cases) {
    const auto r = run_tool("dlrun " + c.args);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.args;
  }
  // On the GPU the runtime streams every model, so the flags of streaming apply to them
  // (they were refused as "--mode stream only" while --mode is refused with --model).
  const auto r = run_tool("dlrun --device cuda --stage-whole off" + both);
  EXPECT_EQ(r.err.find("applies to"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dlr
