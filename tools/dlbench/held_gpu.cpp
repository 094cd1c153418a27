#include "tools/dlbench/held_gpu.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

extern char** environ;

namespace dlr::tools {
namespace {

constexpr int kHoldTimeoutMs = 120000;  // how long --hold-gpu may take to make its context

// Waits for `pid` to end (how it ended is not needed: a failed start says so on stderr).
void reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return;
}

enum class Said { kHeld, kEnded, kLate };

// Reads `fd` to the holder's "held" line, to its end, or until `timeout_ms` passed
// without a byte.
Said read_held(int fd, int timeout_ms) {
  std::string got;
  char c = 0;
  while (got.size() < 64) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return Said::kLate;
    const ssize_t n = ready < 0 ? -1 : ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Said::kEnded;
    if (c == '\n') return got == "held" ? Said::kHeld : Said::kEnded;
    got.push_back(c);
  }
  return Said::kEnded;
}

}  // namespace

Expected<std::unique_ptr<HeldGpu>> HeldGpu::start() {
  int in[2], out[2];  // the holder's stdin and stdout; close-on-exec, so no other child keeps them
  if (::pipe2(in, O_CLOEXEC) != 0) return internal_error(std::string("--startup-gpu held: pipe: ") + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return internal_error(std::string("--startup-gpu held: pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  char name[] = "dlbench", flag[] = "--hold-gpu";
  char* args[] = {name, flag, nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, args, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  if (rc != 0) {
    ::close(in[1]);
    ::close(out[0]);
    return internal_error(std::string("--startup-gpu held: could not start dlbench --hold-gpu: ") + std::strerror(rc));
  }
  std::unique_ptr<HeldGpu> held(new HeldGpu(pid, in[1]));
  const Said said = read_held(out[0], kHoldTimeoutMs);
  ::close(out[0]);
  if (said == Said::kHeld) return held;
  if (said == Said::kLate) ::kill(pid, SIGKILL);  // stuck making its context: the destructor reaps it
  held.reset();
  if (said == Said::kLate)
    return internal_error("--startup-gpu held: dlbench --hold-gpu held no GPU within " +
                          std::to_string(kHoldTimeoutMs / 1000) + " s");
  return internal_error("--startup-gpu held: dlbench --hold-gpu ended before it held the GPU (its message is above)");
}

HeldGpu::~HeldGpu() {
  ::close(m_to_child);
  reap(m_pid);
}

}  // namespace dlr::tools
