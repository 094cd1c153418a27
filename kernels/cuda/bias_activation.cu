// bias_activation: in place x = act(x + bias[c]) over a TensorView (cuda_ops.h),
// fp32 math, the CPU reference's formulas (activation.cuh; f16 views: activate_f16, the
// same in every kernel here, so the kernels below keep giving one another's bits).
// Without bias no add is done (cpu::activate_array), so the result is act(x) exactly
// (up to activate_f16's rounding for f16 views). With a residual (a
// shortcut folded into the conv, runtime/compile/fusion.h) the value is rounded to the
// view's dtype, then x = residual_act(x + r), as the shortcut kernel would compute it
// from the stored conv output: the same bits as the two passes.
//
// Four kernels, chosen by geometry, all touching consecutive addresses with
// consecutive threads:
//  - views of whole 16-byte groups (NHWC packed images of 8 f16 or 4 f32 channel groups,
//    or NCHW planes of such groups; the residual alike, with a linear residual
//    activation) and linear, leaky, logistic, swish or mish: 16-byte loads and stores,
//    the activation a template constant (the same formulas, so the same bits as the
//    kernels below); NHWC threads keep one channel group and its bias, NCHW blocks walk
//    planes as the NCHW kernel below;
//  - NCHW (channel slices too): blockIdx.y walks the (image, channel) planes, so
//    the bias is read once per plane and no per-element index division is done;
//  - NHWC with pixel_stride == c: each thread keeps one channel, striding over
//    the image by a multiple of c (the grid's thread count rounded down to it);
//  both fast kernels handle 4 elements per loop trip (loads before stores);
//  - anything else (NHWC channel slices): one thread per element with the
//    general (c, y, x) decomposition.
#include <algorithm>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"

namespace dlr::cuda {
namespace {

constexpr int kUnroll = 4;  // elements per thread and loop trip in the fast kernels

// What follows the conv: bias, activation and, optionally, a residual add (res.data null: none).
struct Epilogue {
  const float* bias = nullptr;
  Activation act = Activation::kLinear;
  TensorView res;
  Activation res_act = Activation::kLinear;
};

// The value stored for conv output v (bias value b) and residual element at r_off.
__device__ __forceinline__ float finish(const TensorView& t, const Epilogue& e, float v, float b, int64_t r_off) {
  v = activate_to(t.dtype, e.act, e.bias != nullptr ? v + b : v);
  if (e.res.data == nullptr) return v;
  if (t.dtype == DType::kF16) v = __half2float(__float2half_rn(v));  // as the conv's store rounded it
  return activate(e.res_act, __fadd_rn(v, load_elem(e.res, r_off)));  // never contracted into a product
}

__device__ __forceinline__ void bias_act_at(const TensorView& t, int64_t off, const Epilogue& e, float b,
                                            int64_t r_off) {
  store_elem(t, off, finish(t, e, load_elem(t, off), b, r_off));
}

// Elements base + first, base + first + step, ... below base + end, kUnroll per
// trip with the loads issued before the stores (more bytes in flight per thread).
// All of them get the same bias value b; the residual's elements are at r_base + the
// same offsets. first + kUnroll*step must fit 32 bits.
__device__ __forceinline__ void bias_act_strided(const TensorView& t, int64_t base, uint32_t first, uint32_t end,
                                                 uint32_t step, const Epilogue& e, float b, int64_t r_base) {
  for (uint32_t r = first; r < end; r += kUnroll * step) {
    float v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const uint32_t i = r + uint32_t(k) * step;
      if (i < end) v[k] = load_elem(t, base + i);
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const uint32_t i = r + uint32_t(k) * step;
      if (i < end) store_elem(t, base + i, finish(t, e, v[k], b, r_base + i));
    }
  }
}

// NCHW: planes = n*c; plane p is image p / c, channel p % c.
__global__ void bias_activation_nchw_kernel(TensorView t, Epilogue e, int planes, uint32_t plane_size) {
  for (int pl = blockIdx.y; pl < planes; pl += gridDim.y) {
    const int n = pl / t.c;
    const int c = pl - n * t.c;
    const float b = e.bias != nullptr ? e.bias[c] : 0.f;
    const int64_t base = int64_t(n) * t.n_stride + int64_t(c) * plane_size;
    const int64_t r_base = int64_t(n) * e.res.n_stride + int64_t(c) * plane_size;
    bias_act_strided(t, base, blockIdx.x * blockDim.x + threadIdx.x, plane_size, gridDim.x * blockDim.x, e, b, r_base);
  }
}

// NHWC packed pixels: thread tid < step handles elements tid, tid + step, ... of
// each image, all of channel tid % c because step is a multiple of c.
__global__ void bias_activation_nhwc_kernel(TensorView t, Epilogue e, uint32_t per_image, uint32_t step) {
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= step) return;
  const int c = int(tid % uint32_t(t.c));
  const float b = e.bias != nullptr ? e.bias[c] : 0.f;
  bias_act_strided(t, int64_t(blockIdx.y) * t.n_stride, tid, per_image, step, e, b,
                   int64_t(blockIdx.y) * e.res.n_stride);
}

