// Input enumeration (tools/common/inputs.h): directories (sorted, recursive or
// not, non-image files skipped), globs, list files, "-", video extensions, and
// the one-line errors for an empty folder, a glob without match or in a missing
// folder, a missing or empty list.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/common/test_paths.h"
#include "tools/common/inputs.h"

namespace dlr::tools {
namespace {
namespace fs = std::filesystem;

// A fresh directory under the test temp dir.
std::string fresh_dir(const std::string& name) {
  const std::string d = test::temp_dir() + "/inputs_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void touch(const std::string& path) { std::ofstream(path) << "x"; }

std::vector<std::string> paths_of(const std::vector<InputItem>& items) {
  std::vector<std::string> p;
  for (const auto& it : items) p.push_back(it.path);
  return p;
}

TEST(Inputs, PlainFilesKeepOrderAndKind) {
  std::istringstream none;
  auto r = expand_inputs({"b.jpg", "clip.MP4", "a.png", "x.avi"}, {}, none);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ(paths_of(*r), (std::vector<std::string>{"b.jpg", "clip.MP4", "a.png", "x.avi"}));
  EXPECT_EQ((*r)[0].kind, InputKind::kImage);
  EXPECT_EQ((*r)[1].kind, InputKind::kVideo);
  EXPECT_EQ((*r)[2].kind, InputKind::kImage);
  EXPECT_EQ((*r)[3].kind, InputKind::kVideo);
}

TEST(Inputs, DirectoryListsImagesSortedAndRecursesOnlyWhenAsked) {
  const std::string d = fresh_dir("dir");
  touch(d + "/b.jpg");
  touch(d + "/a.PNG");
  touch(d + "/notes.txt");
  touch(d + "/clip.mp4");  // videos in a folder are not taken: a folder means images
  fs::create_directories(d + "/sub");
  touch(d + "/sub/c.jpg");
  std::istringstream none;
  auto flat = expand_inputs({d}, {}, none);
  ASSERT_TRUE(flat.ok()) << flat.status().to_string();
  EXPECT_EQ(paths_of(*flat), (std::vector<std::string>{d + "/a.PNG", d + "/b.jpg"}));
  InputOptions rec;
  rec.recursive = true;
  auto deep = expand_inputs({d}, rec, none);
  ASSERT_TRUE(deep.ok()) << deep.status().to_string();
  EXPECT_EQ(paths_of(*deep), (std::vector<std::string>{d + "/a.PNG", d + "/b.jpg", d + "/sub/c.jpg"}));
}

TEST(Inputs, EmptyDirectoryIsAOneLineError) {
  const std::string d = fresh_dir("empty");
  touch(d + "/readme.txt");
  std::istringstream none;
  auto r = expand_inputs({d}, {}, none);
  ASSERT_FALSE(r.ok());
  const std::string m = r.status().message();
  EXPECT_NE(m.find(d + ": no image files"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(Inputs, GlobsExpandSortedAndNoMatchIsAnError) {
  const std::string d = fresh_dir("glob");
  touch(d + "/img2.jpg");
  touch(d + "/img1.jpg");
  touch(d + "/other.png");
  std::istringstream none;
  auto r = expand_inputs({d + "/img*.jpg"}, {}, none);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(paths_of(*r), (std::vector<std::string>{d + "/img1.jpg", d + "/img2.jpg"}));
  auto bad = expand_inputs({d + "/*.bmp"}, {}, none);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), d + "/*.bmp: no file matches");
}

TEST(Inputs, GlobInAMissingDirectoryNamesTheDirectory) {
  const std::string d = fresh_dir("glob_missing");
  std::istringstream none;
  auto r = expand_inputs({d + "/nodir/*.jpg"}, {}, none);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), d + "/nodir/*.jpg: no such directory " + d + "/nodir");
}

TEST(Inputs, ListFileAndStdinFollowDarknetLists) {
  const std::string d = fresh_dir("list");
  const std::string list = d + "/test.txt";
  std::ofstream(list) << "  first.jpg \r\n\n# a comment\nsecond.mp4\r\n";
  std::istringstream in("third.png\n\n");
  auto r = expand_inputs({"@" + list, "-"}, {}, in);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(paths_of(*r), (std::vector<std::string>{"first.jpg", "second.mp4", "third.png"}));
  EXPECT_EQ((*r)[1].kind, InputKind::kVideo);
}

TEST(Inputs, ListErrorsNameTheList) {
  std::istringstream none;
  auto missing = expand_inputs({"@/nonexistent/list.txt"}, {}, none);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "/nonexistent/list.txt: cannot open the list file (@/nonexistent/list.txt)");
  const std::string d = fresh_dir("emptylist");
  std::ofstream(d + "/empty.txt") << "\n# nothing\n";
  auto empty = expand_inputs({"@" + d + "/empty.txt"}, {}, none);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty.txt: lists no paths"), std::string::npos);
  std::istringstream in("a.jpg\n");
  auto twice = expand_inputs({"-", "-"}, {}, in);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("read only once"), std::string::npos);
  auto nothing = expand_inputs({}, {}, none);
  EXPECT_FALSE(nothing.ok());
}

TEST(Inputs, ExtensionsAreCaseInsensitive) {
  EXPECT_TRUE(is_image_path("A/B.JPEG"));
  EXPECT_TRUE(is_video_path("x.Mkv"));
  EXPECT_FALSE(is_image_path("x.mp4"));
  EXPECT_FALSE(is_video_path("noext"));
  EXPECT_FALSE(is_image_path("dir.jpg/noext"));
}

}  // namespace
}  // namespace dlr::tools
