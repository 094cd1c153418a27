// Priority and CPU placement of threads: what the session options thread_priority and
// cpu_affinity ask of the threads the runtime creates (the storage reader thread, the
// pread workers) and of the caller's inference thread (apply_thread_options,
// runtime/session.h). Linux: a thread created by a placed thread inherits its priority
// and CPUs. docs/library.md, "Thread priority and CPU placement".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/core/status.h"

namespace dlr {

// normal: nothing changed (a thread keeps what it inherited); high: nice kHighNice
// (SCHED_OTHER); realtime: SCHED_FIFO at kRealtimeLevel. Raising needs CAP_SYS_NICE or
// an rlimit (RLIMIT_NICE >= 20 - kHighNice, RLIMIT_RTPRIO >= kRealtimeLevel).
enum class ThreadPriority : uint8_t { kNormal, kHigh, kRealtime };
const char* thread_priority_name(ThreadPriority p);  // "normal", "high", "realtime"
constexpr int kHighNice = -10;
constexpr int kRealtimeLevel = 10;

// CPUs as `taskset -c` lists them: "2", "2,3", "4-7", "0,2-3" (blanks around items
// allowed); empty: none (threads keep the CPUs they inherited).
struct CpuList {
  static constexpr int kMaxCpu = 1023;  // CPU_SETSIZE - 1
  std::vector<int> cpus;                // ascending, no repeats

  // The error says what was expected, without an option's name.
  static Expected<CpuList> parse(const std::string& text);
  std::string to_string() const;  // "0,2-3"; parse(to_string()) == *this
  bool empty() const { return cpus.empty(); }
  bool operator==(const CpuList& o) const { return cpus == o.cpus; }
};

struct ThreadPlacement {
  ThreadPriority priority = ThreadPriority::kNormal;
  CpuList cpus;
  bool changes_nothing() const { return priority == ThreadPriority::kNormal && cpus.empty(); }
};

// The calling thread's CPUs. An error (and the thread's CPUs unchanged) when one is not
// among those the kernel lets this process use (allowed_cpus()); it names both.
Status set_thread_cpus(const CpuList& cpus);
// The calling thread's priority. An error when not permitted, saying what is missing.
Status set_thread_priority(ThreadPriority p);
// The CPUs the kernel lets this process's threads use: its cpuset (a container's CPUs),
// whatever affinity a thread was started with. Asked on a thread of its own.
CpuList allowed_cpus();

// Places the calling thread: its CPUs (an error is returned; nothing is changed), then
// its priority. A priority not permitted is not an error: one warning line through the
// logger (once per process and priority: "thread_priority realtime: not permitted
// (...); threads keep normal priority") and the thread keeps its own.
Status place_calling_thread(const ThreadPlacement& p);
// Places a thread of its own as place_calling_thread() would, which then ends: what
// Session::open checks before any file work (the CPUs' error, the priority's warning).
Status check_thread_placement(const ThreadPlacement& p);

// Starts a thread named `name` (at most 15 characters; top -H shows it) that places
// itself as `p` says and then runs `body`; returns once it has placed itself. A CPU
// error there (the set changed since the check) is a warning line; a priority not
// permitted only a debug line (check_thread_placement() gave its warning). Throws
// std::system_error where std::thread does.
std::thread start_placed_thread(const std::string& name, const ThreadPlacement& p, std::function<void()> body);

// Tests: forget the warnings given, so that the next refusal warns again.
void forget_thread_warnings();

}  // namespace dlr