__global__ void bias_activation_kernel(TensorView t, Epilogue e, uint32_t per_image) {
  const int n = blockIdx.y;
  for (uint32_t r = blockIdx.x * blockDim.x + threadIdx.x; r < per_image; r += gridDim.x * blockDim.x) {
    const Chw p = decompose_memory_order(t, r);
    const int64_t r_off = e.res.data != nullptr ? view_offset(e.res, n, p.c, p.y, p.x) : 0;
    bias_act_at(t, view_offset(t, n, p.c, p.y, p.x), e, e.bias != nullptr ? e.bias[p.c] : 0.f, r_off);
  }
}

// ---- the 16-byte kernels (NHWC channel groups, NCHW plane groups) ----

// finish() for the lanes of one 16-byte group of T with activation A (bias b per lane;
// residual lanes `res` added with a linear residual activation where kResidual).
template <class T, int A, bool kResidual>
__device__ __forceinline__ void finish16(bool with_bias, const float* b, uint4* group, const uint4& res) {
  constexpr int kLanes = int(16 / sizeof(T));
  T* v = reinterpret_cast<T*>(group);
  const T* rv = reinterpret_cast<const T*>(&res);
#pragma unroll
  for (int k = 0; k < kLanes; ++k) {
    const float x = to_f32(v[k]);
    float y = activate_to<T>(Activation(A), with_bias ? x + b[k] : x);
    if constexpr (kResidual) {
      if constexpr (sizeof(T) == 2) y = __half2float(__float2half_rn(y));  // as the conv's store rounded it
      y = __fadd_rn(y, to_f32(rv[k]));  // never contracted into the activation's product
    }
    from_f32(y, &v[k]);
  }
}

// Groups first, first + step, ... below end of x (residual groups at the same indices of
// r where kResidual), two in flight per trip, every one with the bias lanes b.
template <class T, int A, bool kResidual>
__device__ __forceinline__ void finish16_range(uint4* x, const uint4* r, uint32_t first, uint32_t end, uint32_t step,
                                               bool with_bias, const float* b) {
  for (uint32_t i = first; i < end; i += 2 * step) {
    const bool second = i + step < end;
    uint4 v0 = x[i], v1 = second ? x[i + step] : uint4{};
    uint4 r0{}, r1{};
    if constexpr (kResidual) {
      r0 = r[i];
      if (second) r1 = r[i + step];
    }
    finish16<T, A, kResidual>(with_bias, b, &v0, r0);
    x[i] = v0;
    if (second) {
      finish16<T, A, kResidual>(with_bias, b, &v1, r1);
      x[i + step] = v1;
    }
  }
}

template <class T>
__device__ __forceinline__ uint4* groups_at(const TensorView& v, int64_t offset) {
  return reinterpret_cast<uint4*>(static_cast<T*>(v.data) + offset);
}

// NHWC: items = 16-byte groups per image; step: the threads that work, a multiple of
// c / lanes, so thread tid keeps group tid % (c / lanes) of every pixel it visits.
template <class T, int A, bool kResidual>
__global__ void bias_activation_nhwc16_kernel(TensorView t, Epilogue e, uint32_t items, uint32_t step) {
  constexpr int kLanes = int(16 / sizeof(T));
  const uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= step) return;
  const int g = int(tid % uint32_t(t.c / kLanes));
  const bool with_bias = e.bias != nullptr;
  float b[kLanes];
#pragma unroll
  for (int k = 0; k < kLanes; ++k) b[k] = with_bias ? e.bias[g * kLanes + k] : 0.f;
  const int n = blockIdx.y;
  const uint4* r = kResidual ? groups_at<T>(e.res, int64_t(n) * e.res.n_stride) : nullptr;
  finish16_range<T, A, kResidual>(groups_at<T>(t, int64_t(n) * t.n_stride), r, tid, items, step, with_bias, b);
}

