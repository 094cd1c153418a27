// dlrun --show (docs/dlrun-io.md, "Window"): without a display it is one line and
// exit 1 before any work, never a GUI toolkit's abort; under Xvfb the window shows
// the annotated frame: a screenshot (Xvfb's -fbdir framebuffer, an XWD image) taken
// while the window waits (--show-wait) holds dlrun's own --out image, boxes and
// labels included. Skipped, with a message, when Xvfb is not installed
// (scripts/setup.sh installs xvfb).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"

#ifdef DLR_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

extern char** environ;

namespace dlr {
namespace {
namespace fs = std::filesystem;
using test::count_lines;
using test::run_shell;
using test::run_tool;

// A child process started with posix_spawn, ended (SIGTERM) and waited for when it goes.
struct Child {
  pid_t pid = -1;
  ~Child() { stop(); }
  int wait() {  // its exit code (128 + signal), -1 when none
    if (pid <= 0) return -1;
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  }
  void stop() {
    if (pid <= 0) return;
    ::kill(pid, SIGTERM);
    wait();
  }
};

// Xvfb on a display number of its choosing (-displayfd), its framebuffer an XWD file in `fbdir`.
class Xvfb {
 public:
  explicit Xvfb(const std::string& fbdir) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 3);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    const char* argv[] = {"Xvfb", "-displayfd", "3", "-screen", "0", "1024x768x24", "-fbdir", fbdir.c_str(),
                          "-nolisten", "tcp", "-br", nullptr};
    const bool spawned = ::posix_spawnp(&m_server.pid, "Xvfb", &fa, nullptr, const_cast<char**>(argv), environ) == 0;
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    if (!spawned) m_server.pid = -1;
    std::string number;
    char c;
    while (spawned && ::read(fds[0], &c, 1) == 1 && c != '\n') number += c;  // written once it is ready
    ::close(fds[0]);
    if (!number.empty()) m_display = ":" + number;
    m_framebuffer = fbdir + "/Xvfb_screen0";
  }
  const std::string& display() const { return m_display; }  // "" when it did not start
  const std::string& framebuffer() const { return m_framebuffer; }

 private:
  Child m_server;
  std::string m_display, m_framebuffer;
};

#ifdef DLR_HAVE_OPENCV
// An XWD file of a 24/32-bit TrueColor screen (what Xvfb -fbdir keeps) as BGR; empty if it is not one.
cv::Mat read_xwd(const std::string& path) {
  const std::string b = test::read_bytes(path);
  if (b.size() < 100) return {};
  auto field = [&](int i) {
    const auto* p = reinterpret_cast<const uint8_t*>(b.data()) + 4 * i;
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
  };
  const uint32_t header = field(0), width = field(4), height = field(5), byte_order = field(7), bpp = field(11),
                 line = field(12), ncolors = field(19);
  const size_t offset = size_t(header) + size_t(ncolors) * 12;
  if (bpp != 32 || width == 0 || height == 0 || b.size() < offset + size_t(line) * height) return {};
  cv::Mat out(int(height), int(width), CV_8UC3);
  for (uint32_t y = 0; y < height; ++y)
    for (uint32_t x = 0; x < width; ++x) {
      const auto* p = reinterpret_cast<const uint8_t*>(b.data()) + offset + size_t(y) * line + 4 * x;
      const uint32_t v = byte_order == 0 ? uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16
                                         : uint32_t(p[3]) | uint32_t(p[2]) << 8 | uint32_t(p[1]) << 16;
      out.at<cv::Vec3b>(int(y), int(x)) = cv::Vec3b(uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16));
    }
  return out;
}

// How much of `screen` shows `annotated` (BGR, at the top-left corner of the screen's
// non-black pixels): the fraction of the pixels dlrun drew on (where `annotated`
// differs from `raw`) that the screen has within 30 of `annotated`, and of all pixels.
struct Match {
  double drawn = 0, all = 0;
  int drawn_pixels = 0;
};
Match match_window(const cv::Mat& screen, const cv::Mat& annotated, const cv::Mat& raw) {
  Match m;
  int x0 = screen.cols, y0 = screen.rows;
  for (int y = 0; y < screen.rows; ++y)
    for (int x = 0; x < screen.cols; ++x)
      if (screen.at<cv::Vec3b>(y, x) != cv::Vec3b(0, 0, 0)) x0 = std::min(x0, x), y0 = std::min(y0, y);
  if (x0 + annotated.cols > screen.cols || y0 + annotated.rows > screen.rows) return m;
  auto near = [](const cv::Vec3b& a, const cv::Vec3b& b, int tol) {
    return std::abs(a[0] - b[0]) <= tol && std::abs(a[1] - b[1]) <= tol && std::abs(a[2] - b[2]) <= tol;
  };
  int same = 0, drawn_same = 0;
  for (int y = 0; y < annotated.rows; ++y)
    for (int x = 0; x < annotated.cols; ++x) {
      const cv::Vec3b s = screen.at<cv::Vec3b>(y0 + y, x0 + x), a = annotated.at<cv::Vec3b>(y, x);
      const bool ok = near(s, a, 30);
      same += ok;
      if (!near(a, raw.at<cv::Vec3b>(y, x), 40)) ++m.drawn_pixels, drawn_same += ok;
    }
  m.all = double(same) / (double(annotated.rows) * annotated.cols);
  m.drawn = m.drawn_pixels ? double(drawn_same) / m.drawn_pixels : 0;
  return m;
}
#endif

