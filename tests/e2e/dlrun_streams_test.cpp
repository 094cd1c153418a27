// dlrun on streams (docs/dlrun-io.md, "Streams"), with local sources only: a video
// served over http on 127.0.0.1 gives the file's detections (real yolo-fastest
// weights, frames of the shared images); credentials never reach stdout or stderr;
// a live stream (an MJPEG stream of unknown length) reconnects per --reconnect, each
// outage with all its attempts, and ends normally when the source is gone; a stream that does not open is
// one line naming it and the backend; and a GStreamer videotestsrc pipeline is read
// through OpenCV's GStreamer backend (skipped, with a message, without that backend
// or its plugins: scripts/setup.sh installs gstreamer1.0-plugins-base).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/common/test_paths.h"
#include "tests/e2e/local_http_server.h"
#include "tests/e2e/tool_runner.h"

#ifdef DLR_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#include <opencv2/videoio/registry.hpp>
#endif

namespace dlr {
namespace {
namespace fs = std::filesystem;
using test::count_lines;
using test::count_of;
using test::LocalHttpServer;
using test::run_tool;

#ifdef DLR_HAVE_OPENCV
// The JSON lines of dlrun --json output.
std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) v.push_back(nlohmann::json::parse(line));
  return v;
}

class DlrunStreams : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_ = test::shared_file("weights/yolo-fastest-1.1.cfg");
    weights_ = test::shared_file("weights/yolo-fastest-1.1.weights");
    dir_ = test::temp_dir() + "/dlrun_streams_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/www");
  }
  // Writes the shared images at 320x240 as an MJPG video `name` in www/; false without them.
  bool write_clip(const std::string& name) {
    cv::VideoWriter w(dir_ + "/www/" + name, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 10.0, cv::Size(320, 240),
                      true);
    if (!w.isOpened()) return false;
    for (const char* img : {"dog.jpg", "horses.jpg", "person.jpg", "eagle.jpg"}) {
      const cv::Mat m = cv::imread(test::shared_file(std::string("images/") + img));
      if (m.empty()) return false;
      cv::Mat small;
      cv::resize(m, small, cv::Size(320, 240));
      w.write(small);
    }
    return true;
  }
  std::string dlrun(const std::string& rest) const { return "dlrun " + cfg_ + " " + weights_ + " " + rest; }
  std::string cfg_, weights_, dir_;
};

#define DLR_REQUIRE_MODEL()                                                   \
  DLR_REQUIRE_FILE(cfg_file, "weights/yolo-fastest-1.1.cfg");                 \
  DLR_REQUIRE_FILE(weights_file, "weights/yolo-fastest-1.1.weights");         \
  ASSERT_TRUE(write_clip("clip.avi")) << "cannot write the test clip from the shared images"

TEST_F(DlrunStreams, HttpVideoGivesTheFileDetections) {
  DLR_REQUIRE_MODEL();
  LocalHttpServer server(dir_ + "/www", dir_, LocalHttpServer::Mode::kServe);
  ASSERT_GT(server.port(), 0) << "the local http server (python3 -m http.server) did not start";
  const std::string file = dir_ + "/www/clip.avi";
  auto from_file = run_tool(dlrun(file + " --json"));
  ASSERT_EQ(from_file.code, 0) << from_file.err;
  const std::string url = server.url("clip.avi", "viewer:hunter2");
  auto from_url = run_tool(dlrun("'" + url + "' --json --summary always"));
  ASSERT_EQ(from_url.code, 0) << from_url.err;
  const auto a = json_lines(from_file.out), b = json_lines(from_url.out);
  ASSERT_EQ(a.size(), 4u) << from_file.out;
  ASSERT_EQ(b.size(), 4u) << from_url.out;
  int boxes = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]["detections"], b[i]["detections"]) << "frame " << i;
    boxes += int(a[i]["detections"].size());
    EXPECT_EQ(b[i]["image"], server.url("clip.avi", "***") + "#" + std::to_string(i));
    EXPECT_EQ(b[i]["frame"], int(i));
  }
  EXPECT_GT(boxes, 3) << "real weights on the shared images find objects";
  // The password is never printed; a known length: no reconnect.
  EXPECT_EQ((from_url.out + from_url.err).find("hunter2"), std::string::npos) << from_url.out << from_url.err;
  EXPECT_EQ(from_url.err.find("reconnect"), std::string::npos) << from_url.err;
  EXPECT_NE(from_url.err.find("summary: 1 input, 4 frames"), std::string::npos) << from_url.err;
}

