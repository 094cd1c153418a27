// Where each model's stream starts in the shared ring (runtime/multi/ring_layout.h): the
// cycle closes (the last stream plus its gap ends where the first starts); a successor
// that prefetches starts right after its predecessor unless the gap leaves its prefetch
// clear of the predecessor's bytes; the gap goes after a stream whose successor
// prefetches nothing, else to the largest slack, else after the stream whose successor
// prefetches least; with no prefetch at all the gap stays at the wrap (the layout
// before); the four-detector round of issue 12, where the gap used to push yolov4's
// prefetch onto yolo-fastest's unreleased bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/multi/ring_layout.h"

namespace dlr {
namespace {

constexpr int64_t kMiB = 1 << 20;

int64_t mod(int64_t x, int64_t r) { return ((x % r) + r) % r; }

// Gap after stream i (before stream i + 1, cyclically).
std::vector<int64_t> gaps(const std::vector<int64_t>& stream, const std::vector<int64_t>& starts, int64_t ring) {
  const size_t n = stream.size();
  std::vector<int64_t> g(n);
  for (size_t i = 0; i < n; ++i) g[i] = mod(starts[(i + 1) % n] - starts[i] - stream[i], ring);
  return g;
}

// Every prefetching successor either follows its predecessor directly or stays clear of
// the predecessor's last min(stream, ring) bytes.
void expect_no_prefetch_runs_into_its_predecessor(const std::vector<int64_t>& stream,
                                                  const std::vector<int64_t>& prefetch,
                                                  const std::vector<int64_t>& starts, int64_t ring) {
  const std::vector<int64_t> g = gaps(stream, starts, ring);
  for (size_t i = 0; i < stream.size(); ++i) {
    const int64_t p = prefetch[(i + 1) % stream.size()];
    if (p == 0 || g[i] == 0) continue;
    EXPECT_LE(g[i] + p + std::min(stream[i], ring), ring) << "pair " << i;
  }
}

TEST(RingLayout, TheFourDetectorRoundClosesAtYolov4AndPutsTheGapBeforeYolov3) {
  // yolov4 @608 (staging keeps some blobs out of the ring), yolov3 @608, yolov4-tiny @416,
  // yolo-fastest @416 in a 38 MiB ring; yolov3 prefetches nothing (yolov4 fills the ring
  // to its end).
  const int64_t ring = 38 * kMiB;
  const std::vector<int64_t> stream = {104 * kMiB, 61 * kMiB, 11 * kMiB + kMiB / 2, kMiB / 2};
  const std::vector<int64_t> prefetch = {37 * kMiB, 0, 11 * kMiB + kMiB / 2, kMiB / 2};
  const std::vector<int64_t> starts = ring_starts(stream, prefetch, ring);
  ASSERT_EQ(starts.size(), 4u);
  EXPECT_EQ(starts[0], 0);
  const std::vector<int64_t> g = gaps(stream, starts, ring);
  EXPECT_EQ(g[3], 0) << "yolov4's prefetch starts where yolo-fastest's stream ended";
  EXPECT_EQ(g[2], 0);
  EXPECT_EQ(g[1], 0);
  EXPECT_EQ(g[0], mod(-(104 + 61 + 11 + 1) * kMiB, ring)) << "the whole gap before yolov3, which prefetches nothing";
  expect_no_prefetch_runs_into_its_predecessor(stream, prefetch, starts, ring);
}

TEST(RingLayout, WithoutPrefetchTheGapStaysAtTheWrap) {
  const int64_t ring = 10 * kMiB;
  const std::vector<int64_t> stream = {7 * kMiB, 4 * kMiB, 3 * kMiB};
  const std::vector<int64_t> starts = ring_starts(stream, {0, 0, 0}, ring);
  EXPECT_EQ(starts, (std::vector<int64_t>{0, 7 * kMiB, 1 * kMiB}));  // each where the previous ended
}

TEST(RingLayout, OneModelAndNone) {
  EXPECT_EQ(ring_starts({5 * kMiB}, {2 * kMiB}, 8 * kMiB), std::vector<int64_t>{0});
  EXPECT_TRUE(ring_starts({}, {}, 8 * kMiB).empty());
}

TEST(RingLayout, TheGapGoesToTheLargestSlackThenTheNext) {
  // Every successor prefetches. Slacks: pair 0 (a 2 MiB stream, then a 3 MiB prefetch):
  // 20 - 2 - 3 = 15; pair 1 (8, then 1): 11; pair 2 (20 = the ring, then 4): 0.
  const int64_t ring = 20 * kMiB;
  const std::vector<int64_t> stream = {2 * kMiB, 8 * kMiB, 20 * kMiB + 3 * kMiB};  // sum 33: gap 7
  const std::vector<int64_t> prefetch = {4 * kMiB, 3 * kMiB, 1 * kMiB};
  std::vector<int64_t> g = gaps(stream, ring_starts(stream, prefetch, ring), ring);
  EXPECT_EQ(g, (std::vector<int64_t>{7 * kMiB, 0, 0}));
  // A longer round (sum 21: gap 19): 15 after stream 0, the other 4 after stream 1.
  const std::vector<int64_t> longer = {2 * kMiB, 8 * kMiB, 11 * kMiB};
  const std::vector<int64_t> starts = ring_starts(longer, prefetch, ring);
  g = gaps(longer, starts, ring);
  EXPECT_EQ(g[0], 15 * kMiB);
  EXPECT_EQ(g[1], 4 * kMiB);
  EXPECT_EQ(g[2], 0);
  expect_no_prefetch_runs_into_its_predecessor(longer, prefetch, starts, ring);
}

TEST(RingLayout, WhatNoSlackHoldsGoesBeforeTheSmallestPrefetch) {
  // Every stream fills the ring and every successor prefetches: no slack anywhere.
  const int64_t ring = 16 * kMiB;
  const std::vector<int64_t> stream = {20 * kMiB, 17 * kMiB, 18 * kMiB};  // sum 55: gap 9
  const std::vector<int64_t> prefetch = {6 * kMiB, 2 * kMiB, 5 * kMiB};
  const std::vector<int64_t> g = gaps(stream, ring_starts(stream, prefetch, ring), ring);
  EXPECT_EQ(g, (std::vector<int64_t>{9 * kMiB, 0, 0}));  // stream 1's prefetch, 2 MiB, is the least
}

TEST(RingLayout, TheCycleAlwaysCloses) {
  const int64_t ring = 12 * kMiB + 4096;
  for (int a = 0; a < 30; a += 7)
    for (int b = 1; b < 30; b += 5) {
      const std::vector<int64_t> stream = {a * kMiB + 512, b * kMiB, 3 * kMiB};
      const std::vector<int64_t> prefetch = {std::min<int64_t>(ring, 2 * kMiB), (b % 3) * kMiB, kMiB};
      const std::vector<int64_t> starts = ring_starts(stream, prefetch, ring);
      int64_t sum = 0;
      for (int64_t x : gaps(stream, starts, ring)) sum += x;
      EXPECT_EQ(mod(sum + stream[0] + stream[1] + stream[2], ring), 0) << a << " " << b;
      for (int64_t s : starts) {
        EXPECT_GE(s, 0);
        EXPECT_LT(s, ring);
      }
    }
}

}  // namespace
}  // namespace dlr