class DlrunShow : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_ = test::shared_file("weights/yolo-fastest-1.1.cfg");
    weights_ = test::shared_file("weights/yolo-fastest-1.1.weights");
    dir_ = test::temp_dir() + "/dlrun_show_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  std::string dlrun(const std::string& rest) const { return "dlrun " + cfg_ + " " + weights_ + " " + rest; }
  std::string cfg_, weights_, dir_;
};

TEST_F(DlrunShow, NoDisplayIsOneLineBeforeAnyWork) {
#ifndef DLR_HAVE_OPENCV
  GTEST_SKIP() << "needs OpenCV (without it --show is refused as unavailable before the display is looked at)";
#endif
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(dog, "images/dog.jpg");
  // The display is checked before the model opens: the missing weights are never reached.
  auto r = run_shell("env -u DISPLAY -u WAYLAND_DISPLAY " + std::string(DLR_TOOLS_DIR) + "/dlrun " + cfg +
                " /nonexistent.weights " + dog + " --show");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "dlrun: --show: no display: DISPLAY is not set; run on a desktop or under Xvfb, or leave --show "
                   "out\n");
  // A display that is named but not there: the one line, not Qt's abort.
  std::string free_display = "4095";
  for (int n = 4095; n > 4000; --n) {
    struct stat st;
    if (::stat(("/tmp/.X11-unix/X" + std::to_string(n)).c_str(), &st) != 0) {
      free_display = std::to_string(n);
      break;
    }
  }
  r = run_shell("DISPLAY=:" + free_display + " " + std::string(DLR_TOOLS_DIR) + "/dlrun " + cfg +
                " /nonexistent.weights " + dog + " --show");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "dlrun: --show: no display: the X display :" + free_display +
                       " does not accept a connection; run on a desktop or under Xvfb, or leave --show out\n");
  r = run_tool("dlrun " + cfg + " /nonexistent.weights " + dog + " --show-wait 10");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "dlrun: --show-wait needs --show\n");
}

TEST_F(DlrunShow, WindowShowsTheAnnotatedFrameUnderXvfb) {
#ifndef DLR_HAVE_OPENCV
  GTEST_SKIP() << "needs OpenCV";
#else
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  DLR_REQUIRE_FILE(dog, "images/dog.jpg");
  if (run_shell("command -v Xvfb").code != 0)
    GTEST_SKIP() << "Xvfb is not installed (scripts/setup.sh installs xvfb): the --show window is not tested";
  Xvfb x(dir_);
  ASSERT_FALSE(x.display().empty()) << "Xvfb did not start";
  const std::string out = dir_ + "/annotated.png";
  // dlrun in the background: the window waits 6 s after the frame while the screen is read.
  const std::string cmd = "DISPLAY=" + x.display() + " exec " + std::string(DLR_TOOLS_DIR) + "/dlrun " + cfg + " " +
                          weights + " " + dog + " --show --show-wait 6000 --out " + out + " >" + dir_ +
                          "/stdout.txt 2>" + dir_ + "/stderr.txt";
  Child run;
  const char* argv[] = {"sh", "-c", cmd.c_str(), nullptr};
  ASSERT_EQ(::posix_spawnp(&run.pid, "sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  const cv::Mat raw = cv::imread(dog);
  Match best;
  // A screen read while the window is still being painted can match the boxes but not
  // the whole image: the reads go on until one frame meets both bounds.
  const auto score = [](const Match& m) { return std::min(m.drawn / 0.95, m.all / 0.99); };
  cv::Mat annotated;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until && score(best) < 1.0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (annotated.empty() && fs::exists(out)) annotated = cv::imread(out);  // --out is written before the window
    if (annotated.empty()) continue;
    ASSERT_EQ(annotated.size(), raw.size());
    const cv::Mat screen = read_xwd(x.framebuffer());
    ASSERT_FALSE(screen.empty()) << "the framebuffer " << x.framebuffer() << " is no 32-bit XWD image";
    const Match m = match_window(screen, annotated, raw);
    if (score(m) > score(best)) best = m;
    int status = 0;
    if (::waitpid(run.pid, &status, WNOHANG) == run.pid) {  // ended before a match
      run.pid = -1;
      break;
    }
  }
  const int code = run.wait();
  EXPECT_EQ(code, 0) << test::read_bytes(dir_ + "/stderr.txt");
  EXPECT_GT(best.drawn_pixels, 1000) << "dlrun drew boxes and labels on dog.jpg";
  EXPECT_GE(best.drawn, 0.95) << "the window shows the boxes and labels of --out's image";
  EXPECT_GE(best.all, 0.99) << "the window shows --out's image";
  EXPECT_NE(test::read_bytes(dir_ + "/stdout.txt").find("dog: "), std::string::npos);
#endif
}

}  // namespace
}  // namespace dlr
