// run_on_threads: every index's body runs once, index 0 on the calling thread and the
// others on threads of their own, at the same time; each index's status comes back.
#include "runtime/core/thread_fan.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace dlr {
namespace {

TEST(ThreadFan, EveryIndexRunsOnceIndexZeroOnTheCaller) {
  for (int n : {1, 2, 5}) {
    std::mutex mu;
    std::vector<int> runs(size_t(n), 0);
    std::set<std::thread::id> ids;
    std::thread::id zero;
    const ThreadFan fan = run_on_threads(n, [&](int t) -> Status {
      std::lock_guard<std::mutex> lk(mu);
      ++runs[size_t(t)];
      ids.insert(std::this_thread::get_id());
      if (t == 0) zero = std::this_thread::get_id();
      return t == 1 ? internal_error("index 1 fails") : Status();
    });
    ASSERT_EQ(fan.status.size(), size_t(n));
    ASSERT_EQ(fan.started.size(), size_t(n));
    EXPECT_EQ(fan.ran(), n);
    for (int t = 0; t < n; ++t) {
      EXPECT_EQ(runs[size_t(t)], 1) << "index " << t;
      EXPECT_EQ(fan.status[size_t(t)].ok(), t != 1) << "index " << t;
    }
    EXPECT_EQ(zero, std::this_thread::get_id());
    EXPECT_EQ(ids.size(), size_t(n));  // a thread per index
  }
}

// The bodies overlap: each waits until all have started, which only threads at once allow.
TEST(ThreadFan, BodiesRunAtTheSameTime) {
  constexpr int kN = 4;
  std::atomic<int> arrived{0};
  const ThreadFan fan = run_on_threads(kN, [&](int) -> Status {
    ++arrived;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (arrived.load() < kN)
      if (std::chrono::steady_clock::now() > deadline) return internal_error("the others never arrived");
    return Status();
  });
  for (const Status& s : fan.status) EXPECT_TRUE(s.ok()) << s.to_string();
}

}  // namespace
}  // namespace dlr
