// Shared fixtures for tests that run whole networks: synthetic weights generated
// once per process, random inputs, error norms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/core/status.h"

namespace dlr::test {

// Path of synthetic weights for `cfg_path`: the CTest fixture's copy in synthetic_dir()
// when present (generated once per test run), else generated once per process into temp_dir().
// Fails the current test (ADD_FAILURE) and returns "" on error.
std::string synthetic_weights(const std::string& cfg_path, uint64_t seed = 1);
// w x h x 3 bytes of seeded noise (an 8-bit image).
std::vector<uint8_t> noise_pixels(int w, int h, unsigned seed);
// n images of 3 x h x w uniform [0,1) floats, seeded.
std::vector<float> random_input(int n, int c, int h, int w, uint32_t seed);
// ||a - b|| / ||b||
double rel_error(const float* a, const float* b, size_t n);
double rel_error(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace dlr::test
