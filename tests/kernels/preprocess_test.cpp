// Pre-processing vs Darknet (shared docs DARKNET.md 4.3): image_to_planar,
// resize_darknet (bit-exact against a direct transcription of resize_image),
// letterbox_size / letterbox_darknet geometry and fill.
//
// The reference, like the kernel (kernels/cpu/preprocess.cpp), must not contract a*b+c
// into an FMA: on aarch64, where FMA is part of the base instruction set, GCC's default
// -ffp-contract=fast did so and the reference was 1 ulp off the kernel (the arm64 run,
// docs/jetson.md); on x86-64 this file is built without -mfma and never could.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_ops.h"

namespace dlr::cpu {
namespace {

// Straightforward transcription of Darknet's resize_image on planar images with
// get_pixel/set_pixel/add_pixel, kept independent of the optimized kernel.
// Degenerate targets: w == 1 is defined by Darknet (c == w-1 takes the last
// column); h == 1 divides 0 by 0 / x by 0 in Darknet, here it samples row 0.
struct PlanarImage {
  int w = 0, h = 0, c = 0;
  std::vector<float> data;
  PlanarImage(int w_, int h_, int c_) : w(w_), h(h_), c(c_), data(size_t(w_) * h_ * c_, 0.f) {}
  float get(int x, int y, int k) const { return data[(size_t(k) * h + y) * w + x]; }
  void set(int x, int y, int k, float v) { data[(size_t(k) * h + y) * w + x] = v; }
  void add(int x, int y, int k, float v) { data[(size_t(k) * h + y) * w + x] += v; }
};

PlanarImage reference_resize(const PlanarImage& im, int w, int h) {
  PlanarImage resized(w, h, im.c);
  PlanarImage part(w, im.h, im.c);
  const float w_scale = w > 1 ? (float)(im.w - 1) / (w - 1) : 0.f;
  const float h_scale = h > 1 ? (float)(im.h - 1) / (h - 1) : 0.f;
  for (int k = 0; k < im.c; ++k) {
    for (int r = 0; r < im.h; ++r) {
      for (int c = 0; c < w; ++c) {
        float val = 0;
        if (c == w - 1 || im.w == 1) {
          val = im.get(im.w - 1, r, k);
        } else {
          float sx = c * w_scale;
          int ix = (int)sx;
          float dx = sx - ix;
          val = (1 - dx) * im.get(ix, r, k) + dx * im.get(ix + 1, r, k);
        }
        part.set(c, r, k, val);
      }
    }
  }
  for (int k = 0; k < im.c; ++k) {
    for (int r = 0; r < h; ++r) {
      float sy = r * h_scale;
      int iy = (int)sy;
      float dy = sy - iy;
      for (int c = 0; c < w; ++c) {
        float val = (1 - dy) * part.get(c, iy, k);
        resized.set(c, r, k, val);
      }
      if (r == h - 1 || im.h == 1) continue;
      for (int c = 0; c < w; ++c) {
        float val = dy * part.get(c, iy + 1, k);
        resized.add(c, r, k, val);
      }
    }
  }
  return resized;
}

PlanarImage random_image(int w, int h, int c, uint32_t seed) {
  PlanarImage im(w, h, c);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  for (float& v : im.data) v = static_cast<float>(byte(rng)) / 255.f;
  return im;
}

std::vector<float> run_resize(const PlanarImage& im, int ow, int oh) {
  std::vector<float> tmp(size_t(im.c) * im.h * ow, -1.f);
  std::vector<float> out(size_t(im.c) * oh * ow, -1.f);
  resize_darknet(im.data.data(), im.c, im.h, im.w, out.data(), oh, ow, tmp.data());
  return out;
}

// Bitwise equality (also distinguishes -0/+0 and would catch NaN).
void expect_bits_equal(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      if (bad < 5) ADD_FAILURE() << "index " << i << ": got " << got[i] << " want " << want[i];
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0u);
}

struct ResizeCase {
  int iw, ih, ow, oh;
};

TEST(PreprocessResize, MatchesDarknetFormulaBitExact) {
  const ResizeCase cases[] = {
      {7, 5, 13, 11},     // up both
      {20, 17, 6, 9},     // down both
      {768, 576, 608, 608},  // dog.jpg -> yolov4 input (down in x, up in y)
      {768, 576, 608, 456},  // dog.jpg letterbox inner size
      {640, 480, 416, 416},
      {31, 64, 97, 3},    // non-square, up x / down y
      {2, 2, 42, 42},     // h_scale product rounds below 1 on the last row (Darknet quirk)
      {5, 8, 5, 3},       // same width, different height
      {9, 4, 3, 4},       // same height, different width
      {1, 6, 4, 9},       // one-column source
      {6, 1, 9, 4},       // one-row source
      {6, 5, 1, 3},       // one-column target: Darknet takes the last column
      {6, 5, 4, 1},       // one-row target: row 0
      {1, 1, 3, 2},
  };
  uint32_t seed = 1;
  for (const ResizeCase& rc : cases) {
    SCOPED_TRACE(testing::Message() << rc.iw << "x" << rc.ih << " -> " << rc.ow << "x" << rc.oh);
    const PlanarImage im = random_image(rc.iw, rc.ih, 3, seed++);
    const PlanarImage want = reference_resize(im, rc.ow, rc.oh);
    expect_bits_equal(run_resize(im, rc.ow, rc.oh), want.data);
  }
}

TEST(PreprocessResize, TwoByTwoToThreeByThreeByHand) {
  PlanarImage im(2, 2, 1);
  im.data = {0.f, 1.f, 2.f, 3.f};
  const std::vector<float> want = {0.f, 0.5f, 1.f, 1.f, 1.5f, 2.f, 2.f, 2.5f, 3.f};
  expect_bits_equal(run_resize(im, 3, 3), want);
}

TEST(PreprocessResize, ThreeByOneToTwoByOneAndBackByHand) {
  PlanarImage row(3, 1, 1);
  row.data = {0.f, 0.25f, 1.f};
  // w_scale = 2: column 0 samples 0, column 1 is the last column -> p[2].
  expect_bits_equal(run_resize(row, 2, 1), {0.f, 1.f});
  PlanarImage two(2, 1, 1);
  two.data = {0.f, 1.f};
  // w_scale = 1/4: 0, .25, .5, .75, last column 1.
  expect_bits_equal(run_resize(two, 5, 1), {0.f, 0.25f, 0.5f, 0.75f, 1.f});
}

TEST(PreprocessResize, LastRowQuirkKeepsOnlyTheFirstTerm) {
  // 2 -> 42 rows: h_scale = 1/41 as float, 41*h_scale = 0.99999994, so the last
  // row uses iy = 0, dy = 0.99999994 and Darknet adds no dy term: the last row is
  // about 6e-8 * row 0 rather than row 1.
  PlanarImage im(1, 2, 1);
  im.data = {0.5f, 1.f};
  const std::vector<float> out = run_resize(im, 1, 42);
  const float h_scale = 1.f / 41.f;
  const float sy = 41 * h_scale;
  ASSERT_LT(sy, 1.f);
  const float dy = sy - static_cast<int>(sy);
  EXPECT_EQ(out[41], (1 - dy) * 0.5f);
  EXPECT_LT(out[41], 1e-6f);
  EXPECT_EQ(out[0], 0.5f);
}

TEST(PreprocessResize, SameSizeIsACopy) {
  const PlanarImage im = random_image(13, 7, 3, 99);
  expect_bits_equal(run_resize(im, 13, 7), im.data);
}

TEST(PreprocessLetterbox, SizeFormula) {
  int nw = 0, nh = 0;
  letterbox_size(768, 576, 608, 608, &nw, &nh);
  EXPECT_EQ(nw, 608);
  EXPECT_EQ(nh, 456);
  letterbox_size(300, 600, 416, 416, &nw, &nh);  // tall
  EXPECT_EQ(nw, 208);
  EXPECT_EQ(nh, 416);
  letterbox_size(500, 500, 416, 416, &nw, &nh);  // equal ratios -> else branch
  EXPECT_EQ(nw, 416);
  EXPECT_EQ(nh, 416);
  letterbox_size(1000, 333, 512, 512, &nw, &nh);  // integer division truncates
  EXPECT_EQ(nw, 512);
  EXPECT_EQ(nh, 333 * 512 / 1000);
  letterbox_size(333, 1000, 640, 480, &nw, &nh);
  EXPECT_EQ(nh, 480);
  EXPECT_EQ(nw, 333 * 480 / 1000);
}

// Checks the canvas: 0.5 outside [dx, dx+nw) x [dy, dy+nh), the resized image inside.
void check_letterbox(int iw, int ih, int ow, int oh, int want_nw, int want_nh, int want_dx, int want_dy) {
  SCOPED_TRACE(testing::Message() << iw << "x" << ih << " -> " << ow << "x" << oh);
  const int c = 3;
  const PlanarImage im = random_image(iw, ih, c, 7);
  std::vector<float> tmp(size_t(c) * ih * ow + size_t(c) * oh * ow, -1.f);
  std::vector<float> out(size_t(c) * oh * ow, -1.f);
  letterbox_darknet(im.data.data(), c, ih, iw, out.data(), oh, ow, tmp.data());
  int nw = 0, nh = 0;
  letterbox_size(iw, ih, ow, oh, &nw, &nh);
  ASSERT_EQ(nw, want_nw);
  ASSERT_EQ(nh, want_nh);
  const PlanarImage resized = reference_resize(im, nw, nh);
  size_t bad = 0;
  for (int k = 0; k < c; ++k) {
    for (int y = 0; y < oh; ++y) {
      for (int x = 0; x < ow; ++x) {
        const bool inside = x >= want_dx && x < want_dx + nw && y >= want_dy && y < want_dy + nh;
        const float want = inside ? resized.get(x - want_dx, y - want_dy, k) : 0.5f;
        if (out[(size_t(k) * oh + y) * ow + x] != want && ++bad < 5) {
          ADD_FAILURE() << "k " << k << " y " << y << " x " << x;
        }
      }
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(PreprocessLetterbox, Dog768x576To608) { check_letterbox(768, 576, 608, 608, 608, 456, 0, 76); }
TEST(PreprocessLetterbox, TallImage) { check_letterbox(300, 600, 416, 416, 208, 416, 104, 0); }
TEST(PreprocessLetterbox, OddPadding) { check_letterbox(100, 37, 64, 48, 64, 23, 0, 12); }
TEST(PreprocessLetterbox, SameAspectFillsCanvas) { check_letterbox(32, 32, 16, 16, 16, 16, 0, 0); }

TEST(PreprocessPlanar, BgrToRgbAndScale) {
  // 2x1 BGR image: pixel 0 = (B=10, G=20, R=30), pixel 1 = (B=255, G=0, R=128).
  const uint8_t bytes[] = {10, 20, 30, 255, 0, 128};
  ImageU8 img;
  img.data = bytes;
  img.width = 2;
  img.height = 1;
  img.channels = 3;
  img.row_stride = 6;
  img.bgr = true;
  float out[6];
  image_to_planar(img, out);
  EXPECT_EQ(out[0], 30.f / 255.f);   // R plane
  EXPECT_EQ(out[1], 128.f / 255.f);
  EXPECT_EQ(out[2], 20.f / 255.f);   // G plane
  EXPECT_EQ(out[3], 0.f);
  EXPECT_EQ(out[4], 10.f / 255.f);   // B plane
  EXPECT_EQ(out[5], 1.f);
  img.bgr = false;  // already RGB: no swap
  image_to_planar(img, out);
  EXPECT_EQ(out[0], 10.f / 255.f);
  EXPECT_EQ(out[1], 1.f);
  EXPECT_EQ(out[4], 30.f / 255.f);
  EXPECT_EQ(out[5], 128.f / 255.f);
}

TEST(PreprocessPlanar, EveryByteValueMatchesBothDarknetLoaders) {
  // image_to_planar on one image holding every byte value in every channel: each
  // output must be v/255.f (Darknet's load_image_cv, OpenCV builds) and equal to
  // (float)(v/255.) (load_image_stb, stb builds): the two agree for every byte.
  ImageU8 img;
  std::vector<uint8_t> bytes(256 * 3);
  for (int v = 0; v < 256; ++v)
    for (int k = 0; k < 3; ++k) bytes[size_t(v) * 3 + size_t(k)] = static_cast<uint8_t>((v + 85 * k) & 0xFF);
  img.data = bytes.data();
  img.width = 256;
  img.height = 1;
  img.channels = 3;
  img.row_stride = 256 * 3;
  img.bgr = false;
  std::vector<float> out(256 * 3, -1.f);
  image_to_planar(img, out.data());
  for (int plane = 0; plane < 3; ++plane) {
    for (int x = 0; x < 256; ++x) {
      const int v = bytes[size_t(x) * 3 + size_t(plane)];
      const float got = out[size_t(plane) * 256 + size_t(x)];
      EXPECT_EQ(got, static_cast<float>(v) / 255.f) << "plane " << plane << " byte " << v;
      EXPECT_EQ(got, static_cast<float>(v / 255.)) << "plane " << plane << " byte " << v;
    }
  }
}

TEST(PreprocessPlanar, RowPaddingIsSkipped) {
  const int w = 5, h = 4, stride = w * 3 + 7;
  std::vector<uint8_t> bytes(size_t(stride) * h, 0xEE);  // padding bytes are garbage
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int k = 0; k < 3; ++k) bytes[size_t(y) * stride + x * 3 + k] = static_cast<uint8_t>(y * 50 + x * 10 + k);
    }
  }
  ImageU8 img;
  img.data = bytes.data();
  img.width = w;
  img.height = h;
  img.channels = 3;
  img.row_stride = stride;
  img.bgr = true;
  std::vector<float> out(size_t(3) * w * h, -1.f);
  image_to_planar(img, out.data());
  for (int plane = 0; plane < 3; ++plane) {
    const int byte_index = 2 - plane;  // R plane reads byte 2 (BGR)
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const float want = static_cast<float>(y * 50 + x * 10 + byte_index) / 255.f;
        EXPECT_EQ(out[(size_t(plane) * h + y) * w + x], want) << plane << " " << y << " " << x;
      }
    }
  }
}

TEST(PreprocessPlanar, LargeImageParallelPathMatchesScalar) {
  const int w = 301, h = 217;
  std::vector<uint8_t> bytes(size_t(w) * h * 3);
  std::mt19937 rng(5);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng() & 0xFF);
  ImageU8 img;
  img.data = bytes.data();
  img.width = w;
  img.height = h;
  img.channels = 3;
  img.row_stride = w * 3;
  std::vector<float> out(size_t(3) * w * h, std::nanf(""));  // an element left unwritten stays NaN
  image_to_planar(img, out.data());
  // Every pixel: a thread-chunk boundary row (schedule(static) splits the 217 rows
  // between threads) or the last column must not be skipped or shifted.
  size_t bad = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = &bytes[(size_t(y) * w + x) * 3];
      for (int plane = 0; plane < 3; ++plane) {
        const float got = out[size_t(plane) * w * h + size_t(y) * w + x];
        if (got != p[2 - plane] / 255.f && ++bad <= 5)
          ADD_FAILURE() << "plane " << plane << " row " << y << " column " << x << ": got " << got;
      }
    }
  }
  EXPECT_EQ(bad, 0u);
}

}  // namespace
}  // namespace dlr::cpu
