// CPU thread control for sessions (SessionOptions::threads).
//
// The rule: a session runs its OpenMP work with `threads` threads when that is set
// (> 0); with 0 (auto) with max(1, cpus / active) threads, where cpus is the number
// of CPUs this process may run on (sched_getaffinity: taskset, cgroup cpusets) and
// active the number of sessions inside open() or detect() at that moment, this one
// included. So one session alone uses every CPU, and N sessions detecting at once
// on N threads share them instead of each starting a full team (oversubscription
// costs 10-40x on a loaded machine: OpenMP threads spin at barriers while their
// peers wait for a CPU). Explicit counts are the application's to keep within cpus.
//
// Mechanism: OpenMP's thread count is an internal control variable of the calling
// thread, so CpuThreadScope sets it (omp_set_num_threads) for the thread that calls
// open()/detect() and restores the previous value when it ends; other threads of
// the application are not affected. With auto, the CPU engine re-applies the rule
// before every layer (refresh_cpu_threads), so a session that started alone gives
// up CPUs within one layer when others start.
#pragma once

#include <cstdint>

namespace dlr {

// Auto mode's choice between the shared team (cpus / active) and one thread, made
// from measured latency: OpenMP threads spin at barriers, so on a CPU loaded by other
// processes a team can be 10-40x slower than one thread (measured: docs/library.md).
// The first two calls try both; then the faster (exponential moving average) is
// used, and the other is tried again after 16 calls, then 32, 64, ... up to 1024
// while it keeps losing; a loser at least 4x slower (a team spinning on a loaded CPU:
// 10-40x) is tried again no sooner than 100 x (loser / best) calls, so that its tries
// cost at most ~1% of the time. One per session; not thread-safe (a session is used by one
// thread at a time).
class AutoThreadChooser {
 public:
  // The `requested` value for CpuThreadScope: 0 (the auto team) or 1.
  int pick();
  // The latency of the call made with pick()'s value.
  void record(int picked, double ms);

 private:
  double m_ms[2] = {-1, -1};  // EMA latency: [0] the auto team, [1] one thread
  int64_t m_calls = 0;
  int64_t m_next_probe = 16;
  int64_t m_interval = 16;
};

// CPUs this process may run on (>= 1).
int available_cpus();
// The auto rule: max(1, cpus / max(1, active)).
int auto_threads(int cpus, int active);

// RAII: for its lifetime the calling thread's OpenMP team size is `requested` (> 0)
// or the auto rule's (0), and it counts as one active session.
class CpuThreadScope {
 public:
  // Re-applies the auto rule for the innermost scope of the calling thread (no-op
  // without one or with an explicit count). Cheap: an atomic load and an ICV store.
  friend void refresh_cpu_threads();
  explicit CpuThreadScope(int requested);
  ~CpuThreadScope();
  CpuThreadScope(const CpuThreadScope&) = delete;
  CpuThreadScope& operator=(const CpuThreadScope&) = delete;
  int threads() const { return m_threads; }

 private:
  int m_requested = 0;
  int m_threads = 1;
  int m_previous = 1;
  CpuThreadScope* m_outer = nullptr;
};

void refresh_cpu_threads();

}  // namespace dlr
