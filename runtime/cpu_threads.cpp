#include "runtime/cpu_threads.h"

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace dlr {
namespace {
std::atomic<int> g_active{0};
thread_local CpuThreadScope* t_scope = nullptr;
int cpus() {
  static const int n = available_cpus();
  return n;
}
}

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1, int(std::thread::hardware_concurrency()));
}

int auto_threads(int cpus, int active) { return std::max(1, cpus / std::max(1, active)); }

CpuThreadScope::CpuThreadScope(int requested) : m_requested(requested), m_outer(t_scope) {
  const int active = g_active.fetch_add(1) + 1;
  m_threads = requested > 0 ? requested : auto_threads(cpus(), active);
  m_previous = omp_get_max_threads();
  omp_set_num_threads(m_threads);
  t_scope = this;
}

CpuThreadScope::~CpuThreadScope() {
  t_scope = m_outer;
  omp_set_num_threads(m_previous);
  g_active.fetch_sub(1);
}

void refresh_cpu_threads() {
  CpuThreadScope* s = t_scope;
  if (s == nullptr || s->m_requested > 0) return;
  const int n = auto_threads(cpus(), g_active.load(std::memory_order_relaxed));
  if (n != s->m_threads) {
    s->m_threads = n;
    omp_set_num_threads(n);
  }
}

}  // namespace dlr
