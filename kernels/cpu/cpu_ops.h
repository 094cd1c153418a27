// CPU reference backend: one op per .cpp file in this folder, fp32, NCHW.
//
// Contracts common to every op:
//  - views are fp32 NCHW (TensorView addressing, kernels/tensor_view.h); inputs
//    and outputs may be channel slices of larger buffers;
//  - shapes were validated by the loader/planner: a mismatch is a bug (DLR_ASSERT);
//  - ops never allocate: scratch memory is passed in;
//  - ops may use several threads (OpenMP / the BLAS library) and return when done.
// Formulas are Darknet's (AlexeyAB/darknet src/*_layer.c, src/blas.c,
// src/activations.h, src/image.c).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "kernels/op_call.h"
#include "kernels/op_params.h"
#include "kernels/tensor_view.h"
#include "runtime/core/status.h"
#include "runtime/core/image.h"

namespace dlr::cpu {

// ---- the uniform entry point of every layer kind (generated from DLR_OPS) ----
// One step of a plan as the CPU engine hands it to an op (OpStep, kernels/op_call.h:
// views resolved, the step's params) plus conv's weights. Each kind's file defines
// run_<ident>(const OpCall&) (kernels/op_params.h DLR_OPS), which unpacks this and
// calls the op below.
struct OpCall : OpStep {
  const float* weights = nullptr;     // conv: prepared weights and bias
  const float* bias = nullptr;
  float* scratch = nullptr;           // conv: conv2d_scratch_floats(..., scratch_threads) floats
  int scratch_threads = 1;            // conv: the threads `scratch` was sized for (the team never exceeds it)
};

#define DLR_CPU_RUN_DECL_(K, ident, name, P, role) void run_##ident(const OpCall& call);
DLR_OPS(DLR_CPU_RUN_DECL_)
#undef DLR_CPU_RUN_DECL_

// Runs one step: the dispatch table of DLR_OPS (the only per-kind dispatch of the CPU engine).
inline void run_op(LayerKind kind, const OpCall& call) {
#define DLR_CPU_RUN_FN_(K, ident, name, P, role) &run_##ident,
  static constexpr void (*kRun[])(const OpCall&) = {DLR_OPS(DLR_CPU_RUN_FN_)};
#undef DLR_CPU_RUN_FN_
  kRun[static_cast<size_t>(kind)](call);
}

// ---- activation.cpp ----
// Scalar Darknet activation (mish: x*tanh(softplus(x)), softplus threshold 20).
float activate(Activation a, float x);
// In place over n contiguous floats, on the calling thread. Same values as activate().
void activate_array(Activation a, float* data, int64_t n);
// In place: data[i] = activate(a, data[i] + bias) (conv epilogue), on the calling thread.
void bias_activate_array(Activation a, float bias, float* data, int64_t n);

// ---- gemm.cpp ----
// C[m x n] = A[m x k] * B[k x n] (+ C if accumulate), row-major, leading dims as given.
// One thread inside an OpenMP region (conv2d parallelises over tile GEMMs); with OpenBLAS
// the first call sets openblas_set_num_threads(1) process-wide (see gemm.cpp).
void sgemm(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc, bool accumulate);

// ---- conv2d.cpp ----
// Scratch floats conv2d needs for one image when at most `threads` (>= 1) threads run it:
// im2col column tiles, one per thread, or one group's whole im2col where filter chunks
// share it (small images); 0 when not needed (depthwise, 1x1 stride 1).
int64_t conv2d_scratch_floats(const ConvParams& p, Shape3 in, Shape3 out, int threads);
// out = act(conv(in, weights) + bias). weights OIHW [filters][c/groups][k][k], bias [filters] (nullptr: none).
// Output size per Darknet: (H + 2*padding - size)/stride + 1 (dilation d uses padding*d... see conv2d.cpp).
// scratch: conv2d_scratch_floats(p, ..., scratch_threads) floats; the OpenMP team is
// capped at scratch_threads. Results do not depend on the team size.
// accumulate: out = act(out + conv(in, weights) + bias) (an input-channel slice adding
// its partial sums, runtime/compile/slicing.h); not for depthwise convs.
void conv2d(const ConvParams& p, const TensorView& in, const float* weights, const float* bias, const TensorView& out,
            float* scratch, int scratch_threads, bool accumulate = false);

// ---- dequantize.cpp ----
// Int8 weights (WeightFormat::kInt8) expanded: dst[f * row + i] = float(src[f * row + i]) * scales[f]
// for f < filters, i < row (the float product, exact to the CUDA kernel's f32 output), on
// up to `threads` OpenMP threads.
void dequantize_weights(const int8_t* src, const float* scales, int64_t filters, int64_t row, float* dst,
                        int threads);

// ---- maxpool.cpp ----
// Darknet maxpool: window of `size` starting at -padding/2 with `padding` TOTAL; out-of-range taps ignored.
void maxpool(const MaxPoolParams& p, const TensorView& in, const TensorView& out);

// ---- upsample.cpp ----
// Nearest neighbour: out[c][y][x] = scale * in[c][y/stride][x/stride].
void upsample(const UpsampleParams& p, const TensorView& in, const TensorView& out);

// ---- route.cpp ----
// Copies a channel slice: dst and src have equal n, c, h, w.
void copy_channels(const TensorView& src, const TensorView& dst);

// ---- shortcut.cpp ----
// out = act(prev + sum(from[i])). Darknet's multilayer rule: if a `from` tensor has
// fewer elements per image than out, only its first elements are added (first channels
// when the spatial size matches). out may alias prev.
void shortcut(const TensorView& prev, const TensorView* from, int n_from, Activation act, const TensorView& out);

// ---- yolo.cpp ----
// Darknet yolo forward: copy in -> out, logistic on x, y, objectness and classes
// (not on w, h) unless new_coords; then x,y = x*scale_x_y - 0.5*(scale_x_y-1).
void yolo(const YoloParams& p, const TensorView& in, const TensorView& out);

// ---- avgpool.cpp ----
// Darknet global average pool: out[b][k] = (sum over the H*W plane, left to right in float) / (H*W).
// out: C x 1 x 1.
void avgpool(const TensorView& in, const TensorView& out);

// ---- scale_channels.cpp ----
// Darknet [scale_channels]: out = act(scale * from), out has from's shape. scales is
// C x 1 x 1 (scale = scales[b][k]) or, with scale_wh, 1 x H x W (scale = scales[b][0][y][x]).
// act must not be swish/mish/hard_mish (Darknet does not apply them here).
void scale_channels(const TensorView& scales, const TensorView& from, bool scale_wh, Activation act,
                    const TensorView& out);

// ---- sam.cpp ----
// Darknet [sam]: out = act(prev * from) elementwise (equal shapes). out may alias prev.
void sam(const TensorView& prev, const TensorView& from, Activation act, const TensorView& out);

// ---- reorg.cpp ----
// Darknet reorg_cpu(forward = 0) with stride s: in C x H x W, out C*s*s x H/s x W/s (see reorg.cpp
// for the two index mappings). out must not alias in.
void reorg(const TensorView& in, int stride, ReorgMapping mapping, const TensorView& out);

// ---- region.cpp ----
// Darknet region forward at inference, kept in NCHW order (Darknet's CPU build transposes to
// [cell][anchor][entry]; the values are the same): out = copy of in, then per anchor block
// logistic on the objectness entry (coords) and, with softmax, Darknet's softmax over the
// classes entries. x, y, w, h stay raw (the decode applies logistic/exp). out may alias in.
void region(const RegionOp& p, const TensorView& in, const TensorView& out);

// ---- gaussian_yolo.cpp ----
// Darknet Gaussian_yolo forward (CPU build): out = copy of in, then per anchor block of
// 9 + classes entries: logistic on 0,1 (x, sigma_x), 2,3 (y, sigma_y), 5 (sigma_w), 7 (sigma_h)
// and 8.. (objectness, classes); then x (entry 0) and y (entry 2) = fma(v, sxy, beta),
// beta = (float)(-0.5*(sxy - 1)) (as cpu::yolo). w, h (4, 6) stay raw. out may alias in.
void gaussian_yolo(const GaussianYoloOp& p, const TensorView& in, const TensorView& out);

// ---- preprocess.cpp ----
// The caller's 8-bit image (runtime/core/image.h).
using ImageU8 = ::dlr::ImageU8;
// Planar RGB float in [0,1] at the image's size: dst[c][y][x] = src/255.f. dst: 3*h*w floats.
void image_to_planar(const ImageU8& img, float* dst);
// Darknet resize_image (align-corners bilinear, two passes, float math) of a planar
// c x ih x iw image into c x oh x ow. tmp: c*ih*ow floats.
void resize_darknet(const float* src, int c, int ih, int iw, float* dst, int oh, int ow, float* tmp);
// Darknet letterbox_image: aspect-preserving resize into the middle of an ow x oh
// canvas filled with 0.5. tmp: c*ih*ow floats + c*oh*ow floats (resized image).
void letterbox_darknet(const float* src, int c, int ih, int iw, float* dst, int oh, int ow, float* tmp);
// The inner size letterbox uses (Darknet src/image.c letterbox_image): integer formula on the float compare.
void letterbox_size(int iw, int ih, int ow, int oh, int* new_w, int* new_h);

}  // namespace dlr::cpu
