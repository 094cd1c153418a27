// CUDA custom kernels: one op per .cu file in this folder. Host launchers only
// (no device code in this header, so plain C++ can include it).
//
// Contracts common to every launcher:
//  - views are device memory (TensorView addressing, kernels/tensor_view.h):
//    f32 or f16, NCHW or NHWC, possibly channel slices of larger buffers;
//  - work is enqueued on `stream` (never the legacy default stream); nothing
//    synchronises, allocates or frees; the launch is checked and a failure is
//    returned as a Status;
//  - arithmetic is done in fp32 (f16 data is converted on load/store) with the
//    formulas of the CPU reference (kernels/cpu/cpu_ops.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "kernels/op_call.h"
#include "kernels/op_params.h"
#include "kernels/tensor_view.h"
#include "runtime/core/status.h"

struct cudnnContext;   // cudnnHandle_t (cudnn.h), for the conv entry point
struct cublasContext;  // cublasHandle_t (cublas_v2.h), for a conv over a concatenation and 3xTF32 GEMMs

namespace dlr::cuda {

class CudnnConv;   // conv.h
class ConcatConv;  // conv_concat.h
class Tf32x3Conv;  // conv_3xtf32.h
class FusedConv;   // conv_graph.h

// ---- the uniform entry point of every layer kind (generated from DLR_OPS) ----
// One step of a plan as the CUDA engine hands it to an op (OpStep, kernels/op_call.h:
// device views resolved, the step's params) plus the stream. Each kind's file defines
// run_<ident>(const OpCall&) (kernels/op_params.h DLR_OPS), which unpacks this and
// calls the launcher below.
struct OpCall : OpStep {
  cudaStream_t stream = nullptr;
  // conv only: the layer's prepared cuDNN convolution, handle, weights and workspace
  const CudnnConv* conv = nullptr;
  const FusedConv* fused = nullptr;  // set: the conv runs as this cuDNN graph instead (conv_graph.h)
  const Tf32x3Conv* x3 = nullptr;    // set: the conv runs as this 3xTF32 conv instead (conv_3xtf32.h)
  cudnnContext* cudnn = nullptr;
  const void* weights = nullptr;
  const float* bias = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // conv over several inputs (PlannerOptions::conv_over_concat): its GEMMs and handle
  // (then `conv` and `cudnn` are unused)
  const ConcatConv* concat = nullptr;
  cublasContext* cublas = nullptr;
};

#define DLR_CUDA_RUN_DECL_(K, ident, name, P, role) Status run_##ident(const OpCall& call);
DLR_OPS(DLR_CUDA_RUN_DECL_)
#undef DLR_CUDA_RUN_DECL_

// Enqueues one step: the dispatch table of DLR_OPS (the only per-kind dispatch of the CUDA engine).
inline Status run_op(LayerKind kind, const OpCall& call) {
#define DLR_CUDA_RUN_FN_(K, ident, name, P, role) &run_##ident,
  static constexpr Status (*kRun[])(const OpCall&) = {DLR_OPS(DLR_CUDA_RUN_FN_)};
#undef DLR_CUDA_RUN_FN_
  return kRun[static_cast<size_t>(kind)](call);
}

// ---- bias_activation.cu ----
// In place: x = act(x + bias[c]) for every element of `t` (bias: f32, t.c values; may be null = no bias).
Status bias_activation(const TensorView& t, const float* bias, Activation act, cudaStream_t stream);
// The same, then a folded shortcut (runtime/compile/fusion.h): each value rounded to t's
// dtype, t = residual_act(t + residual). residual: t's n, c, h, w and dtype, not
// overlapping t; the result has the bits of bias_activation followed by the shortcut kernel.
Status bias_activation_add(const TensorView& t, const float* bias, Activation act, const TensorView& residual,
                           Activation residual_act, cudaStream_t stream);

// ---- dequantize.cu ----
// Int8 weights (WeightFormat::kInt8) expanded into `dst` of `dtype` (f32 or f16):
// dst[f * row + i] = float(src[f * row + i]) * scales[f] for f < filters, i < row, the f32
// product exactly as cpu::dequantize_weights computes it, rounded to nearest for f16.
// src, scales and dst are device (or mapped host) memory; filters * row < 2^31.
Status dequantize_weights(const int8_t* src, const float* scales, int64_t filters, int64_t row, DType dtype, void* dst,
                          cudaStream_t stream);

// Several blobs expanded by one launch, each as dequantize_weights does (the same
// products); jobs: 1..kMaxDequantJobs, passed by value to the kernel (host memory here).
struct DequantJob {
  const int8_t* src = nullptr;
  const float* scales = nullptr;
  void* dst = nullptr;
  int64_t filters = 0;
  int64_t row = 0;
};
constexpr int kMaxDequantJobs = 16;
Status dequantize_weights_batch(const DequantJob* jobs, int n, DType dtype, cudaStream_t stream);

// ---- tf32_split.cu ----
// The operands of a 3xTF32 product (conv_3xtf32.h). Each of `rows` source rows holds c
// f32 values (row r at src + r * src_stride); v = hi + lo exactly, hi = v rounded to the
// nearest TF32 value (ties to even), lo = v - hi. The columns are cut into chunks of
// `chunk` (the last may be shorter, n_j columns); chunk j holds 3 * n_j values per row:
// [hi, hi, lo] of its columns (kHighHighLow, activations) or [hi, lo, hi] (kHighLowHigh,
// weights), so a conv over a chunk's 3 n_j channels sums hi*hi + hi*lo + lo*hi.
// kChunkBlocks: chunk j is `rows` packed rows at dst + rows * 3 * j * chunk (one tensor
// per chunk); kChunksInRow: row r is 3c values at dst + r * 3c, chunk j at 3 * j * chunk
// of it (one tensor whose channel groups are the chunks). A value whose rounding overflows
// to infinity gives inf and a NaN remainder. Device memory; dst holds rows * 3 * c floats.
enum class Tf32SplitOrder : uint8_t { kHighHighLow, kHighLowHigh };
enum class Tf32SplitLayout : uint8_t { kChunkBlocks, kChunksInRow };
Status split_tf32(const float* src, int64_t rows, int c, int64_t src_stride, int chunk, Tf32SplitOrder order,
                  Tf32SplitLayout layout, float* dst, cudaStream_t stream);
// The same (kHighHighLow, kChunksInRow) for the unrolled patches of conv `p` (no
// dilation; pad = p.padding per side) over an f32 NHWC input (channel slices too),
// without unrolling them first: row m = (image, oy, ox) of the oh x ow output holds the
// k x k x C values (ky, kx, c) its filter meets, as OHWI weights order them (0 outside
// the input). dst holds n * oh * ow * 3 * k * k * C floats.
Status split_tf32_patches(const TensorView& in, const ConvParams& p, int oh, int ow, int chunk, float* dst,
                          cudaStream_t stream);

// ---- partial_sum.cu ----
// The epilogue of a conv computed as `parts` partial sums (the grouped 3xTF32 form):
// out[p][o] = act(s + bias[o]), s = (accumulate ? out[p][o] : 0) + partials[p][0][o] + ...
// + partials[p][parts - 1][o], added in that order in f32 (bias null: no add); with a
// residual, then out = residual_act(out + r[p][o]) as bias_activation_add computes it.
// out: packed f32 NHWC; partials: out's pixels x parts x out.c floats, packed;
// residual: f32 with out's shape (any strides), not overlapping out.
Status sum_partials(const float* partials, int parts, const float* bias, Activation act, bool accumulate,
                    const TensorView& out, const TensorView* residual, Activation residual_act, cudaStream_t stream);

// ---- maxpool.cu ----
Status maxpool(const MaxPoolParams& p, const TensorView& in, const TensorView& out, cudaStream_t stream);

// ---- upsample.cu ----
Status upsample(const UpsampleParams& p, const TensorView& in, const TensorView& out, cudaStream_t stream);

// ---- copy_channels.cu ----
// dst = src (equal n, c, h, w; any layouts/dtypes: also converts f32 <-> f16 and NCHW <-> NHWC).
Status copy_channels(const TensorView& src, const TensorView& dst, cudaStream_t stream);

// ---- shortcut.cu ----
constexpr int kMaxShortcutFrom = 8;
// out = act(prev + sum(from[i])), Darknet's multilayer rule (cpu::shortcut). out may alias prev.
Status shortcut(const TensorView& prev, const TensorView* from, int n_from, Activation act, const TensorView& out,
                cudaStream_t stream);

// ---- yolo.cu ----
// Darknet yolo forward (cpu::yolo): in f16/f32 any layout, out f32 NCHW packed.
Status yolo(const YoloParams& p, const TensorView& in, const TensorView& out, cudaStream_t stream);

// ---- avgpool.cu ----
// Global average pool (cpu::avgpool): out n x c x 1 x 1; the plane summed in NCHW order in fp32.
Status avgpool(const TensorView& in, const TensorView& out, cudaStream_t stream);

// ---- scale_channels.cu ----
// out = act(scale * from) (cpu::scale_channels); scales c x 1 x 1, or 1 x h x w with scale_wh.
Status scale_channels(const TensorView& scales, const TensorView& from, bool scale_wh, Activation act,
                      const TensorView& out, cudaStream_t stream);

// ---- sam.cu ----
// out = act(prev * from) elementwise (cpu::sam). out may alias prev.
Status sam(const TensorView& prev, const TensorView& from, Activation act, const TensorView& out, cudaStream_t stream);

// ---- reorg.cu ----
// Darknet reorg / reorg3d (cpu::reorg): out c*s*s x h/s x w/s. out must not overlap in.
Status reorg(const TensorView& in, int stride, ReorgMapping mapping, const TensorView& out, cudaStream_t stream);

// ---- region.cu ----
// Darknet region forward (cpu::region): in f16/f32 any layout, out normally f32 NCHW packed.
Status region(const RegionOp& p, const TensorView& in, const TensorView& out, cudaStream_t stream);

// ---- yolo_select.cu ----
// The candidates of a [yolo] output `in` (f32 NCHW packed, after yolo(): anchors x entries
// channels): every (cell, anchor) of every image whose objectness (entry 4) is > thresh.
// Per image b: counts[b] = how many there are (may exceed capacity); the first `capacity`
// found, in no set order, as keys[b*capacity + r] = cell*anchors + anchor and
// rows[(b*capacity + r)*entries + e] = entry e (copied). Clears counts on the stream first.
Status yolo_select(const TensorView& in, int anchors, int entries, float thresh, int capacity, int32_t* counts,
                   int32_t* keys, float* rows, cudaStream_t stream);

// ---- gaussian_yolo.cu ----
// Darknet Gaussian_yolo forward (cpu::gaussian_yolo): in f16/f32 any layout, out normally f32 NCHW.
Status gaussian_yolo(const GaussianYoloOp& p, const TensorView& in, const TensorView& out, cudaStream_t stream);

// ---- preprocess.cu ----
// A device-resident 8-bit interleaved image (as uploaded from the host).
struct DeviceImage {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  int64_t row_stride = 0;  // bytes between rows; 0 = packed (width * channels)
  bool bgr = true;         // BGR (OpenCV) order, converted to RGB; false: RGB
  int channels = 3;        // bytes per pixel: 3, 4 (alpha ignored) or 1 (gray, copied to R, G and B)
};
// Darknet pre-processing of one image into image `n_index` of `out` (3 channels,
// f32/f16, NCHW/NHWC): RGB/255 then Darknet's align-corners bilinear stretch
// (resize_image) or letterbox (0.5 fill). Bit-identical to the CPU reference for
// f32 output (no FMA contraction: explicit __fmul_rn/__fadd_rn).
Status preprocess(const DeviceImage& img, bool letterbox, const TensorView& out, int n_index, cudaStream_t stream);


}  // namespace dlr::cuda
