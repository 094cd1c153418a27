// dlrun --cache list|clear (tools/dlrun/cache_command.cpp) over a cache holding a
// prepared file, one in use by this process, a temporary this process is writing
// (write-locked) and a dead writer's temporary: what list prints, what clear removes
// and keeps, and the refusals.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/storage/prepared_cache.h"
#include "runtime/storage/prepared_file.h"
#include "tests/e2e/tool_runner.h"

namespace dlr {
namespace {
namespace fs = std::filesystem;

// A file that starts like a prepared one: magic, this dlrun's format version, dtype and layout bytes.
void write_fake_prepared(const std::string& path, bool fp16_nhwc, int64_t bytes) {
  std::string h(72, '\0');
  h.replace(0, 8, "DLRWPREP");
  h[8] = char(kPreparedFormatVersion);
  h[64] = fp16_nhwc ? 1 : 0;
  h[65] = fp16_nhwc ? 1 : 0;
  std::ofstream(path, std::ios::binary) << h;
  fs::resize_file(path, uintmax_t(bytes));
}

void set_atime(const std::string& path, int64_t sec) {
  const struct timespec t[2] = {{time_t(sec), 0}, {0, UTIME_OMIT}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, 0), 0) << path;
}

TEST(DlrunCache, ListShowsEveryFileAndClearKeepsWhatIsInUse) {
  const std::string root = test::temp_dir() + "/dlrun_cache_" + std::to_string(::getpid());
  fs::remove_all(root);
  const std::string dir = root + "/prepared";
  fs::create_directories(dir);
  const std::string old_file = dir + "/yolov4-0123456789abcdef.dlrw";
  const std::string used_file = dir + "/yolov4-tiny-fedcba9876543210.dlrw";
  const std::string dead_temp = dir + "/yolov4-0123456789abcdef.dlrw.tmp.AbC123";
  const std::string live_temp = dir + "/yolov3-00000000000000ff.dlrw.tmp.XyZ789";
  write_fake_prepared(old_file, true, 2 << 20);
  write_fake_prepared(used_file, false, 1 << 20);
  { std::ofstream(dead_temp) << "partial"; }
  { std::ofstream(live_temp) << "being written"; }
  set_atime(old_file, 1000000000);
  set_atime(dead_temp, 1000000100);
  set_atime(live_temp, 1000000200);
  set_atime(used_file, 1000000300);
  PreparedUse in_use;
  ASSERT_TRUE(*PreparedUse::acquire(used_file, &in_use));
  const int writer = ::open(live_temp.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  ASSERT_EQ(lock_whole_file(writer, true, false), 0);

  const std::string env = "DLR_CACHE_DIR=" + root + " DLR_CACHE_MAX_BYTES=1GiB ";
  test::ToolResult r = test::run_shell(env + DLR_TOOLS_DIR "/dlrun --cache list");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string header = "prepared weight cache " + dir + ": 4 files, 3.00 MiB, bound 1024.00 MiB (least recently "
                             "used first)\n";
  ASSERT_EQ(r.out.substr(0, header.size()), header) << r.out;
  EXPECT_EQ(test::count_lines(r.out), 5) << r.out;
  // Least recently used first, each with its size and what it is.
  const size_t a = r.out.find("yolov4-0123456789abcdef.dlrw  2.00 MiB  last use ");
  const size_t b = r.out.find("yolov4-0123456789abcdef.dlrw.tmp.AbC123  0.00 MiB  last use ");
  const size_t c = r.out.find("yolov3-00000000000000ff.dlrw.tmp.XyZ789  0.00 MiB  last use ");
  const size_t d = r.out.find("yolov4-tiny-fedcba9876543210.dlrw  1.00 MiB  last use ");
  ASSERT_TRUE(a != std::string::npos && b != std::string::npos && c != std::string::npos && d != std::string::npos)
      << r.out;
  EXPECT_TRUE(a < b && b < c && c < d) << r.out;
  EXPECT_NE(r.out.find("  yolov4 fp16 NHWC\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  temporary: left by a writer that died (removed on the next use)\n"), std::string::npos);
  EXPECT_NE(r.out.find("  temporary: being written\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  yolov4-tiny fp32 NCHW, in use\n"), std::string::npos) << r.out;

  r = test::run_shell(env + DLR_TOOLS_DIR "/dlrun --cache clear");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "removed 2 files (2.00 MiB) from " + dir + "; kept 2 in use or being written\n");
  EXPECT_FALSE(fs::exists(old_file));
  EXPECT_FALSE(fs::exists(dead_temp));
  EXPECT_TRUE(fs::exists(used_file));
  EXPECT_TRUE(fs::exists(live_temp));
  ::close(writer);
  in_use.release();
  r = test::run_shell(env + DLR_TOOLS_DIR "/dlrun --cache clear");
  EXPECT_EQ(r.out, "removed 2 files (1.00 MiB) from " + dir + "; kept 0 in use or being written\n");
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(DlrunCache, RefusalsAreOneLine) {
  const std::string root = test::temp_dir() + "/dlrun_cache_refusals";
  const std::string env = "DLR_CACHE_DIR=" + root + " ";
  test::ToolResult r = test::run_shell(env + DLR_TOOLS_DIR "/dlrun --cache purge");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "dlrun: --cache purge: expected list or clear\n");
  r = test::run_shell(env + DLR_TOOLS_DIR "/dlrun a.cfg a.weights --cache list");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "dlrun: --cache list works on the prepared weight cache alone: give no model or inputs\n");
  r = test::run_shell(env + "DLR_CACHE_MAX_BYTES=lots " DLR_TOOLS_DIR "/dlrun --cache list");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "dlrun: DLR_CACHE_MAX_BYTES \"lots\": expected a size (2GiB, 500MB, a byte count) or 0 / none (no "
                   "bound)\n");
}

}  // namespace
}  // namespace dlr
