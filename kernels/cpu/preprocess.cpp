// Image pre-processing exactly like Darknet (Darknet src/image.c, src/image_opencv.cpp):
// load_image_cv's BGR->RGB + /255.f, resize_image (align-corners separable
// bilinear, float math) and letterbox_image (0.5 canvas, centred paste).
//
// Bit-exactness: every value is computed with the same float operations, in the
// same order, as Darknet's C source. Floating-point contraction into FMA would
// change the last bit, so it is switched off for this file (GCC defaults to
// -ffp-contract=fast in C++ and this library is built with -mfma).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <array>
#include <cstring>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {
namespace {

// Below this many output floats a pass runs on the calling thread only.
constexpr int64_t kParallelMin = 1 << 15;

// v/255.f for every byte value (float division, as load_image_cv's data/255.0f).
const std::array<float, 256>& byte_to_unit() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = static_cast<float>(i) / 255.f;
    return t;
  }();
  return table;
}

// Darknet's scale (float)(in - 1) / (out - 1). out == 1 would divide by zero in
// Darknet; the sampling below never uses the scale for the horizontal pass then
// (the single column is the last one), and uses 0 (row 0) for the vertical pass.
inline float align_corners_scale(int in, int out) {
  return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.f;
}

}  // namespace

void image_to_planar(const ImageU8& img, float* dst) {
  DLR_ASSERT(img.data != nullptr && dst != nullptr);
  DLR_ASSERT(img.width > 0 && img.height > 0);
  DLR_ASSERT(img.channels == 1 || img.channels == 3 || img.channels == 4);
  const int w = img.width;
  const int h = img.height;
  const int ch = img.channels;
  const int64_t stride = img.row_stride > 0 ? img.row_stride : int64_t(w) * ch;  // 0 = packed rows
  DLR_ASSERT(stride >= int64_t(w) * ch);
  const int64_t plane = int64_t(w) * h;
  // Byte offsets of R, G, B inside a pixel (gray: all 0, like stbi/imread expanding to 3).
  int off_r = 0, off_g = 0, off_b = 0;
  if (ch >= 3) {
    off_r = img.bgr ? 2 : 0;
    off_g = 1;
    off_b = img.bgr ? 0 : 2;
  }
  const float* lut = byte_to_unit().data();
  float* r_plane = dst;
  float* g_plane = dst + plane;
  float* b_plane = dst + 2 * plane;
#pragma omp parallel for schedule(static) if (plane * 3 >= kParallelMin)
  for (int y = 0; y < h; ++y) {
    const uint8_t* src = img.data + y * stride;
    const int64_t row = int64_t(y) * w;
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = src + int64_t(x) * ch;
      r_plane[row + x] = lut[p[off_r]];
      g_plane[row + x] = lut[p[off_g]];
      b_plane[row + x] = lut[p[off_b]];
    }
  }
}