// NCHW: blockIdx.y walks the (image, channel) planes; items = 16-byte groups per plane.
template <class T, int A, bool kResidual>
__global__ void bias_activation_nchw16_kernel(TensorView t, Epilogue e, uint32_t items, uint32_t planes) {
  constexpr int kLanes = int(16 / sizeof(T));
  const bool with_bias = e.bias != nullptr;
  const int64_t plane = int64_t(items) * kLanes;
  for (uint32_t pl = blockIdx.y; pl < planes; pl += gridDim.y) {
    const int n = int(pl / uint32_t(t.c));
    const int c = int(pl) - n * t.c;
    float b[kLanes];
#pragma unroll
    for (int k = 0; k < kLanes; ++k) b[k] = with_bias ? e.bias[c] : 0.f;
    const uint4* r = kResidual ? groups_at<T>(e.res, int64_t(n) * e.res.n_stride + c * plane) : nullptr;
    finish16_range<T, A, kResidual>(groups_at<T>(t, int64_t(n) * t.n_stride + c * plane), r,
                                    blockIdx.x * blockDim.x + threadIdx.x, items, gridDim.x * blockDim.x,
                                    with_bias, b);
  }
}

// True when `v` is made of whole 16-byte groups of `lanes` elements: NHWC packed images
// of such channel groups, or NCHW planes (channel slices too) of such groups.
bool groups16(const TensorView& v, int lanes) {
  if (v.layout == Layout::kNHWC) return image_contiguous(v) && nhwc_groups16(v, lanes);
  return v.n_stride % lanes == 0 && reinterpret_cast<uintptr_t>(v.data) % 16 == 0 && (int64_t(v.h) * v.w) % lanes == 0;
}

using Kernel16 = void (*)(TensorView, Epilogue, uint32_t, uint32_t);

template <class T, int A, bool kResidual>
Kernel16 kernel16_of(Layout layout) {
  return layout == Layout::kNHWC ? bias_activation_nhwc16_kernel<T, A, kResidual>
                                 : bias_activation_nchw16_kernel<T, A, kResidual>;
}

template <class T, bool kResidual>
Kernel16 kernel16_for(Activation a, Layout layout) {
  switch (a) {
    case Activation::kLinear: return kernel16_of<T, int(Activation::kLinear), kResidual>(layout);
    case Activation::kLeaky: return kernel16_of<T, int(Activation::kLeaky), kResidual>(layout);
    case Activation::kLogistic: return kernel16_of<T, int(Activation::kLogistic), kResidual>(layout);
    case Activation::kSwish: return kernel16_of<T, int(Activation::kSwish), kResidual>(layout);
    case Activation::kMish: return kernel16_of<T, int(Activation::kMish), kResidual>(layout);
    default: return nullptr;
  }
}

// The 16-byte kernel for t's dtype and layout, e's activation and residual; null where it
// has none (other activations, a residual activation that is not linear or a residual of
// another layout, other geometries).
Kernel16 kernel16_for(const TensorView& t, const Epilogue& e, int lanes) {
  const bool res = e.res.data != nullptr;
  if (!groups16(t, lanes) || int64_t(t.n) * t.c >= (int64_t(1) << 31)) return nullptr;
  if (res && (e.res.layout != t.layout || !groups16(e.res, lanes) || e.res_act != Activation::kLinear)) return nullptr;
  if (t.dtype == DType::kF16)
    return res ? kernel16_for<__half, true>(e.act, t.layout) : kernel16_for<__half, false>(e.act, t.layout);
  return res ? kernel16_for<float, true>(e.act, t.layout) : kernel16_for<float, false>(e.act, t.layout);
}

// Launches `kernel` over t: two groups per thread where there are enough; NHWC: at least
// a thread per channel group; NCHW: up to 65535 planes per grid row, about 4096 blocks.
Status launch16(Kernel16 kernel, const TensorView& t, const Epilogue& e, int lanes, cudaStream_t stream) {
  if (t.layout == Layout::kNHWC) {
    const int64_t groups = t.c / lanes;
    const int64_t items = groups * t.h * t.w;
    const int64_t for_items = (items + 2 * kBlockThreads - 1) / (2 * kBlockThreads);
    const int64_t for_groups = (groups + kBlockThreads - 1) / kBlockThreads;
    const int64_t bx = std::min<int64_t>(kMaxBlocksX, std::max(for_items, for_groups));
    const uint32_t step = uint32_t(bx * kBlockThreads / groups * groups);
    kernel<<<dim3(unsigned(bx), unsigned(t.n), 1), kBlockThreads, 0, stream>>>(t, e, uint32_t(items), step);
  } else {
    const int64_t items = int64_t(t.h) * t.w / lanes;
    const int64_t planes = int64_t(t.n) * t.c;
    const int64_t by = std::min<int64_t>(planes, 65535);
    const int64_t bx = std::max<int64_t>(1, std::min<int64_t>((items + 2 * kBlockThreads - 1) / (2 * kBlockThreads),
                                                              std::max<int64_t>(1, 4096 / by)));
    kernel<<<dim3(unsigned(bx), unsigned(by), 1), kBlockThreads, 0, stream>>>(t, e, uint32_t(items),
                                                                               uint32_t(planes));
  }
  DLR_CUDA_LAUNCH_CHECK("bias_activation 16-byte kernel");
  return Status();
}

