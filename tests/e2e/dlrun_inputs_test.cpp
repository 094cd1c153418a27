// dlrun inputs end to end (CPU, yolov4-tiny at 160x160 with synthetic weights,
// so paths are tested, not accuracy): directories, quoted globs, @LIST, --list,
// "-", video files (an MJPG .avi made here with cv::VideoWriter), --out-video,
// --frames, --batch (same detections as batch 1), progress and summary on
// stderr only, --report to a file or stderr, and the one-line errors of an
// empty folder, a missing list, an unreadable video and a camera that does not open.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"
#include "tools/common/tool_support.h"

#ifdef DLR_HAVE_OPENCV
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#endif

namespace dlr {
namespace {
namespace fs = std::filesystem;
using test::count_lines;
using test::count_of;
using test::run_tool;

// A scene with a few bright rectangles so synthetic weights see some structure.
tools::LoadedImage scene(int w, int h, int seed) {
  tools::LoadedImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        img.pixels[(size_t(y) * w + x) * 3 + c] = uint8_t((x * (c + 1) + y * (seed + 2) + 31 * seed) % 256);
  return img;
}

// Darknet text output with the "Predicted in X milli-seconds." times blanked.
std::string without_times(std::string s) {
  const std::string key = "Predicted in ";
  for (size_t p = s.find(key); p != std::string::npos; p = s.find(key, p + key.size())) {
    const size_t e = s.find(' ', p + key.size());
    s.erase(p + key.size(), e - (p + key.size()));
  }
  return s;
}

class DlrunInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_ = test::source_file("models/yolov4-tiny.cfg");
    weights_ = test::synthetic_weights(cfg_);
    ASSERT_FALSE(weights_.empty());
    dir_ = test::temp_dir() + "/dlrun_inputs_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/imgs/sub");
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(tools::save_ppm(dir_ + "/imgs/img" + std::to_string(i) + ".ppm", scene(96 + 16 * i, 72, i)).ok());
    ASSERT_TRUE(tools::save_ppm(dir_ + "/imgs/sub/deep.ppm", scene(64, 64, 7)).ok());
  }
  // dlrun with the model and a small network size.
  std::string dlrun(const std::string& rest) const {
    return "dlrun " + cfg_ + " " + weights_ + " --width 160 --height 160 " + rest;
  }
  std::string cfg_, weights_, dir_;
};

TEST_F(DlrunInputs, DirectoryGlobListAndStdin) {
  auto r = run_tool(dlrun(dir_ + "/imgs"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "Predicted in"), 3) << r.out;
  EXPECT_NE(r.out.find(dir_ + "/imgs/img0.ppm: Predicted in"), std::string::npos);
  EXPECT_EQ(r.out.find("summary"), std::string::npos) << "the summary belongs on stderr";
  EXPECT_NE(r.err.find("summary: 3 inputs, 3 frames"), std::string::npos) << r.err;  // auto: more than one frame
  EXPECT_EQ(r.err.find("\r"), std::string::npos) << "no progress bar when stderr is not a terminal";

  r = run_tool(dlrun("--recursive " + dir_ + "/imgs --summary never"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "Predicted in"), 4);
  EXPECT_NE(r.out.find("sub/deep.ppm"), std::string::npos);
  EXPECT_EQ(r.err, "");

  r = run_tool(dlrun("'" + dir_ + "/imgs/img[12].ppm'"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "Predicted in"), 2);
  EXPECT_EQ(r.out.find("img0"), std::string::npos);

  std::ofstream(dir_ + "/list.txt") << dir_ << "/imgs/img2.ppm\r\n\n" << dir_ << "/imgs/img0.ppm\n";
  r = run_tool(dlrun("@" + dir_ + "/list.txt --list " + dir_ + "/list.txt"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "Predicted in"), 4);
  EXPECT_LT(r.out.find("img2.ppm"), r.out.find("img0.ppm")) << "list order kept";

  r = run_tool(dlrun("- < " + dir_ + "/list.txt"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "Predicted in"), 2);
}

