// Thread priority and CPU placement (thread_placement.h): Linux scheduling calls on the
// calling thread, and why a refused priority was refused.
#include "runtime/core/thread_placement.h"

#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <future>
#include <system_error>

#include "runtime/core/log.h"

namespace dlr {
namespace {

std::atomic<bool> g_warned[3];  // per ThreadPriority: its refusal was logged

bool blank(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// A CPU number of `item` from `at` (digits only, at most kMaxCpu); -1 if none.
int cpu_number(const std::string& item, size_t* at) {
  long v = 0;
  const size_t begin = *at;
  while (*at < item.size() && std::isdigit(static_cast<unsigned char>(item[*at])) && v <= CpuList::kMaxCpu)
    v = v * 10 + (item[(*at)++] - '0');
  return *at == begin || v > CpuList::kMaxCpu ? -1 : int(v);
}

// One item, "N" or "LO-HI" with blanks around, into `seen`; false when malformed.
bool add_item(const std::string& item, std::vector<char>* seen) {
  size_t at = 0;
  while (at < item.size() && blank(item[at])) ++at;
  const int lo = cpu_number(item, &at);
  int hi = lo;
  if (lo >= 0 && at < item.size() && item[at] == '-') hi = cpu_number(item, &++at);
  while (at < item.size() && blank(item[at])) ++at;
  if (lo < 0 || hi < lo || at != item.size()) return false;
  for (int c = lo; c <= hi; ++c) (*seen)[size_t(c)] = 1;
  return true;
}

cpu_set_t cpu_set_of(const CpuList& l) {
  cpu_set_t s;
  CPU_ZERO(&s);
  for (int c : l.cpus) CPU_SET(c, &s);
  return s;
}

CpuList list_of(const cpu_set_t& s) {
  CpuList l;
  for (int c = 0; c <= CpuList::kMaxCpu; ++c)
    if (CPU_ISSET(c, &s)) l.cpus.push_back(c);
  return l;
}

// The calling thread's CPUs as the kernel keeps them once every CPU is asked for.
CpuList widest_cpus() {
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c = 0; c <= CpuList::kMaxCpu; ++c) CPU_SET(c, &all);
  (void)sched_setaffinity(0, sizeof(all), &all);
  cpu_set_t got;
  CPU_ZERO(&got);
  return sched_getaffinity(0, sizeof(got), &got) == 0 ? list_of(got) : CpuList{};
}

Status cpus_refused(const CpuList& asked, int err) {
  const CpuList allowed = allowed_cpus();
  CpuList missing;
  for (int c : asked.cpus)
    if (!std::binary_search(allowed.cpus.begin(), allowed.cpus.end(), c)) missing.cpus.push_back(c);
  const std::string head = "cpu_affinity " + asked.to_string() + ": ";
  if (missing.empty()) return internal_error(head + "sched_setaffinity: " + std::strerror(err));
  const bool one = missing.cpus.size() == 1;
  return invalid_argument(head + (one ? "CPU " : "CPUs ") + missing.to_string() + (one ? " is" : " are") +
                          " not among the CPUs this process may use (" + allowed.to_string() + ")");
}

bool has_cap_sys_nice() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_SYS_NICE / 32].effective & (1u << (CAP_SYS_NICE % 32))) != 0;
}

// "thread_priority high: not permitted (nice -10 needs CAP_SYS_NICE or RLIMIT_NICE >= 30,
// which is 0 here)", or the call's error where the permission is there.
Status priority_refused(ThreadPriority p, int err) {
  const bool high = p == ThreadPriority::kHigh;
  const char* limit = high ? "RLIMIT_NICE" : "RLIMIT_RTPRIO";
  const rlim_t need = high ? rlim_t(20 - kHighNice) : rlim_t(kRealtimeLevel);
  const std::string what = high ? "nice " + std::to_string(kHighNice) : "SCHED_FIFO " + std::to_string(kRealtimeLevel);
  rlimit lim{};
  const bool have_limit = getrlimit(high ? RLIMIT_NICE : RLIMIT_RTPRIO, &lim) == 0 && lim.rlim_cur >= need;
  std::string why;
  if (!has_cap_sys_nice() && !have_limit)
    why = what + " needs CAP_SYS_NICE or " + limit + " >= " + std::to_string(need) + ", which is " +
          std::to_string(lim.rlim_cur) + " here";
  else
    why = what + ": " + std::strerror(err) + (high ? "" : "; a cgroup without real-time CPU time refuses SCHED_FIFO");
  return unsupported(std::string("thread_priority ") + thread_priority_name(p) + ": not permitted (" + why + ")");
}

