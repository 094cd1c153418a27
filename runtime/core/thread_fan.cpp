#include "runtime/core/thread_fan.h"

#include <system_error>
#include <thread>

namespace dlr {

int ThreadFan::ran() const {
  int n = 0;
  for (char s : started) n += s ? 1 : 0;
  return n;
}

ThreadFan run_on_threads(int n, const std::function<Status(int)>& body) {
  ThreadFan fan;
  fan.status.resize(size_t(n));
  fan.started.assign(size_t(n), 0);
  std::vector<std::thread> helpers;
  helpers.reserve(size_t(n));
  for (int t = 1; t < n; ++t) {
    try {
      helpers.emplace_back([&fan, &body, t] { fan.status[size_t(t)] = body(t); });
      fan.started[size_t(t)] = 1;
    } catch (const std::system_error&) {
      // left out: the caller covers index t
    }
  }
  fan.started[0] = 1;
  fan.status[0] = body(0);
  for (std::thread& h : helpers) h.join();
  return fan;
}

}  // namespace dlr
