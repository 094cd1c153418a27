// split_warm_up (runtime/warm_split.h): the convolutions dealt to the threads, each on a
// slice of the engine's workspace, and those too large for a slice run after them.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "runtime/warm_split.h"

namespace dlr {
namespace {

std::vector<WarmItem> items_of(const std::vector<int64_t>& workspaces) {
  std::vector<WarmItem> v;
  for (size_t i = 0; i < workspaces.size(); ++i) v.push_back({int(10 + i), workspaces[i]});
  return v;
}

TEST(WarmSplit, DealsTheItemsInTurnOnSlicesOfTheWorkspace) {
  const WarmSplit s = split_warm_up(items_of({0, 100, 2000, 512, 0, 30}), 3, 8192);
  ASSERT_EQ(s.threads.size(), 3u);
  EXPECT_EQ(s.slice_bytes, 2560);  // 8192 / 3 = 2730, down to a multiple of 256
  EXPECT_EQ(s.threads[0], (std::vector<int>{0, 3}));
  EXPECT_EQ(s.threads[1], (std::vector<int>{1, 4}));
  EXPECT_EQ(s.threads[2], (std::vector<int>{2, 5}));
  EXPECT_TRUE(s.after.empty());
}

TEST(WarmSplit, ItemsLargerThanASliceRunAfterTheThreads) {
  const WarmSplit s = split_warm_up(items_of({10, 5000, 10, 10, 4000}), 2, 8192);
  ASSERT_EQ(s.threads.size(), 2u);
  EXPECT_EQ(s.slice_bytes, 4096);
  EXPECT_EQ(s.threads[0], (std::vector<int>{0, 3}));
  EXPECT_EQ(s.threads[1], (std::vector<int>{2, 4}));
  EXPECT_EQ(s.after, (std::vector<int>{1}));
}

TEST(WarmSplit, FewerThreadsWhereTooFewItemsFitTheirSlices) {
  // Four threads would give slices of 256 bytes, which only one item fits; two give
  // 512, which two fit.
  const WarmSplit s = split_warm_up(items_of({100, 512, 900, 1000}), 4, 1024);
  ASSERT_EQ(s.threads.size(), 2u);
  EXPECT_EQ(s.slice_bytes, 512);
  EXPECT_EQ(s.threads[0], (std::vector<int>{0}));
  EXPECT_EQ(s.threads[1], (std::vector<int>{1}));
  EXPECT_EQ(s.after, (std::vector<int>{2, 3}));
}

TEST(WarmSplit, OneThreadUsesTheWholeWorkspace) {
  for (int threads : {-3, 0, 1}) {
    const WarmSplit s = split_warm_up(items_of({1000, 0, 999}), threads, 1000);
    ASSERT_EQ(s.threads.size(), 1u);
    EXPECT_EQ(s.slice_bytes, 1000);
    EXPECT_EQ(s.threads[0], (std::vector<int>{0, 1, 2}));
    EXPECT_TRUE(s.after.empty());
  }
  const WarmSplit none = split_warm_up({}, 4, 1 << 20);
  ASSERT_EQ(none.threads.size(), 1u);
  EXPECT_TRUE(none.threads[0].empty());
  EXPECT_TRUE(none.after.empty());
  // More threads than items: one item each.
  EXPECT_EQ(split_warm_up(items_of({0, 0}), 8, 0).threads.size(), 2u);
}

// Every item runs exactly once, no thread is idle, slices do not overlap and each item
// fits the workspace it is given.
TEST(WarmSplit, RandomSplitsRunEveryItemOnceWithinItsWorkspace) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const int n = int(rng() % 40);
    const int64_t workspace = int64_t(rng() % 5) == 0 ? 0 : int64_t(rng() % (1 << 22));
    std::vector<int64_t> ws;
    for (int i = 0; i < n; ++i) ws.push_back(workspace == 0 ? 0 : int64_t(rng() % uint64_t(workspace + 1)));
    const int threads = int(rng() % 10);
    const WarmSplit s = split_warm_up(items_of(ws), threads, workspace);
    ASSERT_GE(s.threads.size(), 1u);
    ASSERT_LE(int(s.threads.size()), std::max(1, threads));
    EXPECT_EQ(s.slice_bytes % 256 == 0 || s.threads.size() == 1, true);
    EXPECT_LE(s.slice_bytes * int64_t(s.threads.size()), workspace);
    std::vector<int> seen(size_t(n), 0);
    for (const std::vector<int>& t : s.threads) {
      if (s.threads.size() > 1) EXPECT_FALSE(t.empty());
      for (int i : t) {
        ++seen[size_t(i)];
        EXPECT_LE(ws[size_t(i)], s.slice_bytes);
      }
    }
    for (int i : s.after) {
      ++seen[size_t(i)];
      EXPECT_GT(ws[size_t(i)], s.slice_bytes);
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), n);
  }
}

}  // namespace
}  // namespace dlr
