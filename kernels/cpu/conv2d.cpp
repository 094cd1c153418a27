// conv2d: Darknet convolution, out = act(conv(in, weights) + bias), fp32 NCHW.
//
// Geometry contract (Darknet src/convolutional_layer.c):
//  - output size ignores dilation: Hout = (H + 2*padding - size)/stride_y + 1,
//    Wout = (W + 2*padding - size)/stride_x + 1 (asserted against the out view);
//  - with dilation d, taps are placed like Darknet's im2col_cpu_ext / cuDNN with
//    padding padding*d: output (oy, ox), kernel tap (ky, kx) reads input
//      iy = oy*stride_y - padding*d + ky*d,   ix = ox*stride_x - padding*d + kx*d
//    and taps outside the image read 0. Where Darknet's own im2col output size
//    agrees with the formula above (odd size with padding = size/2, the normal
//    case) this is exactly Darknet; elsewhere Darknet is inconsistent with itself
//    and this formula is the definition dlrun uses;
//  - size == 1 forces d = 1 (as the cfg parser does);
//  - groups: input channels [g*C/groups, (g+1)*C/groups) feed filters
//    [g*F/groups, (g+1)*F/groups); weights are OIHW [F][C/groups][size][size];
//  - bias [F] (nullptr: no bias), added after the convolution, then the activation.
//
// Strategy, per image and group (one OpenMP region each):
//  - depthwise (groups == C == F > 1): direct loop, OpenMP over channels;
//  - otherwise a GEMM W[F/g x K] * cols[K x Hout*Wout], cut into tasks of ~512
//    output columns (and filter chunks when the image is small); each task
//    im2cols its column tile into its thread's slot of scratch (1x1 stride-1 pad-0
//    convs read the input planes directly), runs a single-threaded sgemm and
//    applies bias + activation to its output block while it is in cache.
//    For small images with many filters, im2col runs first (OpenMP over tile x
//    kernel row) and the tasks then share it.
// Scratch: conv2d_scratch_floats(threads) = one K x tile_n slot per thread that can
// run at once (K = C/groups*size*size, tile_n ~512 columns), or, where im2col runs
// first, K * Hout*Wout floats (one group's whole im2col; small images only); 0 for
// depthwise and 1x1 stride-1 pad-0 convs. (Darknet's workspace is the whole im2col:
// 47.5 MiB for yolov4 @416's second layer, against 1.1 MiB for two slots here.)
// Input and output may be channel slices: per image their planes are contiguous.
// Accumulation order differs from Darknet's gemm (BLAS blocking); results agree to
// fp32 rounding (relative error ~1e-6), not bit for bit.
#include <algorithm>
#include <cstring>

#include <omp.h>

#include "kernels/cpu/threads.h"

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

