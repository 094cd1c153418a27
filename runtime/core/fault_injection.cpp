#include "runtime/core/fault_injection.h"

#include <atomic>

namespace dlr::fault {
namespace {
std::atomic<int64_t> g_armed{0};
std::atomic<int64_t> g_count{0};
}  // namespace

void arm(int64_t n) {
  g_count.store(0);
  g_armed.store(n > 0 ? n : 0);
}

int64_t count() { return g_count.load(); }

bool hit(const char* site) {
  if (g_armed.load(std::memory_order_relaxed) == 0) return false;
  (void)site;
  return g_count.fetch_add(1) + 1 == g_armed.load();
}

std::string tag(const char* site) { return std::string(" [fault injected at ") + site + "]"; }

}  // namespace dlr::fault