void warn_once(ThreadPriority p, const std::string& message) {
  if (!g_warned[size_t(p)].exchange(true)) DLR_LOG_WARN("{}; threads keep normal priority", message);
}

}  // namespace

const char* thread_priority_name(ThreadPriority p) {
  switch (p) {
    case ThreadPriority::kNormal: return "normal";
    case ThreadPriority::kHigh: return "high";
    case ThreadPriority::kRealtime: return "realtime";
  }
  return "normal";
}

Expected<CpuList> CpuList::parse(const std::string& text) {
  CpuList out;
  if (std::all_of(text.begin(), text.end(), blank)) return out;
  std::vector<char> seen(size_t(kMaxCpu) + 1, 0);
  for (size_t a = 0; a <= text.size();) {
    const size_t e = std::min(text.find(',', a), text.size());
    if (!add_item(text.substr(a, e - a), &seen))
      return invalid_argument("expected a CPU list such as 2,3 or 4-7 (CPU numbers 0.." + std::to_string(kMaxCpu) +
                              ")");
    a = e + 1;
  }
  for (int c = 0; c <= kMaxCpu; ++c)
    if (seen[size_t(c)]) out.cpus.push_back(c);
  return out;
}

std::string CpuList::to_string() const {
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j >= i + 2) s += "-" + std::to_string(cpus[j]);
    else if (j == i + 1) s += "," + std::to_string(cpus[j]);
    i = j + 1;
  }
  return s;
}

CpuList allowed_cpus() {
  CpuList out;
  try {
    std::thread t([&out] { out = widest_cpus(); });
    t.join();
  } catch (const std::system_error&) {  // no thread: the calling thread's own CPUs
    cpu_set_t got;
    CPU_ZERO(&got);
    if (sched_getaffinity(0, sizeof(got), &got) == 0) out = list_of(got);
  }
  return out;
}

Status set_thread_cpus(const CpuList& cpus) {
  if (cpus.empty()) return Status();
  cpu_set_t before, want = cpu_set_of(cpus), got;
  CPU_ZERO(&before);
  CPU_ZERO(&got);
  (void)sched_getaffinity(0, sizeof(before), &before);
  if (sched_setaffinity(0, sizeof(want), &want) != 0) return cpus_refused(cpus, errno);
  // The kernel keeps only the CPUs of the process's cpuset: fewer means some were refused.
  if (sched_getaffinity(0, sizeof(got), &got) == 0 && CPU_EQUAL(&got, &want)) return Status();
  (void)sched_setaffinity(0, sizeof(before), &before);
  return cpus_refused(cpus, 0);
}

Status set_thread_priority(ThreadPriority p) {
  if (p == ThreadPriority::kHigh) {
    if (setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), kHighNice) != 0) return priority_refused(p, errno);
  } else if (p == ThreadPriority::kRealtime) {
    sched_param sp{};
    sp.sched_priority = kRealtimeLevel;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) return priority_refused(p, errno);  // 0: this thread
  }
  return Status();
}

Status place_calling_thread(const ThreadPlacement& p) {
  DLR_RETURN_IF_ERROR(set_thread_cpus(p.cpus));
  const Status st = set_thread_priority(p.priority);
  if (!st.ok()) warn_once(p.priority, st.message());
  return Status();
}

Status check_thread_placement(const ThreadPlacement& p) {
  if (p.changes_nothing()) return Status();
  Status st;
  try {
    std::thread t([&] { st = place_calling_thread(p); });
    t.join();
  } catch (const std::system_error& e) {
    return internal_error(std::string("thread placement: cannot start a thread: ") + e.what());
  }
  return st;
}

std::thread start_placed_thread(const std::string& name, const ThreadPlacement& p, std::function<void()> body) {
  std::promise<void> placed;
  std::future<void> ready = placed.get_future();
  std::thread t([name, p, placed = std::move(placed), body = std::move(body)]() mutable {
    (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    // The session's check at open gave the priority's warning, if any.
    const Status cpus = set_thread_cpus(p.cpus), priority = set_thread_priority(p.priority);
    if (!cpus.ok()) DLR_LOG_WARN("{} thread: {}", name, cpus.message());
    if (!priority.ok()) DLR_LOG_DEBUG("{} thread: {}", name, priority.message());
    placed.set_value();
    body();
  });
  ready.wait();
  return t;
}

void forget_thread_warnings() {
  for (std::atomic<bool>& w : g_warned) w = false;
}

}  // namespace dlr
