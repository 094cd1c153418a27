// Fixtures for tests that run whole sessions: every network output of one inference,
// exact comparison of detections, and a patterned test image.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/session.h"

namespace dlr::test {

// Every network output (each yolo/region head, fp32) of one inference of `s` on `input`
// (fp32 NCHW, one image), through the engine: set_input, run, output. Fails the current
// test (EXPECT) on an error.
std::vector<std::vector<float>> network_heads(Session& s, const std::vector<float>& input);
// Bit-for-bit equality of two sets of heads (NaN-safe: compares the bytes).
bool same_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b);
// Largest |a - b| over each head, relative to that head's largest |b| (at least `floor`);
// the worst head's. a and b: the same heads, the same sizes.
double worst_relative(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                      double floor = 1e-30);
// Identical detections: boxes, class and probability compared bit for bit.
bool same_detections(const std::vector<Detection>& a, const std::vector<Detection>& b);
// A w x h RGB image with a deterministic pattern for `seed`, its pixels in *pixels.
ImageU8 pattern_image(std::vector<uint8_t>* pixels, int w, int h, int seed);

}  // namespace dlr::test
