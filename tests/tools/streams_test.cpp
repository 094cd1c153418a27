// Streams as inputs (tools/common/streams.h, inputs.h): URLs and GStreamer
// pipelines are recognised (never globbed nor stat'ed), credentials are hidden in
// their names and kept in what is opened; and a stream that does not open is one
// line naming it and the backend tried, without its password.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/common/test_paths.h"
#include "tools/common/frames.h"
#include "tools/common/inputs.h"
#include "tools/common/streams.h"
#include "tools/common/video.h"

namespace dlr::tools {
namespace {

TEST(Streams, UrlsAndPipelinesAreRecognised) {
  for (const char* url : {"rtsp://cam/live", "rtsps://10.0.0.2:322/s", "http://h/x.avi", "https://h/a?b=1",
                          "udp://@:5000", "tcp://1.2.3.4:9", "rtmp://h/app", "file:///tmp/x.avi", "srt+x.y-z://h"})
    EXPECT_TRUE(is_stream_url(url)) << url;
  for (const char* not_url : {"clip.mp4", "dir/x.avi", "://x", "1rtsp://x", "c:/x.jpg", "a b://c", "rtsp:/x"})
    EXPECT_FALSE(is_stream_url(not_url)) << not_url;
  EXPECT_TRUE(is_gstreamer_pipeline("videotestsrc ! videoconvert ! appsink"));
  EXPECT_FALSE(is_gstreamer_pipeline("shots/a!b.jpg"));
  EXPECT_EQ(stream_backend("videotestsrc ! appsink"), StreamBackend::kGStreamer);
  EXPECT_EQ(stream_backend("rtsp://cam/live"), StreamBackend::kFFmpeg);
}

TEST(Streams, CredentialsAreHidden) {
  EXPECT_EQ(hide_credentials("rtsp://admin:s3cret@cam:554/live?x=1"), "rtsp://***@cam:554/live?x=1");
  EXPECT_EQ(hide_credentials("http://user@h/x"), "http://***@h/x");
  EXPECT_EQ(hide_credentials("http://h/x@y"), "http://h/x@y");  // '@' in the path is no user
  EXPECT_EQ(hide_credentials("rtsp://cam/live"), "rtsp://cam/live");
  EXPECT_EQ(hide_credentials("rtspsrc location=rtsp://a:b@cam/s user-id=admin user-pw=\"p w\" ! decodebin ! "
                             "appsink"),
            "rtspsrc location=rtsp://***@cam/s user-id=*** user-pw=*** ! decodebin ! appsink");
  EXPECT_EQ(hide_credentials("souphttpsrc location=https://h/x proxy-pw=pp ! appsink"),
            "souphttpsrc location=https://h/x proxy-pw=*** ! appsink");
}

TEST(Streams, ExpandInputsKeepsStreamsWhole) {
  std::istringstream none;
  // '?' and '[' would be glob characters in a path; a URL or pipeline is not a glob.
  auto r = expand_inputs({"http://u:pw@127.0.0.1:1/a.avi?x=[1]", "a.jpg", "videotestsrc ! appsink"}, {}, none);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].kind, InputKind::kStream);
  EXPECT_EQ((*r)[0].path, "http://***@127.0.0.1:1/a.avi?x=[1]");
  EXPECT_EQ((*r)[0].source, "http://u:pw@127.0.0.1:1/a.avi?x=[1]");
  EXPECT_EQ((*r)[1].kind, InputKind::kImage);
  EXPECT_EQ((*r)[2].kind, InputKind::kStream);
  EXPECT_EQ((*r)[2].source, "videotestsrc ! appsink");
  std::istringstream list("rtsp://cam/live\nx.png\n");
  r = expand_inputs({"-"}, {}, list);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].kind, InputKind::kStream);
  EXPECT_EQ((*r)[1].kind, InputKind::kImage);
}

#ifdef DLR_HAVE_OPENCV
TEST(Streams, AStreamThatDoesNotOpenIsOneLineWithoutThePassword) {
  // Port 1 on the loopback: nothing listens, the connection is refused at once.
  const std::string url = "http://viewer:hunter2@127.0.0.1:1/clip.avi";
  auto v = VideoReader::open_stream(url, hide_credentials(url));
  ASSERT_FALSE(v.ok());
  const std::string m = v.status().message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_EQ(m.rfind("http://***@127.0.0.1:1/clip.avi: cannot open the stream (OpenCV's FFmpeg backend)", 0), 0u) << m;
  EXPECT_EQ(m.find("hunter2"), std::string::npos) << m;
  // The same through FrameReader::probe, as dlrun opens it before any work.
  std::istringstream none;
  auto items = expand_inputs({url}, {}, none);
  ASSERT_TRUE(items.ok());
  FrameReader reader(*items);
  const Status st = reader.probe();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), m);
}
#endif

}  // namespace
}  // namespace dlr::tools
