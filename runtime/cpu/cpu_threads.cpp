#include "runtime/cpu/cpu_threads.h"

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

int AutoThreadChooser::pick() {
  if (cpus() == 1) return 0;
  if (m_ms[0] < 0) return 0;
  if (m_ms[1] < 0) return 1;
  const int best = m_ms[1] < m_ms[0] ? 1 : 0;
  if (m_calls >= m_next_probe) return 1 - best;  // try the other again
  return best;
}

namespace {

// Calls to wait before trying a loser that is at least 4x slower again, so that its
// tries cost at most ~1% of the time: a try costs about loser/best calls' time (a team
// spinning on a loaded CPU: 10-40). 0 for closer results (the 16, 32, ... schedule).
int64_t probe_budget_calls(const double ms[2]) {
  const double best = std::min(ms[0], ms[1]), loser = std::max(ms[0], ms[1]);
  if (best <= 0 || loser < 4 * best) return 0;
  return int64_t(std::min(100.0 * loser / best, 100000.0));
}

}  // namespace

void AutoThreadChooser::record(int picked, double ms) {
  const int i = picked == 1 ? 1 : 0;
  const bool first_pair = (m_ms[0] < 0) != (m_ms[1] < 0) && m_ms[i] < 0;  // this call measures the second choice
  const bool probe = m_ms[0] >= 0 && m_ms[1] >= 0 && m_calls >= m_next_probe;
  const int best_before = m_ms[1] >= 0 && m_ms[1] < m_ms[0] ? 1 : 0;
  m_ms[i] = m_ms[i] < 0 || probe ? ms : 0.8 * m_ms[i] + 0.2 * ms;
  ++m_calls;
  if (first_pair) m_next_probe = std::max(m_next_probe, m_calls + probe_budget_calls(m_ms));
  if (probe) {
    const int best_after = m_ms[1] < m_ms[0] ? 1 : 0;
    // The other choice lost again: wait twice as long before the next try.
    m_interval = best_after == best_before ? std::min<int64_t>(m_interval * 2, 1024) : 16;
    m_next_probe = m_calls + std::max(m_interval, probe_budget_calls(m_ms));
  }
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
