// dlrun outputs end to end: Darknet's -out JSON (--darknet-json), COCO results
// (--coco-json), YOLO labels (--save-labels, --labels-dir) cross-checked against
// --json on real yolo-fastest detections of dog.jpg; --names with a .data file;
// --version; defaults in --help; --out without an extension (was an uncaught
// cv::Exception, exit 134) is a one-line error.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"
#include "tools/common/tool_support.h"
#include "tools/common/video.h"

namespace dlr {
namespace {
namespace fs = std::filesystem;
using test::count_lines;
using test::run_tool;

std::string fresh_dir(const std::string& name) {
  const std::string d = test::temp_dir() + "/dlrun_out_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(DlrunOutputs, DarknetCocoAndLabelFilesAgreeWithJson) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  DLR_REQUIRE_FILE(dog, "images/dog.jpg");
  if (!tools::have_opencv()) GTEST_SKIP() << "needs OpenCV to decode dog.jpg";
  const std::string d = fresh_dir("formats");
  // The image under a COCO-style name, so the COCO image id is its number.
  const std::string img = d + "/COCO_val2014_000000000042.jpg";
  fs::copy_file(dog, img);
  auto r = run_tool("dlrun " + cfg + " " + weights + " " + img + " --json --darknet-json " + d +
                    "/result.json --coco-json " + d + "/coco.json --save-labels --labels-dir " + d);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto mine = nlohmann::json::parse(r.out);
  const auto dets = mine["detections"];
  ASSERT_GE(dets.size(), 2u) << r.out;

  const auto dk = nlohmann::json::parse(std::ifstream(d + "/result.json"));
  ASSERT_TRUE(dk.is_array());
  ASSERT_EQ(dk.size(), 1u);
  EXPECT_EQ(dk[0]["frame_id"], 1);
  EXPECT_EQ(dk[0]["filename"], img);
  const auto& objects = dk[0]["objects"];
  ASSERT_EQ(objects.size(), dets.size()) << "one object per class above thresh (here one per box)";
  bool dog_seen = false;
  for (const auto& o : objects) {
    bool matched = false;
    for (const auto& m : dets) {
      if (m["id"] != o["class_id"]) continue;
      if (std::fabs(m["relative"]["x"].get<double>() - o["relative_coordinates"]["center_x"].get<double>()) > 1e-6)
        continue;
      matched = true;
      EXPECT_EQ(m["class"], o["name"]);
      EXPECT_NEAR(m["relative"]["y"].get<double>(), o["relative_coordinates"]["center_y"].get<double>(), 1e-6);
      EXPECT_NEAR(m["relative"]["w"].get<double>(), o["relative_coordinates"]["width"].get<double>(), 1e-6);
      EXPECT_NEAR(m["relative"]["h"].get<double>(), o["relative_coordinates"]["height"].get<double>(), 1e-6);
      EXPECT_NEAR(m["prob"].get<double>(), o["confidence"].get<double>(), 1e-6);
    }
    EXPECT_TRUE(matched) << o.dump();
    if (o["name"] == "dog") dog_seen = true;
  }
  EXPECT_TRUE(dog_seen);

  const auto coco = nlohmann::json::parse(std::ifstream(d + "/coco.json"));
  ASSERT_EQ(coco.size(), dets.size());
  for (const auto& c : coco) {
    EXPECT_EQ(c["image_id"], 42);
    const auto& b = c["bbox"];
    EXPECT_GE(b[0].get<double>(), 0.0);
    EXPECT_GE(b[1].get<double>(), 0.0);
    EXPECT_LE(b[0].get<double>() + b[2].get<double>(), 768.0 + 1e-3);
    EXPECT_LE(b[1].get<double>() + b[3].get<double>(), 576.0 + 1e-3);
  }
  bool coco_dog = false;  // dog is Darknet class 16, COCO category 18; its box inside the image needs no clamping
  for (const auto& m : dets) {
    if (m["class"] != "dog") continue;
    for (const auto& c : coco) {
      if (c["category_id"] != 18) continue;
      coco_dog = true;
      EXPECT_NEAR(c["bbox"][0].get<double>(), std::max(0.0, m["box"]["left"].get<double>()), 1e-3);
      EXPECT_NEAR(c["bbox"][1].get<double>(), std::max(0.0, m["box"]["top"].get<double>()), 1e-3);
      EXPECT_NEAR(c["score"].get<double>(), m["prob"].get<double>(), 1e-6);
    }
  }
  EXPECT_TRUE(coco_dog) << coco.dump();

  std::ifstream labels(d + "/COCO_val2014_000000000042.txt");
  ASSERT_TRUE(labels.good());
  int lines = 0, dog_lines = 0;
  for (std::string line; std::getline(labels, line); ++lines) {
    std::istringstream ls(line);
    int cls;
    double cx, cy, w, h;
    ASSERT_TRUE(ls >> cls >> cx >> cy >> w >> h) << line;
    if (cls != 16) continue;
    ++dog_lines;
    for (const auto& m : dets) {
      if (m["class"] == "dog") {
        EXPECT_NEAR(cx, m["relative"]["x"].get<double>(), 0.00005 + 1e-9);
        EXPECT_NEAR(w, m["relative"]["w"].get<double>(), 0.00005 + 1e-9);
      }
    }
  }
  EXPECT_EQ(lines, int(dets.size()));
  EXPECT_EQ(dog_lines, 1);
}

TEST(DlrunOutputs, NamesFromADataFile) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  DLR_REQUIRE_FILE(dog, "images/dog.jpg");
  if (!tools::have_opencv()) GTEST_SKIP() << "needs OpenCV to decode dog.jpg";
  const std::string d = fresh_dir("data");
  fs::create_directories(d + "/data");
  {
    std::ofstream names(d + "/data/renamed.names");
    for (int i = 0; i < 80; ++i) names << (i == 16 ? "hound" : "class" + std::to_string(i)) << "\n";
  }
  std::ofstream(d + "/coco.data") << "classes = 80\nnames = data/renamed.names\n";
  auto r = run_tool("dlrun " + cfg + " " + weights + " " + dog + " --names " + d + "/coco.data");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("hound: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("dog: "), std::string::npos) << r.out;
  std::ofstream(d + "/bad.data") << "classes = 80\n";
  r = run_tool("dlrun " + cfg + " " + weights + " " + dog + " --names " + d + "/bad.data");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("bad.data: no names= line"), std::string::npos) << r.err;
}

// A model whose cfg has classes != 80, run without --names: no COCO name, the class
// index instead ("class 2: 40%" in text, "2" in JSON), and one warning on stderr.
TEST(DlrunOutputs, ClassesWithoutNamesAreLabelledByIndex) {
  const std::string d = fresh_dir("three_classes");
  std::ifstream in(test::source_file("models/yolov4-tiny.cfg"));
  std::string cfg_text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  using Edit = std::pair<std::string, std::string>;
  for (const auto& [from, to] : {Edit{"classes=80", "classes=3"}, Edit{"filters=255", "filters=24"}})
    for (size_t p = cfg_text.find(from); p != std::string::npos; p = cfg_text.find(from, p))
      cfg_text.replace(p, from.size(), to);
  const std::string cfg = d + "/three.cfg";
  std::ofstream(cfg) << cfg_text;
  const std::string w = test::synthetic_weights(cfg);
  ASSERT_FALSE(w.empty());
  tools::LoadedImage img;
  img.width = 96;
  img.height = 80;
  img.pixels = test::noise_pixels(96, 80, 5);
  ASSERT_TRUE(tools::save_ppm(d + "/noise.ppm", img).ok());
  const std::string run =
      "dlrun " + cfg + " " + w + " " + d + "/noise.ppm " + d + "/noise.ppm --width 160 --height 160 --thresh 0.02 ";
  auto r = run_tool(run);
  ASSERT_EQ(r.code, 0) << r.err;
  int labelled = 0;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);) {
    if (l.find("Predicted in") != std::string::npos) continue;
    EXPECT_EQ(l.rfind("class ", 0), 0u) << l;
    ++labelled;
  }
  EXPECT_GT(labelled, 0) << "the check needs detections: " << r.out;
  EXPECT_EQ(test::count_of(r.err, "classes are labelled by index"), 1) << r.err;
  EXPECT_NE(r.err.find("has 3 classes and no names were given"), std::string::npos) << r.err;

  r = run_tool(run + "--json --darknet-json " + d + "/dn.json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  ASSERT_FALSE(j["detections"].empty()) << j;
  for (const auto& det : j["detections"]) {
    const std::string c = det["class"].get<std::string>();
    EXPECT_TRUE(c == "0" || c == "1" || c == "2") << det;
  }
  for (const auto& o : nlohmann::json::parse(std::ifstream(d + "/dn.json"))[0]["objects"])
    EXPECT_EQ(o["name"].get<std::string>(), std::to_string(o["class_id"].get<int>())) << o;
}

