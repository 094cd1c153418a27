// MirroredBuffer: the second half of the address range is the first half's memory,
// so a region that crosses the end of the ring is one contiguous pointer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

#include "runtime/cuda/mirrored_buffer.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr {
namespace {

TEST(MirroredBuffer, BothMappingsAreTheSameBytes) {
  DLR_REQUIRE_GPU();
  Expected<int64_t> g = cuda::MirroredBuffer::granularity(0);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  if (*g == 0) GTEST_SKIP() << "device 0 has no virtual memory management";
  const size_t bytes = size_t(2 * *g);
  Expected<cuda::MirroredBuffer> m = cuda::MirroredBuffer::alloc(0, bytes);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_EQ(m->bytes(), bytes);
  char* base = m->data();

  // Write through the first mapping, read through the second.
  std::vector<uint32_t> pattern(bytes / 4);
  std::iota(pattern.begin(), pattern.end(), 7u);
  ASSERT_EQ(test::to_device(base, pattern.data(), bytes), cudaSuccess);
  std::vector<uint32_t> back(bytes / 4, 0);
  ASSERT_EQ(cudaMemcpy(back.data(), base + bytes, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, pattern);

  // A copy crossing the wrap (last 64 KiB + first 64 KiB) lands at both ends of the ring.
  const size_t span = 128 << 10, start = bytes - span / 2;
  std::vector<uint32_t> wrap(span / 4);
  std::iota(wrap.begin(), wrap.end(), 1000000u);
  ASSERT_EQ(test::to_device(base + start, wrap.data(), span), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(back.data(), base, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < span / 8; ++i) {
    ASSERT_EQ(back[start / 4 + i], wrap[i]) << i;               // tail of the ring
    ASSERT_EQ(back[i], wrap[span / 8 + i]) << i;                // head of the ring
  }
  EXPECT_EQ(back[span / 8], pattern[span / 8]);                 // untouched bytes kept

  // Moves keep ownership single.
  cuda::MirroredBuffer moved = std::move(*m);
  EXPECT_EQ(moved.data(), base);
  EXPECT_EQ(m->data(), nullptr);
}

TEST(MirroredBuffer, SizeMustBeWholeMappingUnits) {
  DLR_REQUIRE_GPU();
  Expected<int64_t> g = cuda::MirroredBuffer::granularity(0);
  ASSERT_TRUE(g.ok());
  if (*g == 0) GTEST_SKIP() << "device 0 has no virtual memory management";
  Expected<cuda::MirroredBuffer> m = cuda::MirroredBuffer::alloc(0, size_t(*g) + 256);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("expected a positive multiple of"), std::string::npos) << m.status().message();
}

// Device memory in use (whole 2 MiB pages), after the device is idle.
int64_t device_used() {
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  size_t free_b = 0, total = 0;
  if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) return -1;
  return int64_t(total - free_b);
}

// Sessions of different pool sizes come and go in one process (a fault sweep opens
// thousands): every ring's memory, and whatever the driver needed to map it, must come
// back. Rings of 1 to 40 mapping units, each filled by a copy, each freed
// before the next; the used memory after each is printed and must end where it began
// (one page of slack: cudaMemGetInfo counts whole pages).
TEST(MirroredBuffer, RingsOfEverySizeGiveTheirMemoryBack) {
  DLR_REQUIRE_GPU();
  Expected<int64_t> g = cuda::MirroredBuffer::granularity(0);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  if (*g == 0) GTEST_SKIP() << "device 0 has no virtual memory management";
  {  // the first ring of the process may set up what every later one shares
    Expected<cuda::MirroredBuffer> m = cuda::MirroredBuffer::alloc(0, size_t(*g));
    ASSERT_TRUE(m.ok()) << m.status().to_string();
  }
  const int64_t used0 = device_used();
  ASSERT_GE(used0, 0);
  int64_t worst = 0;
  for (int round = 0; round < 2; ++round)
    for (int units = 1; units <= 40; ++units) {
      const size_t bytes = size_t(units) * size_t(*g);
      {
        Expected<cuda::MirroredBuffer> m = cuda::MirroredBuffer::alloc(0, bytes);
        ASSERT_TRUE(m.ok()) << m.status().to_string();
        std::vector<uint8_t> fill(bytes, uint8_t(units));  // a copy in, as the ring's units land
        ASSERT_EQ(cudaMemcpy(m->data(), fill.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
        // A copy from pageable memory may still be landing when cudaMemcpy returns, and a
        // ring must be idle when it goes (mirrored_buffer.h).
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      }
      const int64_t excess = device_used() - used0;
      worst = std::max(worst, excess);
      if (excess > 0) std::printf("ring of %d units (round %d): %lld bytes above the start\n", units, round, (long long)excess);
    }
  std::printf("rings of 1-40 units, two rounds: at most %lld bytes above the start, %lld at the end\n", (long long)worst,
              (long long)(device_used() - used0));
  EXPECT_LE(device_used(), used0 + (int64_t(2) << 20));
}

}  // namespace
}  // namespace dlr