void resize_darknet(const float* src, int c, int ih, int iw, float* dst, int oh, int ow, float* tmp) {
  DLR_ASSERT(src != nullptr && dst != nullptr);
  DLR_ASSERT(c > 0 && ih > 0 && iw > 0 && oh > 0 && ow > 0);
  if (ih == oh && iw == ow) {  // Darknet (hank-ai) returns copy_image; the formula is the identity too
    std::memcpy(dst, src, sizeof(float) * size_t(c) * ih * iw);
    return;
  }
  DLR_ASSERT(tmp != nullptr);
  const float w_scale = align_corners_scale(iw, ow);
  const float h_scale = align_corners_scale(ih, oh);

  // Pass 1: horizontal, src (c x ih x iw) -> part (c x ih x ow).
  float* part = tmp;
  const int rows1 = c * ih;
#pragma omp parallel for schedule(static) if (int64_t(rows1) * ow >= kParallelMin)
  for (int kr = 0; kr < rows1; ++kr) {
    const float* p = src + int64_t(kr) * iw;
    float* q = part + int64_t(kr) * ow;
    for (int col = 0; col < ow; ++col) {
      float val;
      if (col == ow - 1 || iw == 1) {
        val = p[iw - 1];
      } else {
        const float sx = col * w_scale;
        const int ix = static_cast<int>(sx);
        const float dx = sx - ix;
        // ix + 1 <= iw - 1 in exact arithmetic; the clamp only guards a rounding
        // overshoot (then dx == 0 and the second tap does not matter).
        const int ix1 = std::min(ix + 1, iw - 1);
        val = (1 - dx) * p[ix] + dx * p[ix1];
      }
      q[col] = val;
    }
  }

  // Pass 2: vertical, part (c x ih x ow) -> dst (c x oh x ow). The last row
  // (and a one-row source) takes only the (1-dy) term, as Darknet skips add_pixel.
  const int rows2 = c * oh;
#pragma omp parallel for schedule(static) if (int64_t(rows2) * ow >= kParallelMin)
  for (int kr = 0; kr < rows2; ++kr) {
    const int k = kr / oh;
    const int r = kr % oh;
    const float sy = r * h_scale;
    const int iy = static_cast<int>(sy);
    const float dy = sy - iy;
    const float* a = part + (int64_t(k) * ih + iy) * ow;
    float* o = dst + int64_t(kr) * ow;
    if (r == oh - 1 || ih == 1) {
      for (int col = 0; col < ow; ++col) o[col] = (1 - dy) * a[col];
    } else {
      const float* b = part + (int64_t(k) * ih + std::min(iy + 1, ih - 1)) * ow;
      for (int col = 0; col < ow; ++col) {
        const float first = (1 - dy) * a[col];  // set_pixel
        const float second = dy * b[col];       // add_pixel
        o[col] = first + second;
      }
    }
  }
}

void letterbox_size(int iw, int ih, int ow, int oh, int* new_w, int* new_h) {
  DLR_ASSERT(iw > 0 && ih > 0 && ow > 0 && oh > 0 && new_w && new_h);
  if (static_cast<float>(ow) / iw < static_cast<float>(oh) / ih) {
    *new_w = ow;
    *new_h = static_cast<int>((int64_t(ih) * ow) / iw);
  } else {
    *new_h = oh;
    *new_w = static_cast<int>((int64_t(iw) * oh) / ih);
  }
}

void letterbox_darknet(const float* src, int c, int ih, int iw, float* dst, int oh, int ow, float* tmp) {
  DLR_ASSERT(src != nullptr && dst != nullptr && tmp != nullptr);
  int new_w = 0, new_h = 0;
  letterbox_size(iw, ih, ow, oh, &new_w, &new_h);
  // new_w <= ow and new_h <= oh by construction, so the scratch layout of the
  // header (c*ih*ow for the resize pass, then c*oh*ow for the resized image) fits.
  DLR_ASSERT(new_w > 0 && new_h > 0 && new_w <= ow && new_h <= oh);
  float* resized = tmp + int64_t(c) * ih * ow;
  resize_darknet(src, c, ih, iw, resized, new_h, new_w, tmp);

  const int dx = (ow - new_w) / 2;
  const int dy = (oh - new_h) / 2;
  const int rows = c * oh;
#pragma omp parallel for schedule(static) if (int64_t(rows) * ow >= kParallelMin)
  for (int kr = 0; kr < rows; ++kr) {
    const int k = kr / oh;
    const int y = kr % oh;
    float* o = dst + int64_t(kr) * ow;
    const int sy = y - dy;
    if (sy < 0 || sy >= new_h) {
      std::fill(o, o + ow, 0.5f);
      continue;
    }
    std::fill(o, o + dx, 0.5f);
    std::memcpy(o + dx, resized + (int64_t(k) * new_h + sy) * new_w, sizeof(float) * new_w);
    std::fill(o + dx + new_w, o + ow, 0.5f);
  }
}

}  // namespace dlr::cpu
