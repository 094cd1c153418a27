// Hostile input to dlgen and dlimage: one line on stderr and exit 1, never a
// crash or a hang (docs/reliability.md).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "tests/common/test_paths.h"

namespace dlr {
namespace {

struct Result {
  int code = -1;
  std::string err;
};

Result run_tool(const std::string& args) {
  const std::string err_file = test::temp_dir() + "/tools_stderr.txt";
  const std::string cmd = std::string(DLR_TOOLS_DIR) + "/" + args + " >/dev/null 2>" + err_file;
  Result r;
  const int status = std::system(cmd.c_str());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(err_file);
  r.err.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return r;
}

TEST(ToolsErrors, DlimageHugePpmIsOneLine) {
  const std::string in = test::temp_dir() + "/huge_tool.ppm";
  std::ofstream(in, std::ios::binary) << "P6\n40000 40000\n255\n" << std::string(64, 'x');
  const Result r = run_tool("dlimage convert " + in + " " + test::temp_dir() + "/out.ppm");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "dlimage: " + in + ": PPM image size 40000x40000: expected width and height in 1..32768 and "
                                      "width*height <= 134217728\n");
}

TEST(ToolsErrors, DlgenFifoAndHugeInput) {
  const std::string fifo = test::temp_dir() + "/tool_fifo.cfg";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string out = test::temp_dir() + "/tool.weights";
  Result r = run_tool("dlgen " + fifo + " " + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "dlgen: " + fifo + ": not a regular file (a FIFO); expected a file\n");
  const std::string big = test::temp_dir() + "/tool_big.cfg";
  std::ofstream(big) << "[net]\nwidth=16384\nheight=16384\nchannels=3\n[convolutional]\nfilters=4\n";
  r = run_tool("dlgen " + big + " " + out);
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "dlgen: " + big + ":2: [net] width=16384: input 16384x16384 is 268435456 pixels; expected "
                                     "width*height <= 16777216 (e.g. 4096x4096)\n");
  r = run_tool("dlgen " + big);  // usage error
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace dlr
