// Reading back the scheduling of this process's threads, for the tests of
// runtime/core/thread_placement.h: the threads by name (/proc/self/task/TID/comm), their
// nice value, policy, real-time level and CPUs; whether this process may raise a
// priority; a forked child that may not.
#pragma once

#include <dirent.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <functional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/core/thread_placement.h"

namespace dlr {
// GoogleTest prints a CpuList by its text.
inline void PrintTo(const CpuList& l, std::ostream* os) { *os << "{" << l.to_string() << "}"; }
}  // namespace dlr

namespace dlr::test {

struct ThreadSched {
  pid_t tid = 0;
  int nice = 0;
  int policy = -1;    // SCHED_OTHER, SCHED_FIFO, ...
  int rt_level = 0;   // sched_priority (0 outside the real-time policies)
  CpuList cpus;
};

inline pid_t this_tid() { return pid_t(syscall(SYS_gettid)); }

inline ThreadSched sched_of(pid_t tid) {
  ThreadSched s;
  s.tid = tid;
  errno = 0;
  s.nice = getpriority(PRIO_PROCESS, id_t(tid));
  s.policy = sched_getscheduler(tid);
  sched_param sp{};
  if (sched_getparam(tid, &sp) == 0) s.rt_level = sp.sched_priority;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(tid, sizeof(set), &set) == 0)
    for (int c = 0; c <= CpuList::kMaxCpu; ++c)
      if (CPU_ISSET(c, &set)) s.cpus.cpus.push_back(c);
  return s;
}

// This process's threads whose name (comm) is `name`.
inline std::vector<ThreadSched> threads_named(const std::string& name) {
  std::vector<ThreadSched> out;
  DIR* d = opendir("/proc/self/task");
  if (!d) return out;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string comm;
    if (std::getline(f, comm) && comm == name) out.push_back(sched_of(pid_t(std::stol(e->d_name))));
  }
  closedir(d);
  return out;
}

// Whether this process may set priority `p` (tried on a thread of its own).
inline bool priority_permitted(ThreadPriority p) {
  bool ok = false;
  std::thread t([&] { ok = set_thread_priority(p).ok(); });
  t.join();
  return ok;
}

// Runs `body` in a forked child and returns its text ("" when it passed), or how the
// child ended. The child must not use GoogleTest's assertions.
inline std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::string text = body();
    const ssize_t n = write(fds[1], text.data(), text.size());
    _exit(n == ssize_t(text.size()) ? 0 : 3);
  }
  close(fds[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) text.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) text += " (the child ended with status " + std::to_string(status) + ")";
  return text;
}

// This process may no longer raise a priority: CAP_SYS_NICE dropped (root has it),
// RLIMIT_NICE and RLIMIT_RTPRIO 0. "" or what failed. For a forked child.
inline std::string drop_priority_permission() {
  const rlimit zero{0, 0};
  if (setrlimit(RLIMIT_NICE, &zero) != 0 || setrlimit(RLIMIT_RTPRIO, &zero) != 0) return "setrlimit failed";
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return "capget failed";
  const unsigned bit = 1u << (CAP_SYS_NICE % 32);
  data[CAP_SYS_NICE / 32].effective &= ~bit;
  data[CAP_SYS_NICE / 32].permitted &= ~bit;
  data[CAP_SYS_NICE / 32].inheritable &= ~bit;
  if (syscall(SYS_capset, &header, data) != 0) return "capset failed";
  return "";
}

}  // namespace dlr::test