namespace {

struct ConvGeom {
  int c = 0, h = 0, w = 0;    // input, per image
  int oh = 0, ow = 0;         // output
  int k = 1;                  // kernel size
  int sx = 1, sy = 1;         // strides
  int d = 1;                  // dilation (1 when k == 1)
  int pe = 0;                 // effective padding: padding * d
  int cg = 0, fg = 0;         // input channels / filters per group
  int64_t kdim = 0;           // GEMM K: cg * k * k
  int64_t n = 0;              // GEMM N: oh * ow
};

ConvGeom make_geom(const ConvParams& p, Shape3 in, Shape3 out) {
  DLR_ASSERT(p.size >= 1 && p.stride_x >= 1 && p.stride_y >= 1 && p.dilation >= 1 && p.padding >= 0);
  DLR_ASSERT(p.groups >= 1 && in.c % p.groups == 0 && p.filters % p.groups == 0);
  DLR_ASSERT(out.c == p.filters);
  DLR_ASSERT(out.h == (in.h + 2 * p.padding - p.size) / p.stride_y + 1);
  DLR_ASSERT(out.w == (in.w + 2 * p.padding - p.size) / p.stride_x + 1);
  DLR_ASSERT(out.h >= 1 && out.w >= 1);
  ConvGeom g;
  g.c = in.c;
  g.h = in.h;
  g.w = in.w;
  g.oh = out.h;
  g.ow = out.w;
  g.k = p.size;
  g.sx = p.stride_x;
  g.sy = p.stride_y;
  g.d = p.size == 1 ? 1 : p.dilation;
  g.pe = p.padding * g.d;
  g.cg = in.c / p.groups;
  g.fg = p.filters / p.groups;
  g.kdim = int64_t(g.cg) * g.k * g.k;
  g.n = int64_t(g.oh) * g.ow;
  return g;
}

bool is_depthwise(const ConvParams& p, Shape3 in) { return p.groups > 1 && p.groups == in.c && p.filters == in.c; }

bool is_pointwise(const ConvGeom& g) { return g.k == 1 && g.sx == 1 && g.sy == 1 && g.pe == 0; }

// Output columns [lo, hi) whose tap at kernel offset `off` (= k*d - pe) lands in [0, size).
inline void valid_range(int off, int stride, int size, int out_size, int* lo, int* hi) {
  // i = o*stride + off in [0, size)  <=>  o >= ceil(-off/stride) and o <= floor((size-1-off)/stride)
  const int l = off >= 0 ? 0 : (-off + stride - 1) / stride;
  const int last = size - 1 - off;
  const int h = last < 0 ? 0 : last / stride + 1;
  *lo = std::min(l, out_size);
  *hi = std::max(*lo, std::min(h, out_size));
}

// Output columns [n0, n1) (flattened oy*ow + ox) of im2col row r = (ci*k + ky)*k + kx,
// written to dst[0 .. n1-n0). Taps outside the image are 0.
void im2col_row(const float* x, const ConvGeom& g, int64_t r, int64_t n0, int64_t n1, float* dst) {
  const int kk = g.k * g.k;
  const int ci = int(r / kk);
  const int ky = int(r % kk) / g.k;
  const int kx = int(r % kk) % g.k;
  const int offy = ky * g.d - g.pe;
  const int offx = kx * g.d - g.pe;
  int xlo, xhi;
  valid_range(offx, g.sx, g.w, g.ow, &xlo, &xhi);
  const float* plane = x + int64_t(ci) * g.h * g.w;
  for (int64_t n = n0; n < n1;) {
    const int oy = int(n / g.ow);
    const int ox0 = int(n - int64_t(oy) * g.ow);
    const int ox1 = int(std::min<int64_t>(g.ow, ox0 + (n1 - n)));
    float* o = dst + (n - n0);  // o[i] is output column ox0 + i
    const int iy = oy * g.sy + offy;
    if (iy < 0 || iy >= g.h) {
      std::memset(o, 0, sizeof(float) * size_t(ox1 - ox0));
    } else {
      const float* row = plane + int64_t(iy) * g.w;  // tap ox reads row[ox*sx + offx]
      const int a = std::min(std::max(xlo, ox0), ox1);
      const int b = std::max(std::min(xhi, ox1), a);
      if (a > ox0) std::memset(o, 0, sizeof(float) * size_t(a - ox0));
      if (g.sx == 1) {
        if (b > a) std::memcpy(o + (a - ox0), row + a + offx, sizeof(float) * size_t(b - a));
      } else {
        for (int ox = a; ox < b; ++ox) o[ox - ox0] = row[ox * g.sx + offx];
      }
      if (ox1 > b) std::memset(o + (b - ox0), 0, sizeof(float) * size_t(ox1 - b));
    }
    n += ox1 - ox0;
  }
}

// Tiles follow the processors, not the team size: the tile shapes decide the GEMM's
// summation order, so results are the same bits for any thread count (a session's
// auto thread choice may change between calls, runtime/cpu/cpu_threads.h).
int tile_parallelism() {
  static const int kProcs = std::max(1, omp_get_num_procs());
  return kProcs;
}

// How one group's GEMM (M = filters per group, N = output pixels) is cut into
// tasks: ntn column tiles of tile_n x ntm filter chunks of tile_m.
struct Tiling {
  int64_t tile_n = 0, ntn = 1;
  int tile_m = 0, ntm = 1;
};

// Column tiles of ~kTargetCols (GEMM-efficient, im2col tile cache-resident),
// a multiple of the thread count when there are enough; small images (the
// 13x13 / 19x19 heads) are split over filters instead.
Tiling plan_tiles(int64_t n, int m, int threads) {
  constexpr int64_t kTargetCols = 512;
  Tiling t;
  int64_t ntn = std::max<int64_t>(1, (n + kTargetCols / 2) / kTargetCols);
  int ntm = 1;
  if (ntn >= threads) {
    ntn = align_up(ntn, threads);
  } else {
    ntm = int(std::min<int64_t>((2 * threads + ntn - 1) / ntn, std::max(1, m / 16)));
  }
  t.tile_n = align_up((n + ntn - 1) / ntn, 16);
  t.ntn = (n + t.tile_n - 1) / t.tile_n;
  t.tile_m = int(align_up((m + ntm - 1) / ntm, 8));
  t.ntm = (m + t.tile_m - 1) / t.tile_m;
  return t;
}

// y[f][n0, n1) = act(y[f][n0, n1) + bias[f]) for filters [f0, f1); y rows are n floats.
void bias_activation(float* y, int f0, int f1, int64_t n, int64_t n0, int64_t n1, const float* bias,
                     Activation act) {
  for (int f = f0; f < f1; ++f) {
    float* row = y + int64_t(f) * n + n0;
    if (bias != nullptr) {
      bias_activate_array(act, bias[f], row, n1 - n0);
    } else {
      activate_array(act, row, n1 - n0);
    }
  }
}

// One group: y[fg][n] = act(w[fg][kdim] * im2col(x)[kdim][n] + bias), plus y's own
// values first when `accumulate`. `scratch`
// holds the im2col of column tile [n0, n1) as a [kdim][n1-n0] block at kdim*n0.
// One OpenMP region; each task runs a single-threaded GEMM on its tile.
void conv2d_gemm_group(const ConvGeom& g, bool pointwise, const float* x, const float* w, const float* bias,
                       Activation act, float* y, float* scratch, int scratch_threads, bool accumulate) {
  const int threads = std::max(1, std::min(omp_get_max_threads(), scratch_threads));
  const Tiling t = plan_tiles(g.n, g.fg, tile_parallelism());
  const int64_t ntasks = t.ntn * t.ntm;
  // When tiles are shared by several filter chunks, im2col runs first for all.
  const bool im2col_first = !pointwise && t.ntm > 1;
  const int64_t kdim = g.kdim;
#pragma omp parallel num_threads(int(std::min<int64_t>(threads, std::max<int64_t>(ntasks, 1))))
  {
    if (omp_get_thread_num() == 0) note_team_size(omp_get_num_threads());
    if (im2col_first) {
#pragma omp for schedule(static)
      for (int64_t i = 0; i < t.ntn * kdim; ++i) {
        const int64_t tile = i / kdim, r = i % kdim;
        const int64_t n0 = tile * t.tile_n, n1 = std::min(g.n, n0 + t.tile_n);
        im2col_row(x, g, r, n0, n1, scratch + kdim * n0 + r * (n1 - n0));
      }
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < ntasks; ++task) {
      const int64_t n0 = (task / t.ntm) * t.tile_n, n1 = std::min(g.n, n0 + t.tile_n);
      const int m0 = int(task % t.ntm) * t.tile_m, m1 = std::min(g.fg, m0 + t.tile_m);
      const float* cols = x + n0;
      int64_t ldb = g.n;
      if (!pointwise) {
        ldb = n1 - n0;
        float* block = scratch + kdim * n0;  // im2col first: the tile's part of the whole im2col
        if (!im2col_first) {
          block = scratch + int64_t(omp_get_thread_num()) * kdim * t.tile_n;  // this thread's slot
          for (int64_t r = 0; r < kdim; ++r) im2col_row(x, g, r, n0, n1, block + r * ldb);
        }
        cols = block;
      }
      sgemm(m1 - m0, int(n1 - n0), int(kdim), w + int64_t(m0) * kdim, int(kdim), cols, int(ldb),
            y + int64_t(m0) * g.n + n0, int(g.n), accumulate);
      if (act != Activation::kLinear || bias != nullptr) bias_activation(y, m0, m1, g.n, n0, n1, bias, act);
    }
  }
}

// Depthwise: channel ch convolves only input channel ch with its k x k kernel.
void depthwise_plane(const float* x, const float* wk, const ConvGeom& g, float* y) {
  std::memset(y, 0, sizeof(float) * size_t(g.n));
  for (int ky = 0; ky < g.k; ++ky) {
    const int offy = ky * g.d - g.pe;
    int ylo, yhi;
    valid_range(offy, g.sy, g.h, g.oh, &ylo, &yhi);
    for (int kx = 0; kx < g.k; ++kx) {
      const int offx = kx * g.d - g.pe;
      int xlo, xhi;
      valid_range(offx, g.sx, g.w, g.ow, &xlo, &xhi);
      const float wt = wk[ky * g.k + kx];
      for (int oy = ylo; oy < yhi; ++oy) {
        float* o = y + int64_t(oy) * g.ow;
        const float* row = x + int64_t(oy * g.sy + offy) * g.w;  // tap ox reads row[ox*sx + offx]
        if (g.sx == 1) {
          const float* src = row + xlo + offx;
          float* dst = o + xlo;
          for (int i = 0; i < xhi - xlo; ++i) dst[i] += wt * src[i];
        } else {
          for (int ox = xlo; ox < xhi; ++ox) o[ox] += wt * row[ox * g.sx + offx];
        }
      }
    }
  }
}

void conv2d_depthwise(const ConvGeom& g, const float* x, const float* weights, const float* bias, Activation act,
                      float* y) {
  const int64_t in_plane = int64_t(g.h) * g.w;
  const int kk = g.k * g.k;
#pragma omp parallel
  {
    if (omp_get_thread_num() == 0) note_team_size(omp_get_num_threads());
#pragma omp for schedule(static)
    for (int ch = 0; ch < g.c; ++ch) {
      float* out = y + ch * g.n;
      depthwise_plane(x + ch * in_plane, weights + int64_t(ch) * kk, g, out);
      if (bias != nullptr) {
        bias_activate_array(act, bias[ch], out, g.n);
      } else {
        activate_array(act, out, g.n);
      }
    }
  }
}

void check_view(const TensorView& v) {
  DLR_ASSERT(v.dtype == DType::kF32 && v.layout == Layout::kNCHW && v.data != nullptr);
  DLR_ASSERT(v.n >= 1 && (v.n == 1 || v.n_stride >= v.shape().count()));
}

}  // namespace

