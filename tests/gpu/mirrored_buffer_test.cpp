// MirroredBuffer: the second half of the address range is the first half's memory,
// so a region that crosses the end of the ring is one contiguous pointer.
#include <gtest/gtest.h>

#include <cstdint>
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
  ASSERT_EQ(cudaMemcpy(base, pattern.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<uint32_t> back(bytes / 4, 0);
  ASSERT_EQ(cudaMemcpy(back.data(), base + bytes, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, pattern);

  // A copy crossing the wrap (last 64 KiB + first 64 KiB) lands at both ends of the ring.
  const size_t span = 128 << 10, start = bytes - span / 2;
  std::vector<uint32_t> wrap(span / 4);
  std::iota(wrap.begin(), wrap.end(), 1000000u);
  ASSERT_EQ(cudaMemcpy(base + start, wrap.data(), span, cudaMemcpyHostToDevice), cudaSuccess);
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

}  // namespace
}  // namespace dlr
