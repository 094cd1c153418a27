// Device helpers shared by the custom kernels (include from .cu files only):
//  - activate(): Darknet's activations in fp32, the formulas of the CPU reference
//    (kernels/cpu/activation.cpp, DARKNET.md section 2); activate_f16(): the same for
//    values stored as f16, mish/swish/logistic through the fast intrinsics;
//  - element addressing of a TensorView (NCHW / NHWC, channel slices) and f32/f16
//    load/store by dtype;
//  - the launch geometry every elementwise kernel of this folder uses.
//
// Kernels receive TensorView by value (a trivially copyable struct); its host
// member functions are never called on the device.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/tensor_view.h"
#include "runtime/core/status.h"

namespace dlr::cuda {

// ---- activations (fp32; expf/logf, never the __expf fast intrinsics: activate_f16 below) ----

__device__ __forceinline__ float logistic_activate(float x) { return 1.f / (1.f + expf(-x)); }
// Darknet's tanh_activate.
__device__ __forceinline__ float tanh_activate(float x) { return 2.f / (1.f + expf(-2.f * x)) - 1.f; }
// mish = x*tanh(softplus(x)) with Darknet's softplus threshold 20, in the
// cancellation-free form tanh(log(1+e)) = n/(n+2), n = e*(e+2) (as the CPU reference,
// kernels/cpu/activation.cpp, which explains the choice).
__device__ __forceinline__ float mish_activate(float x) {
  if (x > 20.f) return x;
  const float e = expf(x);
  const float n = e * (e + 2.f);
  return x * n / (n + 2.f);
}

__device__ __forceinline__ float activate(Activation a, float x) {
  switch (a) {
    case Activation::kLinear: return x;
    case Activation::kLeaky: return x > 0.f ? x : .1f * x;
    case Activation::kLogistic: return logistic_activate(x);
    case Activation::kRelu: return x > 0.f ? x : 0.f;
    case Activation::kRelu6: {  // std::min(std::max(x, 0.f), 6.f), NaN passes through as on the CPU
      const float t = x < 0.f ? 0.f : x;
      return 6.f < t ? 6.f : t;
    }
    case Activation::kElu: return x >= 0.f ? x : expf(x) - 1.f;
    case Activation::kSelu: return x >= 0.f ? 1.0507f * x : 1.0507f * 1.6732f * (expf(x) - 1.f);
    case Activation::kGelu: {  // double arithmetic, as Darknet and the CPU reference
      const double xd = x;
      return float(0.5 * xd * (1.0 + tanhf(float(0.797885 * xd + 0.035677 * (xd * xd * xd)))));
    }
    case Activation::kTanh: return tanh_activate(x);
    case Activation::kSwish: return x * logistic_activate(x);
    case Activation::kMish: return mish_activate(x);
    case Activation::kHardMish: return x > 0.f ? x : (x > -2.f ? x * x / 2.f + x : 0.f);
  }
  return x;
}

// ---- activations of values stored as f16 ----
// mish, swish and logistic through the fast intrinsics: __expf (at most 2 + 1.16|x| ulp)
// and __fdividef (2 ulp; its denominators here stay below 2^126 or give the limit 0).
// For arguments up to Darknet's mish threshold (20) that is under 1e-5 relative, far
// inside the 2^-11 an f16 store rounds to, so a stored value differs from activate()'s by
// at most one f16 ulp, and only where the exact value lies that close to a rounding
// boundary (tests/gpu/ops_bias_activation_test.cpp bounds how often, and that the
// differences lean neither way). Used by the conv epilogue (bias_activation) on f16
// views; f32 data and the other kernels (shortcut, scale_channels, sam, and the residual's
// activation of a folded shortcut, which must give the shortcut kernel's bits) keep
// activate(), as do the other activations here.
__device__ __forceinline__ float activate_f16(Activation a, float x) {
  switch (a) {
    case Activation::kLogistic: return __fdividef(1.f, 1.f + __expf(-x));
    case Activation::kSwish: return x * __fdividef(1.f, 1.f + __expf(-x));
    case Activation::kMish: {
      if (x > 20.f) return x;
      const float e = __expf(x);
      const float n = e * (e + 2.f);
      return x * __fdividef(n, n + 2.f);
    }
    default: return activate(a, x);
  }
}

// The activation of a value stored as T (f16: activate_f16; f32: activate).
template <class T>
__device__ __forceinline__ float activate_to(Activation a, float x) {
  if constexpr (sizeof(T) == 2) {
    return activate_f16(a, x);
  } else {
    return activate(a, x);
  }
}
__device__ __forceinline__ float activate_to(DType stored, Activation a, float x) {
  return stored == DType::kF16 ? activate_f16(a, x) : activate(a, x);
}

// ---- element access ----

// Element offset (in elements of v.dtype, from v.data) of image n, channel c, row y, column x.
__device__ __forceinline__ int64_t view_offset(const TensorView& v, int n, int c, int y, int x) {
  if (v.layout == Layout::kNCHW) return int64_t(n) * v.n_stride + (int64_t(c) * v.h + y) * v.w + x;
  return int64_t(n) * v.n_stride + (int64_t(y) * v.w + x) * v.pixel_stride + c;
}

__device__ __forceinline__ float load_elem(const TensorView& v, int64_t off) {
  if (v.dtype == DType::kF16) return __half2float(static_cast<const __half*>(v.data)[off]);
  return static_cast<const float*>(v.data)[off];
}

__device__ __forceinline__ void store_elem(const TensorView& v, int64_t off, float val) {
  if (v.dtype == DType::kF16) {
    static_cast<__half*>(v.data)[off] = __float2half_rn(val);
  } else {
    static_cast<float*>(v.data)[off] = val;
  }
}

__device__ __forceinline__ float load_at(const TensorView& v, int n, int c, int y, int x) {
  return load_elem(v, view_offset(v, n, c, y, x));
}
__device__ __forceinline__ void store_at(const TensorView& v, int n, int c, int y, int x, float val) {
  store_elem(v, view_offset(v, n, c, y, x), val);
}

// ---- 16-byte groups (8 f16 or 4 f32 elements per vector load or store) ----

__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ void from_f32(float v, __half* out) { *out = __float2half_rn(v); }
__device__ __forceinline__ void from_f32(float v, float* out) { *out = v; }

// Elements of `d` in 16 bytes.
inline int lanes16(DType d) { return d == DType::kF16 ? 8 : 4; }

// True when v is NHWC and every pixel's channels are whole 16-byte groups at 16-byte
// aligned addresses (c, pixel_stride and n_stride multiples of `lanes`, data aligned).
inline bool nhwc_groups16(const TensorView& v, int lanes) {
  return v.layout == Layout::kNHWC && v.c % lanes == 0 && v.pixel_stride % lanes == 0 && v.n_stride % lanes == 0 &&
         reinterpret_cast<uintptr_t>(v.data) % 16 == 0;
}

// The precondition of a 16-byte kernel from `in` to `out`: one dtype, both views NHWC in
// whole 16-byte channel groups (nhwc_groups16).
inline bool nhwc_pair16(const TensorView& in, const TensorView& out) {
  const int lanes = lanes16(in.dtype);
  return in.dtype == out.dtype && nhwc_groups16(in, lanes) && nhwc_groups16(out, lanes);
}

// (group, y, x) of the r-th 16-byte channel group of an NHWC image in memory order
// (`groups` per pixel, rows of w pixels).
struct GroupYx {
  int g, y, x;
};
__device__ __forceinline__ GroupYx decompose_groups(uint32_t r, int groups, int w) {
  GroupYx p;
  const uint32_t pix = r / uint32_t(groups);
  p.g = int(r - pix * uint32_t(groups));
  p.y = int(pix / uint32_t(w));
  p.x = int(pix - uint32_t(p.y) * uint32_t(w));
  return p;
}

// True when one image of v is a single block in its memory order (NCHW, channel
// slices included; NHWC with pixel_stride == c): the r-th element of image n in
// memory order is at element offset n*n_stride + r.
__host__ __device__ __forceinline__ bool image_contiguous(const TensorView& v) {
  return v.layout == Layout::kNCHW || v.pixel_stride == v.c;
}

// (c, y, x) of the r-th element of one image of `v` in ITS memory order
// (NCHW: x fastest then y then c; NHWC: c fastest then x then y). Iterating r
// in this order makes consecutive threads touch consecutive addresses of v.
struct Chw {
  int c, y, x;
};
__device__ __forceinline__ Chw decompose_memory_order(const TensorView& v, uint32_t r) {
  Chw p;
  if (v.layout == Layout::kNCHW) {
    const uint32_t plane = uint32_t(v.h) * uint32_t(v.w);
    p.c = int(r / plane);
    const uint32_t rem = r - uint32_t(p.c) * plane;
    p.y = int(rem / uint32_t(v.w));
    p.x = int(rem - uint32_t(p.y) * uint32_t(v.w));
  } else {
    const uint32_t pix = r / uint32_t(v.c);
    p.c = int(r - pix * uint32_t(v.c));
    p.y = int(pix / uint32_t(v.w));
    p.x = int(pix - uint32_t(p.y) * uint32_t(v.w));
  }
  return p;
}

// ---- launch geometry (host) ----

constexpr int kBlockThreads = 256;
constexpr int kMaxBlocksX = 4096;  // grid-stride loops cover the rest

// Blocks of kBlockThreads for a 1-D grid-stride loop over `threads` items (at most
// 65535 x 8; the loop covers the rest).
inline unsigned grid_stride_blocks(int64_t threads) {
  const int64_t blocks = (threads + kBlockThreads - 1) / kBlockThreads;
  return unsigned(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

// Grid for a kernel that runs blockIdx.y over the n images and a grid-stride
// loop over `per_image` work items with blockIdx.x/threadIdx.x. *empty is set
// when there is nothing to do (no launch then). Errors: per_image must fit a
// 32-bit index and n the grid's y limit.
inline Status image_grid(int64_t per_image, int n, const char* op, dim3* grid, bool* empty) {
  *empty = per_image <= 0 || n <= 0;
  if (*empty) return Status();
  if (per_image >= (int64_t(1) << 31))
    return unsupported(std::string(op) + ": more than 2^31-1 elements per image (" + std::to_string(per_image) + ")");
  if (n > 65535) return unsupported(std::string(op) + ": batch " + std::to_string(n) + " exceeds 65535");
  const int64_t blocks = (per_image + kBlockThreads - 1) / kBlockThreads;
  *grid = dim3(unsigned(blocks < kMaxBlocksX ? blocks : kMaxBlocksX), unsigned(n), 1);
  return Status();
}

// Host-side view validation shared by the launchers: dtype/layout values, a data
// pointer, non-negative sizes and NHWC pixel_stride >= c.
inline Status check_view(const TensorView& v, const char* op, const char* name) {
  const std::string where = std::string(op) + ": view '" + name + "' ";
  if (v.dtype != DType::kF32 && v.dtype != DType::kF16) return invalid_argument(where + "has an unknown dtype");
  if (v.layout != Layout::kNCHW && v.layout != Layout::kNHWC) return invalid_argument(where + "has an unknown layout");
  if (v.n < 0 || v.c < 0 || v.h < 0 || v.w < 0) return invalid_argument(where + "has a negative size");
  const int64_t count = int64_t(v.n) * v.c * v.h * v.w;
  if (count > 0 && v.data == nullptr) return invalid_argument(where + "has no data pointer");
  if (v.layout == Layout::kNHWC && v.pixel_stride < v.c)
    return invalid_argument(where + "has pixel_stride " + std::to_string(v.pixel_stride) + " < c " +
                            std::to_string(v.c));
  return Status();
}

inline std::string view_dims(const TensorView& v) {
  return std::to_string(v.n) + "x" + std::to_string(v.c) + "x" + std::to_string(v.h) + "x" + std::to_string(v.w);
}

}  // namespace dlr::cuda