int64_t conv2d_scratch_floats(const ConvParams& p, Shape3 in, Shape3 out, int threads) {
  DLR_ASSERT(threads >= 1);
  const ConvGeom g = make_geom(p, in, out);
  if (is_depthwise(p, in) || is_pointwise(g)) return 0;
  const Tiling t = plan_tiles(g.n, g.fg, tile_parallelism());
  if (t.ntm > 1) return g.kdim * g.n;  // im2col first, shared by the filter chunks
  return std::min<int64_t>(threads, t.ntn * t.ntm) * g.kdim * t.tile_n;
}

void conv2d(const ConvParams& p, const TensorView& in, const float* weights, const float* bias, const TensorView& out,
            float* scratch, int scratch_threads, bool accumulate) {
  check_view(in);
  check_view(out);
  DLR_ASSERT(in.n == out.n && weights != nullptr);
  const ConvGeom g = make_geom(p, in.shape(), out.shape());
  const bool depthwise = is_depthwise(p, in.shape());
  const bool pointwise = is_pointwise(g);
  DLR_ASSERT(depthwise || pointwise || scratch != nullptr);
  DLR_ASSERT(!(depthwise && accumulate));
  const int64_t in_group = int64_t(g.cg) * g.h * g.w;  // floats of one group's input planes
  const int64_t w_group = int64_t(g.fg) * g.kdim;       // floats of one group's weights
  for (int b = 0; b < in.n; ++b) {
    const float* x = in.f32() + b * in.n_stride;
    float* y = out.f32() + b * out.n_stride;
    if (depthwise) {
      conv2d_depthwise(g, x, weights, bias, p.activation, y);
      continue;
    }
    for (int grp = 0; grp < p.groups; ++grp) {
      conv2d_gemm_group(g, pointwise, x + grp * in_group, weights + grp * w_group,
                        bias != nullptr ? bias + int64_t(grp) * g.fg : nullptr, p.activation,
                        y + int64_t(grp) * g.fg * g.n, scratch, std::max(1, scratch_threads), accumulate);
    }
  }
}

// Entry point of [convolutional] (cpu_ops.h OpCall).
void run_conv(const OpCall& call) {
  // An input-channel slice that reads a packed copy of its channels: that copy first.
  for (int i = 0; i < call.n_packs; ++i) copy_channels(call.packs[i].first, call.packs[i].second);
  conv2d(call.p<ConvParams>(), call.in[0], call.weights, call.bias, call.out, call.scratch, call.scratch_threads,
         call.accumulate);
  // A shortcut folded into this conv: the same add as the shortcut step, in place.
  if (call.residual != nullptr) shortcut(call.out, call.residual, 1, call.residual_act, call.out);
  // A slice of a conv that wrote a packed scratch: into its channels of the layer's output.
  for (int i = 0; i < call.n_copies; ++i) copy_channels(call.copies[i].first, call.copies[i].second);
}

}  // namespace dlr::cpu