TEST_F(DlrunInputs, BadInputsAreOneLineErrors) {
  fs::create_directories(dir_ + "/empty");
  auto r = run_tool(dlrun(dir_ + "/empty"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(dir_ + "/empty: no image files"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");

  r = run_tool(dlrun("@" + dir_ + "/missing.txt"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("missing.txt: cannot open the list file"), std::string::npos) << r.err;

  r = run_tool(dlrun("'" + dir_ + "/*.nothing'"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "dlrun: " + dir_ + "/*.nothing: no file matches\n");

  r = run_tool(dlrun(dir_ + "/imgs/nope.jpg"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("nope.jpg"), std::string::npos) << r.err;

  r = run_tool("dlrun " + cfg_ + " " + weights_);  // no input at all: a usage error
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no input"), std::string::npos) << r.err;

  if (!tools::have_opencv()) GTEST_SKIP() << "videos and cameras need OpenCV";
  std::ofstream(dir_ + "/broken.mp4") << "not a video at all";
  r = run_tool(dlrun(dir_ + "/broken.mp4"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("broken.mp4: cannot open the video"), std::string::npos) << r.err;

  r = run_tool(dlrun("--camera 63"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("camera 63: cannot open the camera"), std::string::npos) << r.err;
}

TEST_F(DlrunInputs, VideoFramesOutVideoAndFrameLimit) {
#ifndef DLR_HAVE_OPENCV
  GTEST_SKIP() << "needs OpenCV";
#else
  const std::string clip = dir_ + "/clip.avi";
  {
    cv::VideoWriter w(clip, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 12.0, cv::Size(128, 96), true);
    ASSERT_TRUE(w.isOpened());
    for (int i = 0; i < 4; ++i) {
      const tools::LoadedImage img = scene(128, 96, i);
      w.write(cv::Mat(96, 128, CV_8UC3, const_cast<uint8_t*>(img.pixels.data())).clone());
    }
  }
  const std::string out = dir_ + "/annotated.avi";
  auto r = run_tool(dlrun(clip + " --out-video " + out + " --json"));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(count_lines(r.out), 4) << r.out;
  for (int i = 0; i < 4; ++i) EXPECT_NE(r.out.find("\"image\":\"" + clip + "#" + std::to_string(i) + "\""),
                                        std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"frame\":3"), std::string::npos);
  EXPECT_NE(r.err.find("summary: 1 input, 4 frames"), std::string::npos) << r.err;
  cv::VideoCapture back(out);
  ASSERT_TRUE(back.isOpened());
  EXPECT_EQ(int(back.get(cv::CAP_PROP_FRAME_COUNT)), 4);
  EXPECT_NEAR(back.get(cv::CAP_PROP_FPS), 12.0, 0.01);
  cv::Mat f;
  ASSERT_TRUE(back.read(f));
  EXPECT_EQ(f.cols, 128);
  EXPECT_EQ(f.rows, 96);

  // Images and a video mixed, the frame limit across them.
  r = run_tool(dlrun(dir_ + "/imgs/img0.ppm " + clip + " --frames 3"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "Predicted in"), 3) << r.out;
  EXPECT_NE(r.out.find(clip + "#1: Predicted in"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(clip + "#2"), std::string::npos) << r.out;

  // One --out-video has the first frame's size: an image of another size is letterboxed into it.
  r = run_tool(dlrun(clip + " " + dir_ + "/imgs/img0.ppm --out-video " + dir_ + "/mixed.avi"));
  ASSERT_EQ(r.code, 0) << r.err;
  cv::VideoCapture mixed(dir_ + "/mixed.avi");
  ASSERT_TRUE(mixed.isOpened());
  EXPECT_EQ(int(mixed.get(cv::CAP_PROP_FRAME_COUNT)), 5);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(mixed.read(f)) << i;
    EXPECT_EQ(f.cols, 128);
    EXPECT_EQ(f.rows, 96);
  }
  r = run_tool(dlrun(clip + " --out-video " + dir_ + "/out.gif"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--out-video needs a .avi"), std::string::npos) << r.err;
#endif
}

TEST_F(DlrunInputs, BatchGivesTheSameDetectionsAsOneByOne) {
  const std::string imgs = dir_ + "/imgs/img0.ppm " + dir_ + "/imgs/img1.ppm " + dir_ + "/imgs/img2.ppm";
  auto one = run_tool(dlrun(imgs + " --json --thresh 0.05"));
  ASSERT_EQ(one.code, 0) << one.err;
  // two threads: each image of a batch is decoded on its own (Session::detect_batch)
  auto two = run_tool(dlrun(imgs + " --json --thresh 0.05 --batch 2 --threads 2"));
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_EQ(one.out, two.out);
  EXPECT_NE(two.err.find("3 frames, 2 inferences (batch 2)"), std::string::npos) << two.err;
  EXPECT_NE(one.err.find("3 frames, 3 inferences (batch 1)"), std::string::npos) << one.err;
  EXPECT_GT(count_of(one.out, "\"class\""), 0) << "the comparison needs some detections: " << one.out;
}

// --progress auto draws the bar when stderr is a terminal: run under script(1),
// which gives dlrun a pseudo-terminal and copies what it shows to our stdout.
TEST_F(DlrunInputs, ProgressBarOnATerminalOnly) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) not installed";
  const std::string cmd = std::string(DLR_TOOLS_DIR) + "/" + dlrun(dir_ + "/imgs");
  auto tty = test::run_shell("script -qec '" + cmd + " >/dev/null' /dev/null");
  ASSERT_EQ(tty.code, 0) << tty.out << tty.err;
  EXPECT_NE(tty.out.find("\r["), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("3/3"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("summary: 3 inputs"), std::string::npos) << tty.out;
  auto never = test::run_shell("script -qec '" + cmd + " --progress never >/dev/null' /dev/null");
  ASSERT_EQ(never.code, 0) << never.out << never.err;
  EXPECT_EQ(never.out.find("\r["), std::string::npos) << never.out;
  EXPECT_NE(never.out.find("summary: 3 inputs"), std::string::npos) << never.out;
}

// What a terminal shows of `raw`: each line as the '\r'-separated pieces leave it, a
// later piece overwriting an earlier one from column 0.
std::vector<std::string> terminal_lines(const std::string& raw) {
  std::vector<std::string> lines;
  std::istringstream in(raw);
  for (std::string line; std::getline(in, line);) {
    std::string shown;
    size_t start = 0;
    for (size_t cr = line.find('\r'); start <= line.size(); cr = line.find('\r', start)) {
      const std::string piece = line.substr(start, cr == std::string::npos ? std::string::npos : cr - start);
      shown.replace(0, std::min(shown.size(), piece.size()), piece);
      if (cr == std::string::npos) break;
      start = cr + 1;
    }
    lines.push_back(shown);
  }
  return lines;
}

// Detections (stdout) and the bar (stderr) on one terminal: every detection line is a
// line of its own, and the bar ends on the last line.
TEST_F(DlrunInputs, ProgressBarStaysOffTheDetectionLines) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) not installed";
  std::ofstream(dir_ + "/notimage.jpg") << "not an image";
  const std::string imgs = dir_ + "/imgs/img0.ppm " + dir_ + "/notimage.jpg " + dir_ + "/imgs/img1.ppm " + dir_ +
                           "/imgs/img2.ppm";
  const std::string cmd = std::string(DLR_TOOLS_DIR) + "/" + dlrun(imgs + " --threads 1");
  auto tty = test::run_shell("script -qec '" + cmd + "' /dev/null");
  ASSERT_EQ(tty.code, 1) << tty.out << tty.err;
  EXPECT_NE(tty.out.find("\r["), std::string::npos) << tty.out;
  int predicted = 0;
  for (const std::string& line : terminal_lines(tty.out)) {
    const bool bar = line.find("frames/s") != std::string::npos;
    const bool detection = line.find("Predicted in") != std::string::npos;
    const bool error = line.find("dlrun: ") != std::string::npos;
    predicted += line.find("Predicted in") != std::string::npos;
    EXPECT_FALSE(bar && (detection || error)) << "the bar ran into a line: " << line;
    if (!bar) {
      EXPECT_EQ(line.find('['), std::string::npos) << line;
    }
  }
  EXPECT_EQ(predicted, 3) << tty.out;
  EXPECT_NE(tty.out.find("4/4"), std::string::npos) << tty.out;
}

// One input that fails to read is reported on its own line; the run goes on with the
// next, and the exit code is 1. --frames counts the frames read; --json gets an
// {"image", "error"} line for the failed input; the summary counts it.
TEST_F(DlrunInputs, ABadImageDoesNotStopTheRun) {
  const std::string bad = dir_ + "/notimage.jpg";
  std::ofstream(bad) << "not an image";
  const std::string img0 = dir_ + "/imgs/img0.ppm", img1 = dir_ + "/imgs/img1.ppm", img2 = dir_ + "/imgs/img2.ppm";
  auto r = run_tool(dlrun(img0 + " " + bad + " " + img1 + " --summary never"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_of(r.out, "Predicted in"), 2) << r.out;
  EXPECT_NE(r.out.find(img1 + ": Predicted in"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.err), 2) << r.err;
  EXPECT_EQ(r.err.find("dlrun: " + bad + ": "), 0u) << r.err;
  EXPECT_NE(r.err.find("dlrun: 1 of 3 inputs failed (their errors above); exit code 1\n"), std::string::npos) << r.err;

  r = run_tool(dlrun(img0 + " " + bad + " " + img1 + " --json --summary always"));
  EXPECT_EQ(r.code, 1);
  ASSERT_EQ(count_lines(r.out), 3) << r.out;
  std::istringstream lines(r.out);
  std::vector<nlohmann::json> js;
  for (std::string l; std::getline(lines, l);) js.push_back(nlohmann::json::parse(l));
  EXPECT_EQ(js[1]["image"], bad);
  EXPECT_NE(js[1]["error"].get<std::string>().find(bad), std::string::npos) << js[1];
  EXPECT_FALSE(js[1].contains("detections"));
  EXPECT_EQ(js[2]["image"], img1);
  EXPECT_NE(r.err.find("summary: 3 inputs, 2 frames"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("summary: 1 input failed to read"), std::string::npos) << r.err;

  {
    std::ofstream list(dir_ + "/list.txt");
    list << img0 << "\n" << dir_ << "/missing.ppm\n" << bad << "\n" << img2 << "\n" << img1 << "\n";
  }
  const std::string json = dir_ + "/dn.json";
  r = run_tool(dlrun("--list " + dir_ + "/list.txt --frames 2 --darknet-json " + json));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_of(r.out, "Predicted in"), 2) << r.out;
  EXPECT_NE(r.out.find(img2 + ": Predicted in"), std::string::npos) << "failed inputs are not frames: " << r.out;
  EXPECT_NE(r.err.find("missing.ppm"), std::string::npos) << r.err;
  const auto dn = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(dn.size(), 2u) << dn;
  EXPECT_EQ(dn[1]["filename"], img2);

  r = run_tool(dlrun(bad));  // a single input: its line alone
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

// Ctrl-C (SIGINT) stops a long run cleanly: exit 130 (as a shell reports an
// interrupted command; a finished run exits 0), a note on stderr, and the
// --darknet-json array closed so it parses. The signal is repeated until dlrun exits,
// since it is only handled once the frame loop has started.
TEST_F(DlrunInputs, InterruptClosesTheOutputs) {
  {
    std::ofstream list(dir_ + "/long.txt");
    for (int i = 0; i < 5000; ++i) list << dir_ << "/imgs/img0.ppm\n";
  }
  const std::string json = dir_ + "/partial.json";
  auto r = test::run_shell(std::string(DLR_TOOLS_DIR) + "/" + dlrun("@" + dir_ + "/long.txt --darknet-json " + json) +
                           " >/dev/null & pid=$!; sleep 1; while kill -INT $pid 2>/dev/null; do sleep 1; done; wait $pid");
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("dlrun: interrupted after "), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  ASSERT_TRUE(j.is_array());
  EXPECT_LT(j.size(), 5000u);
}

// On a GPU (skips without one): a list in batches of 2, streamed through the smallest
// pool and preloaded, gives one JSON line per frame, the same frames as the CPU, and a
// summary with the device memory.
TEST_F(DlrunInputs, GpuBatchesInStreamAndPreloadMode) {
  const std::string imgs = dir_ + "/imgs/img0.ppm " + dir_ + "/imgs/img1.ppm " + dir_ + "/imgs/img2.ppm";
  auto cpu = run_tool(dlrun(imgs + " --json"));
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  for (const char* mode : {"--mode stream --weight-budget min", "--mode preload"}) {
    auto r = run_tool(dlrun(imgs + " --json --device cuda --batch 2 --summary always " + mode));
    if (r.code == 1 && r.err.find("CUDA") != std::string::npos) GTEST_SKIP() << r.err;
    ASSERT_EQ(r.code, 0) << mode << ": " << r.err;
    ASSERT_EQ(count_lines(r.out), 3) << r.out;
    std::istringstream a(cpu.out), b(r.out);
    for (std::string la, lb; std::getline(a, la) && std::getline(b, lb);)
      EXPECT_EQ(nlohmann::json::parse(la)["image"], nlohmann::json::parse(lb)["image"]);
    EXPECT_NE(r.err.find("3 frames, 2 inferences (batch 2)"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cuda memory held by the engine"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("(cudaMemGetInfo)"), std::string::npos) << r.err;
  }
}

TEST_F(DlrunInputs, ReportsProgressAndSummaryStayOffStdout) {
  const std::string img = dir_ + "/imgs/img0.ppm";
  auto plain = run_tool(dlrun(img));
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.err, "") << "one image: no summary unless asked";

  const std::string rep = dir_ + "/report.csv";
  auto r = run_tool(dlrun(img + " --report csv --report-file " + rep));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(without_times(r.out), without_times(plain.out)) << "stdout holds detections only";
  std::ifstream f(rep);
  std::string header;
  ASSERT_TRUE(std::getline(f, header));
  EXPECT_NE(header.find(','), std::string::npos) << header;

  r = run_tool(dlrun(img + " --report table"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(without_times(r.out), without_times(plain.out)) << "the table went to stdout";
  EXPECT_GT(count_lines(r.err), 3) << "the table goes to stderr";

  r = run_tool(dlrun(dir_ + "/imgs --progress always --summary always"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("\r["), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3/3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("frames/s  ETA"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("latency per inference p50"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("peak host RSS"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("\r"), std::string::npos);

  r = run_tool(dlrun(img + " --report-file " + rep));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "dlrun: --report-file needs --report FORMAT\n");
}

}  // namespace
}  // namespace dlr