TEST_F(DlrunStreams, LiveStreamReconnects) {
  DLR_REQUIRE_MODEL();
  ASSERT_TRUE(write_clip("live.mjpeg"));  // raw MJPEG: no length known, as a camera's stream
  LocalHttpServer server(dir_ + "/www", dir_, LocalHttpServer::Mode::kServe);
  ASSERT_GT(server.port(), 0);
  const std::string url = server.url("live.mjpeg");
  // The source replays on each open; frames flowing again give every outage all its attempts.
  auto r = run_tool(dlrun(url + " --json --reconnect 1 --reconnect-delay 0 --frames 10 --summary never"));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(count_lines(r.out), 10) << "4 frames, reconnected, 4, reconnected, 2\n" << r.out << r.err;
  EXPECT_NE(r.out.find("\"image\":\"" + url + "#9\""), std::string::npos) << "frame numbers go on" << r.out;
  EXPECT_EQ(r.err, "dlrun: " + url + ": the stream stopped after 4 frames; reconnecting in 0 s (attempt 1 of 1)\n"
                   "dlrun: " + url + ": the stream stopped after 8 frames; reconnecting in 0 s (attempt 1 of 1)\n");

  r = run_tool(dlrun(url + " --reconnect 0 --summary never"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count_of(r.out, "Predicted in"), 4);
  EXPECT_EQ(r.err, "dlrun: " + url + ": the stream stopped after 4 frames; the input ends after 4 frames "
                   "(--reconnect 0)\n");
}

TEST_F(DlrunStreams, LiveStreamWhoseSourceIsGoneGivesUp) {
  DLR_REQUIRE_MODEL();
  ASSERT_TRUE(write_clip("live.mjpeg"));
  LocalHttpServer server(dir_ + "/www", dir_, LocalHttpServer::Mode::kOnce);  // a second open gets 404
  ASSERT_GT(server.port(), 0);
  const std::string url = server.url("live.mjpeg", "cam:topsecret");
  const std::string shown = server.url("live.mjpeg", "***");
  auto r = run_tool(dlrun("'" + url + "' --reconnect 2 --reconnect-delay 0.05 --summary never"));
  ASSERT_EQ(r.code, 0) << "a live stream that ends is no failed input\n" << r.err;
  EXPECT_EQ(count_of(r.out, "Predicted in"), 4) << r.out;
  EXPECT_EQ(count_lines(r.err), 3) << r.err;
  EXPECT_NE(r.err.find("dlrun: " + shown +
                       ": the stream stopped after 4 frames; reconnecting in 0.05 s (attempt 1 of 2)"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dlrun: " + shown + ": reconnect failed (cannot open the stream (OpenCV's FFmpeg backend)"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(attempt 2 of 2)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; the input ends after 4 frames (2 of 2 reconnect attempts made)\n"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("topsecret"), std::string::npos) << r.err;
}

TEST_F(DlrunStreams, AStreamThatDoesNotOpenIsOneLine) {
  DLR_REQUIRE_MODEL();
  // Port 1 on the loopback: nothing listens there.
  auto r = run_tool(dlrun("'rtsp://admin:hunter2@127.0.0.1:1/live' --json"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "dlrun: rtsp://***@127.0.0.1:1/live: cannot open the stream (OpenCV's FFmpeg backend): "
                   "unreachable, refused, not found, or a format FFmpeg lacks\n");
  // A URL is not a file: before streams, this was "cannot open: No such file or directory".
  r = run_tool(dlrun("http://127.0.0.1:1/clip.avi"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("http://127.0.0.1:1/clip.avi: cannot open the stream (OpenCV's FFmpeg backend)"),
            std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("No such file"), std::string::npos) << r.err;
}

TEST_F(DlrunStreams, GStreamerPipeline) {
  DLR_REQUIRE_MODEL();
  if (!cv::videoio_registry::hasBackend(cv::CAP_GSTREAMER))
    GTEST_SKIP() << "this OpenCV has no GStreamer backend (cv::getBuildInformation)";
  const std::string pipeline = "videotestsrc num-buffers=3 ! video/x-raw,width=160,height=120 ! videoconvert ! appsink";
  {
    cv::VideoCapture probe(pipeline, cv::CAP_GSTREAMER);
    if (!probe.isOpened())
      GTEST_SKIP() << "GStreamer's base plugins (videotestsrc, videoconvert, appsink) are missing: scripts/setup.sh "
                      "installs gstreamer1.0-plugins-base";
  }
  auto r = run_tool(dlrun("'" + pipeline + "' --json --reconnect 5 --reconnect-delay 0"));
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << "a pipeline ends at its end of stream, no reconnect\n" << r.out << r.err;
  EXPECT_EQ(lines[2]["image"], pipeline + "#2");
  EXPECT_EQ(lines[0]["width"], 160);
  EXPECT_EQ(r.err.find("reconnect"), std::string::npos) << r.err;

  r = run_tool(dlrun("'nosuchgstelement ! appsink'"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("nosuchgstelement ! appsink: cannot open the stream (OpenCV's GStreamer backend)"),
            std::string::npos) << r.err;
}
#endif

}  // namespace
}  // namespace dlr
