// finish_process (tools/common/process_exit.h): with nothing held it returns the exit
// code; with an object held it ends the process with that code, stdio flushed and the
// object not destroyed. Checked in forked children (the parent keeps running).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/common/test_paths.h"
#include "tools/common/process_exit.h"

namespace dlr::tools {
namespace {

// Writes "destroyed" to `path` when destroyed.
struct Marker {
  explicit Marker(std::string p) : path(std::move(p)) {}
  Marker(Marker&& o) noexcept : path(std::move(o.path)) { o.path.clear(); }
  ~Marker() {
    if (!path.empty()) std::ofstream(path) << "destroyed";
  }
  std::string path;
};

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Runs `body` in a forked child with stdout sent to `out`; returns the child's exit status.
template <class F>
int in_child(const std::string& out, F body) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (!std::freopen(out.c_str(), "w", stdout)) std::_Exit(90);
    std::setvbuf(stdout, nullptr, _IOFBF, 1 << 16);  // buffered, so a missing flush would lose it
    std::_Exit(body());  // no atexit handlers: the parent's scratch folder stays
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ProcessExit, NothingHeldReturnsTheCode) { EXPECT_EQ(finish_process(3), 3); }

TEST(ProcessExit, AHeldObjectIsLeftAndOutputFlushed) {
  const std::string marker = test::temp_dir() + "/exit_marker", out = test::temp_dir() + "/exit_out";
  const int rc = in_child(out, [&] {
    hold_until_exit(Marker(marker));
    std::printf("last line\n");
    return finish_process(7) + 100;  // not reached
  });
  EXPECT_EQ(rc, 7);
  EXPECT_EQ(read_all(out), "last line\n");
  EXPECT_EQ(read_all(marker), "") << "the held object was destroyed";
}

TEST(ProcessExit, AskedWithoutAnythingHeld) {
  const std::string out = test::temp_dir() + "/exit_out_asked";
  const int rc = in_child(out, [&] {
    end_without_teardown();
    std::printf("asked\n");
    return finish_process(5) + 100;  // not reached
  });
  EXPECT_EQ(rc, 5);
  EXPECT_EQ(read_all(out), "asked\n");
}

TEST(ProcessExit, FullExitOnRequest) {
  ::setenv("DLR_FULL_EXIT", "1", 1);
  EXPECT_FALSE(exit_without_teardown());
  ::setenv("DLR_FULL_EXIT", "0", 1);
  EXPECT_TRUE(exit_without_teardown());
  ::unsetenv("DLR_FULL_EXIT");
  EXPECT_TRUE(exit_without_teardown());
}

}  // namespace
}  // namespace dlr::tools