// The fast kernels' residual: absent, or addressed as they address t (NCHW: by channel
// planes; NHWC: packed images), each image from its own n_stride.
bool fast_residual(const TensorView& t, const TensorView& r) {
  if (r.data == nullptr) return true;
  if (r.layout != t.layout) return false;
  return t.layout == Layout::kNCHW || (image_contiguous(t) && image_contiguous(r));
}

Status launch(const TensorView& t, const Epilogue& e, cudaStream_t stream);

}  // namespace

Status bias_activation(const TensorView& t, const float* bias, Activation act, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(t, "bias_activation", "t"));
  if (bias == nullptr && act == Activation::kLinear) return Status();  // identity
  Epilogue e;
  e.bias = bias;
  e.act = act;
  return launch(t, e, stream);
}

Status bias_activation_add(const TensorView& t, const float* bias, Activation act, const TensorView& residual,
                           Activation residual_act, cudaStream_t stream) {
  DLR_RETURN_IF_ERROR(check_view(t, "bias_activation_add", "t"));
  DLR_RETURN_IF_ERROR(check_view(residual, "bias_activation_add", "residual"));
  if (residual.n != t.n || residual.c != t.c || residual.h != t.h || residual.w != t.w || residual.dtype != t.dtype)
    return invalid_argument("bias_activation_add: residual [" + view_dims(residual) + "] differs from the output [" +
                            view_dims(t) + "]");
  Epilogue e;
  e.bias = bias;
  e.act = act;
  e.res = residual;
  e.res_act = residual_act;
  return launch(t, e, stream);
}

namespace {

Status launch(const TensorView& t, const Epilogue& e, cudaStream_t stream) {
  const bool fast_res = fast_residual(t, e.res);
  const int64_t per_image = int64_t(t.c) * t.h * t.w;
  dim3 grid;
  bool empty = false;
  DLR_RETURN_IF_ERROR(image_grid(per_image, t.n, "bias_activation", &grid, &empty));
  if (empty) return Status();

  const int lanes = lanes16(t.dtype);
  if (const Kernel16 k16 = kernel16_for(t, e, lanes)) return launch16(k16, t, e, lanes, stream);

  // Fast kernels: about kTargetBlocks blocks in all, each thread doing several trips of kUnroll elements.
  constexpr int64_t kTargetBlocks = 4096;
  constexpr int64_t kPerBlock = int64_t(kBlockThreads) * kUnroll;
  if (t.layout == Layout::kNCHW && fast_res) {
    const int64_t plane = int64_t(t.h) * t.w;
    const int64_t planes = int64_t(t.n) * t.c;
    if (planes < (int64_t(1) << 31)) {
      const int64_t by = std::min<int64_t>(planes, 65535);
      const int64_t bx = std::max<int64_t>(
          1, std::min<int64_t>((plane + kPerBlock - 1) / kPerBlock, std::max<int64_t>(1, kTargetBlocks / by)));
      bias_activation_nchw_kernel<<<dim3(unsigned(bx), unsigned(by), 1), kBlockThreads, 0, stream>>>(
          t, e, int(planes), uint32_t(plane));
      DLR_CUDA_LAUNCH_CHECK("bias_activation_nchw_kernel");
      return Status();
    }
  } else if (t.layout == Layout::kNHWC && fast_res && image_contiguous(t) && t.c <= kMaxBlocksX * kBlockThreads) {
    // enough threads for one of each channel: step = threads rounded down to a multiple of c >= c > 0
    const int64_t bx = std::min<int64_t>(
        kMaxBlocksX, std::max<int64_t>((per_image + kPerBlock - 1) / kPerBlock,
                                       (int64_t(t.c) + kBlockThreads - 1) / kBlockThreads));
    const uint32_t threads = uint32_t(bx) * uint32_t(kBlockThreads);
    const uint32_t step = threads / uint32_t(t.c) * uint32_t(t.c);
    bias_activation_nhwc_kernel<<<dim3(unsigned(bx), unsigned(t.n), 1), kBlockThreads, 0, stream>>>(
        t, e, uint32_t(per_image), step);
    DLR_CUDA_LAUNCH_CHECK("bias_activation_nhwc_kernel");
    return Status();
  }
  bias_activation_kernel<<<grid, kBlockThreads, 0, stream>>>(t, e, uint32_t(per_image));
  DLR_CUDA_LAUNCH_CHECK("bias_activation_kernel");
  return Status();
}

}  // namespace
}  // namespace dlr::cuda