TEST(DlrunOutputs, OutWithoutExtensionIsAOneLineError) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string w = test::synthetic_weights(cfg);
  const std::string d = fresh_dir("noext");
  tools::LoadedImage img;
  img.width = 64;
  img.height = 48;
  img.pixels.assign(size_t(64) * 48 * 3, 90);
  ASSERT_TRUE(tools::save_ppm(d + "/gray.ppm", img).ok());
  auto r = run_tool("dlrun " + cfg + " " + w + " " + d + "/gray.ppm --width 128 --height 128 --out " + d + "/noext");
  EXPECT_EQ(r.code, 1) << "was 134: an uncaught cv::Exception";
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(d + "/noext: cannot write an image with this name"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "checked before any work";
  r = run_tool("dlrun " + cfg + " " + w + " " + d + "/gray.ppm --width 128 --height 128 --out " + d + "/a.png");
  if (tools::have_opencv()) {
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(fs::exists(d + "/a.png"));
  }
}

// Every output flag creates the folders it needs before any work; --out FOLDER/ keeps
// the source file names; --out and --save-labels refuse a video input up front.
TEST(DlrunOutputs, OutputFoldersAndSourceNames) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string w = test::synthetic_weights(cfg);
  const std::string d = fresh_dir("folders");
  fs::create_directories(d + "/src");
  tools::LoadedImage img;
  img.width = 64;
  img.height = 48;
  img.pixels.assign(size_t(64) * 48 * 3, 90);
  ASSERT_TRUE(tools::save_ppm(d + "/src/a.ppm", img).ok());
  ASSERT_TRUE(tools::save_ppm(d + "/src/b.ppm", img).ok());
  const std::string run =
      "dlrun " + cfg + " " + w + " --width 128 --height 128 " + d + "/src/a.ppm " + d + "/src/b.ppm ";
  auto r = run_tool(run + "--darknet-json " + d + "/j/x.json --save-labels --labels-dir " + d + "/labels/new --out " +
                    d + "/nodir/deep/ann.png");
  if (!tools::have_opencv()) GTEST_SKIP() << "--out needs OpenCV";
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f :
       {"/j/x.json", "/labels/new/a.txt", "/labels/new/b.txt", "/nodir/deep/ann.png", "/nodir/deep/ann_1.png"})
    EXPECT_TRUE(fs::is_regular_file(d + f)) << f;

  r = run_tool(run + d + "/src/a.ppm --out " + d + "/o/");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"/o/a.ppm", "/o/b.ppm", "/o/a_1.ppm"}) EXPECT_TRUE(fs::is_regular_file(d + f)) << f;
  EXPECT_EQ(std::distance(fs::directory_iterator(d + "/o"), fs::directory_iterator()), 3);

  std::ofstream(d + "/plain") << "a file";
  r = run_tool(run + "--out-video " + d + "/plain/v.avi");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.find("dlrun: --out-video " + d + "/plain/v.avi: cannot create the folder " + d + "/plain"), 0u)
      << r.err;
  EXPECT_EQ(r.out, "") << "refused before any work";

  const std::string clip = d + "/clip.avi";
  {
    auto v = tools::VideoWriter::open(clip, 64, 48, 5);
    ASSERT_TRUE(v.ok()) << v.status().to_string();
    ASSERT_TRUE((*v)->write(img).ok());
    ASSERT_TRUE((*v)->close().ok());
  }
  for (const std::string& flag : {std::string("--out ") + d + "/x.jpg", std::string("--save-labels")}) {
    r = run_tool("dlrun " + cfg + " " + w + " --width 128 --height 128 " + d + "/src/a.ppm " + clip + " " + flag);
    EXPECT_EQ(r.code, 1) << flag;
    EXPECT_EQ(count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("image inputs only, and " + clip + " is a video"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "refused before any work";
  }
}

TEST(DlrunOutputs, VersionAndHelpDefaults) {
  auto r = run_tool("dlrun --version");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("dlrun 0.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("(git "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nCUDA: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nOpenCV: "), std::string::npos) << r.out;
  if (fs::exists(test::source_file(".git"))) {
    EXPECT_EQ(r.out.find("(git unknown)"), std::string::npos) << "built from a git checkout: " << r.out;
  }
  r = run_tool("dlrun --help");
  ASSERT_EQ(r.code, 0);
  // Every default is shown (CLI11 prints "=VALUE"), the CPU as the default device.
  for (const char* s : {"--device TEXT:{cpu,cuda}=cpu", "--thresh FLOAT:FLOAT in [0 - 0.9999]=0.25",
                        "--nms FLOAT:FLOAT in [0.01 - 1]=0.45", "--batch INT:INT in [1 - 64]=1",
                        "--weight-budget TEXT=min", "--copy-profile TEXT=auto", "--progress TEXT:{auto,always,never}=auto",
                        "--precision TEXT:{fp32,tf32,fp16}=fp32", "--mode TEXT:{preload,stream}=preload",
                        "--darknet-json", "--coco-json", "--save-labels", "--camera", "--version", "CPU (the default"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

}  // namespace
}  // namespace dlr
