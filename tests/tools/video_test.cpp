// Video in and out (tools/common/video.h) and FrameReader (frames.h): an MJPG
// .avi written at test time and read back frame by frame, and the one-line
// errors of a garbage video, a missing one, a camera that does not open, a bad
// --out-video name and a frame of the wrong size.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/common/test_paths.h"
#include "tools/common/frames.h"
#include "tools/common/video.h"

namespace dlr::tools {
namespace {

LoadedImage solid(int w, int h, uint8_t b, uint8_t g, uint8_t r) {
  LoadedImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t(w) * h * 3);
  for (size_t i = 0; i < img.pixels.size(); i += 3) {
    img.pixels[i] = b;
    img.pixels[i + 1] = g;
    img.pixels[i + 2] = r;
  }
  return img;
}

void expect_one_line(const Status& st, const std::string& needle) {
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
}

TEST(Video, WriteThenReadBackFrames) {
  if (!have_opencv()) GTEST_SKIP() << "needs OpenCV";
  const std::string path = test::temp_dir() + "/three.avi";
  {
    auto w = VideoWriter::open(path, 64, 48, 10.0);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*w)->write(solid(64, 48, uint8_t(40 * i), 128, 200)).ok());
    EXPECT_EQ((*w)->frames_written(), 3);
    ASSERT_TRUE((*w)->close().ok());
  }
  auto r = VideoReader::open_file(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)->frame_count(), 3);
  EXPECT_NEAR((*r)->fps(), 10.0, 0.01);
  LoadedImage f;
  for (int i = 0; i < 3; ++i) {
    auto got = (*r)->read(&f);
    ASSERT_TRUE(got.ok() && *got) << i;
    EXPECT_EQ(f.width, 64);
    EXPECT_EQ(f.height, 48);
    EXPECT_NEAR(f.pixels[3 * 100], 40 * i, 12) << "blue of frame " << i;  // MJPG is lossy
    EXPECT_NEAR(f.pixels[3 * 100 + 2], 200, 12);
  }
  auto end = (*r)->read(&f);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);

  // FrameReader: image, video, image -> 5 frames, names PATH#K for the video's frames.
  const std::string ppm = test::temp_dir() + "/frame.ppm";
  ASSERT_TRUE(save_ppm(ppm, solid(8, 8, 1, 2, 3)).ok());
  InputItem img{InputKind::kImage, ppm, -1, ""}, vid{InputKind::kVideo, path, -1, ""};
  FrameReader reader({img, vid, img});
  ASSERT_TRUE(reader.probe().ok());
  EXPECT_EQ(reader.total(), 5);
  EXPECT_NEAR(reader.first_fps(), 10.0, 0.01);
  std::vector<std::string> names;
  Frame fr;
  for (;;) {
    auto got = reader.next(&fr);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    if (!*got) break;
    names.push_back(fr.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{ppm, path + "#0", path + "#1", path + "#2", ppm}));
}

TEST(Video, BadInputsAreOneLineErrors) {
  if (!have_opencv()) GTEST_SKIP() << "needs OpenCV";
  const std::string garbage = test::temp_dir() + "/garbage.mp4";
  std::ofstream(garbage) << "this is not a video\n";
  expect_one_line(VideoReader::open_file(garbage).status(), garbage + ": cannot open the video");
  expect_one_line(VideoReader::open_file("/nonexistent/clip.avi").status(),
                  "/nonexistent/clip.avi: no such video file");
  expect_one_line(VideoReader::open_camera(63).status(), "camera 63: cannot open the camera");
  FrameReader reader({InputItem{InputKind::kVideo, garbage, -1, ""}});
  expect_one_line(reader.probe(), garbage);
  expect_one_line(VideoWriter::open(test::temp_dir() + "/out.gif", 8, 8, 5).status(), "--out-video needs a .avi");
  auto w = VideoWriter::open(test::temp_dir() + "/sizes.avi", 16, 16, 5);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  ASSERT_TRUE((*w)->write(solid(16, 16, 0, 0, 0)).ok());
}

// A frame of another size is letterboxed into the video's: a 32x16 white frame in a
// 16x16 video is white in its middle rows, black above and below.
TEST(Video, FramesOfAnotherSizeAreLetterboxed) {
  if (!have_opencv()) GTEST_SKIP() << "needs OpenCV";
  const std::string path = test::temp_dir() + "/letterbox.avi";
  {
    auto w = VideoWriter::open(path, 16, 16, 5);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    ASSERT_TRUE((*w)->write(solid(16, 16, 0, 0, 0)).ok());
    ASSERT_TRUE((*w)->write(solid(32, 16, 255, 255, 255)).ok());
    EXPECT_EQ((*w)->frames_written(), 2);
    ASSERT_TRUE((*w)->close().ok());
  }
  auto r = VideoReader::open_file(path);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  LoadedImage f;
  ASSERT_TRUE(*(*r)->read(&f));
  ASSERT_TRUE(*(*r)->read(&f));
  ASSERT_EQ(f.width, 16);
  ASSERT_EQ(f.height, 16);
  auto at = [&](int x, int y) { return int(f.pixels[(size_t(y) * 16 + x) * 3 + 1]); };
  EXPECT_LT(at(8, 0), 40);
  EXPECT_LT(at(8, 15), 40);
  EXPECT_GT(at(8, 8), 215);
}

}  // namespace
}  // namespace dlr::tools
