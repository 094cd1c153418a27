// floats_to_halves (the vectorised conversion of fp16 weight preparation) against
// float_to_half, the reference: every result bit-identical, specials included.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/core/half.h"

namespace dlr {
namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

void expect_same(const std::vector<float>& in) {
  std::vector<uint16_t> fast(in.size() + 1, 0xabcd);
  floats_to_halves(in.data(), fast.data(), int64_t(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], 4);
    ASSERT_EQ(fast[i], float_to_half(in[i])) << "float bits 0x" << std::hex << bits << " at " << std::dec << i;
  }
  EXPECT_EQ(fast[in.size()], 0xabcd) << "wrote past the end";
}

TEST(Half, VectorConversionMatchesTheReferenceOnSpecialValues) {
  std::vector<float> in;
  for (uint32_t b : {0x00000000u, 0x80000000u, 0x00000001u, 0x33000000u, 0x33000001u, 0x337fffffu, 0x38800000u,
                     0x387fffffu, 0x38000000u, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477fffffu, 0x7f7fffffu,
                     0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x7fa00000u, 0x3f800000u,
                     0x3f801000u, 0x3f803000u, 0x3f802fffu})
    in.push_back(from_bits(b));
  for (float v : {65504.0f, 65519.0f, 65520.0f, -65504.0f, 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f})
    in.push_back(v);
  // Every length's tail (the vector path handles 8 at a time).
  for (size_t n = 0; n <= in.size(); ++n) expect_same(std::vector<float>(in.begin(), in.begin() + long(n)));
}

TEST(Half, VectorConversionMatchesTheReferenceAcrossAllExponents) {
  // About 17 million bit patterns spread evenly over all 2^32 (a prime stride), so
  // every exponent and sign is visited with many mantissas.
  std::vector<float> in;
  in.reserve(size_t(1) << 24);
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 251) in.push_back(from_bits(uint32_t(b)));
  expect_same(in);
}

}  // namespace
}  // namespace dlr
