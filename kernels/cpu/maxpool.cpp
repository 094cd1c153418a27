// maxpool: Darknet max pooling (maxpool_layer.c forward_maxpool_layer), fp32 NCHW.
//
// Contract (Darknet src/maxpool_layer.c):
//  - Hout = (H + padding - size)/stride_y + 1, Wout = (W + padding - size)/stride_x + 1
//    with `padding` the TOTAL padding (asserted against the out view), out.c == in.c;
//  - output (oy, ox) takes the max over input rows oy*stride_y - padding/2 + [0, size)
//    and columns ox*stride_x - padding/2 + [0, size); taps outside the image are
//    ignored (Darknet's -FLT_MAX), a window with no tap inside yields -FLT_MAX;
//  - comparisons are `v > max`, as Darknet (a NaN input never wins).
// Stride 1 on both axes (SPP 5/9/13, yolov3-tiny's 2/1) is computed separably: the
// valid taps form a rectangle, so a column max followed by a row max is the same max;
// each column max remembers its row so that, of equal maxima (+0 and -0), the first in
// Darknet's row-major scan wins, as in the direct loop.
// OpenMP over (image, channel) planes.
#include <algorithm>
#include <cfloat>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

namespace {

struct PoolGeom {
  int h = 0, w = 0, oh = 0, ow = 0;
  int size = 1, sx = 1, sy = 1;
  int off = 0;  // window start offset: -padding/2
};

inline float vmax(float m, float v) { return v > m ? v : m; }

// Output positions [lo, hi) whose tap o*stride + off lies in [0, size).
inline void tap_range(int off, int stride, int size, int out_size, int* lo, int* hi) {
  const int l = off >= 0 ? 0 : (-off + stride - 1) / stride;
  const int last = size - 1 - off;
  const int h = last < 0 ? 0 : last / stride + 1;
  *lo = std::min(l, out_size);
  *hi = std::max(*lo, std::min(h, out_size));
}

// General strides: accumulate tap by tap into the output plane.
void pool_plane_general(const float* x, const PoolGeom& g, float* y) {
  std::fill(y, y + int64_t(g.oh) * g.ow, -FLT_MAX);
  for (int ky = 0; ky < g.size; ++ky) {
    int ylo, yhi;
    tap_range(g.off + ky, g.sy, g.h, g.oh, &ylo, &yhi);
    for (int kx = 0; kx < g.size; ++kx) {
      const int offx = g.off + kx;
      int xlo, xhi;
      tap_range(offx, g.sx, g.w, g.ow, &xlo, &xhi);
      for (int oy = ylo; oy < yhi; ++oy) {
        const float* row = x + int64_t(oy * g.sy + g.off + ky) * g.w;  // tap ox reads row[ox*sx + offx]
        float* o = y + int64_t(oy) * g.ow;
        if (g.sx == 1) {
          const float* src = row + xlo + offx;
          float* dst = o + xlo;
          for (int i = 0; i < xhi - xlo; ++i) dst[i] = vmax(dst[i], src[i]);
        } else {
          for (int ox = xlo; ox < xhi; ++ox) o[ox] = vmax(o[ox], row[ox * g.sx + offx]);
        }
      }
    }
  }
}

constexpr int kMaxSeparableWidth = 4096;  // stack row buffer of the separable path

// Stride 1 on both axes: per output row, the column max over the valid rows into
// `colmax` (W floats, with the row of each in `colrow`), then a row max over the valid
// columns taking, of equal values, the one from the earliest row.
void pool_plane_stride1(const float* x, const PoolGeom& g, float* y) {
  float colmax[kMaxSeparableWidth];
  int colrow[kMaxSeparableWidth];
  for (int oy = 0; oy < g.oh; ++oy) {
    const int y0 = std::max(0, oy + g.off);
    const int y1 = std::min(g.h, oy + g.off + g.size);
    float* o = y + int64_t(oy) * g.ow;
    if (y0 >= y1) {
      std::fill(o, o + g.ow, -FLT_MAX);
      continue;
    }
    std::fill(colmax, colmax + g.w, -FLT_MAX);
    std::fill(colrow, colrow + g.w, g.h);
    for (int iy = y0; iy < y1; ++iy) {
      const float* row = x + int64_t(iy) * g.w;
      for (int ix = 0; ix < g.w; ++ix) {
        const bool take = row[ix] > colmax[ix];
        colmax[ix] = take ? row[ix] : colmax[ix];
        colrow[ix] = take ? iy : colrow[ix];
      }
    }
    for (int ox = 0; ox < g.ow; ++ox) {
      const int x0 = std::max(0, ox + g.off);
      const int x1 = std::min(g.w, ox + g.off + g.size);
      float m = -FLT_MAX;
      int m_row = g.h;
      for (int ix = x0; ix < x1; ++ix) {
        // equal values differ only as +0 / -0: the earlier row's wins (row-major order)
        if (colmax[ix] > m || (colmax[ix] == m && colrow[ix] < m_row)) {
          m = colmax[ix];
          m_row = colrow[ix];
        }
      }
      o[ox] = m;
    }
  }
}

}  // namespace

void maxpool(const MaxPoolParams& p, const TensorView& in, const TensorView& out) {
  DLR_ASSERT(in.dtype == DType::kF32 && in.layout == Layout::kNCHW && in.data != nullptr);
  DLR_ASSERT(out.dtype == DType::kF32 && out.layout == Layout::kNCHW && out.data != nullptr);
  DLR_ASSERT(p.size >= 1 && p.stride_x >= 1 && p.stride_y >= 1 && p.padding >= 0);
  DLR_ASSERT(in.n == out.n && in.c == out.c);
  DLR_ASSERT(out.h == (in.h + p.padding - p.size) / p.stride_y + 1);
  DLR_ASSERT(out.w == (in.w + p.padding - p.size) / p.stride_x + 1);
  DLR_ASSERT(out.h >= 1 && out.w >= 1);
  PoolGeom g;
  g.h = in.h;
  g.w = in.w;
  g.oh = out.h;
  g.ow = out.w;
  g.size = p.size;
  g.sx = p.stride_x;
  g.sy = p.stride_y;
  g.off = -(p.padding / 2);
  const bool separable = g.sx == 1 && g.sy == 1 && g.w <= kMaxSeparableWidth;
  const int64_t in_plane = int64_t(g.h) * g.w;
  const int64_t out_plane = int64_t(g.oh) * g.ow;
  const int64_t planes = int64_t(in.n) * in.c;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < planes; ++i) {
    const int b = int(i / in.c);
    const int ch = int(i % in.c);
    const float* x = in.f32() + b * in.n_stride + ch * in_plane;
    float* y = out.f32() + b * out.n_stride + ch * out_plane;
    if (separable) {
      pool_plane_stride1(x, g, y);
    } else {
      pool_plane_general(x, g, y);
    }
  }
}

// Entry point of [maxpool] (cpu_ops.h OpCall).
void run_maxpool(const OpCall& call) { maxpool(call.p<MaxPoolParams>(), call.in[0], call.out); }

}  // namespace dlr::cpu
