// Helpers for the GPU kernel tests (tests/gpu): device detection, host fp32
// NCHW tensors, device views of any layout / dtype / channel-slice geometry
// (conversion done on the host, independent of the kernels under test), and
// comparisons that print precise diagnostics.
//
// Every device buffer is filled with 0xFF bytes (NaN in f32 and f16) before use:
// a kernel that misses an element leaves a NaN, and bytes outside the view must
// still be 0xFF after a run (a kernel that writes outside its view is caught).
// Helpers return cudaError_t; tests check them with ASSERT_EQ(cudaSuccess, ...).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_handles.h"
#include "kernels/tensor_view.h"

namespace dlr::test {

// True when cudaGetDeviceCount succeeds with at least one device (cached).
bool have_cuda_device();
// Why there is no device (the cudaGetDeviceCount error), for skip messages.
std::string cuda_device_message();

// ---- host tensors: fp32, NCHW, packed ----
struct HostTensor {
  int n = 0;
  Shape3 shape;
  std::vector<float> data;

  HostTensor() = default;
  HostTensor(int n_, Shape3 s, float fill = 0.f) : n(n_), shape(s), data(size_t(n_) * size_t(s.count()), fill) {}
  int64_t index(int b, int c, int y, int x) const { return ((int64_t(b) * shape.c + c) * shape.h + y) * shape.w + x; }
  float& at(int b, int c, int y, int x) { return data[size_t(index(b, c, y, x))]; }
  float at(int b, int c, int y, int x) const { return data[size_t(index(b, c, y, x))]; }
  // A packed fp32 NCHW view of data (for the CPU reference ops).
  TensorView view() { return TensorView::packed(data.data(), DType::kF32, Layout::kNCHW, n, shape); }
  std::string where(int64_t i) const;  // "[n,c,y,x]" of flat index i
};

// Uniform values in [lo, hi), deterministic for a seed.
HostTensor random_tensor(int n, Shape3 shape, uint32_t seed, float lo = -4.f, float hi = 4.f);
void fill_random(std::vector<float>* v, uint32_t seed, float lo, float hi);

// cudaMemcpy from host to device, then cudaDeviceSynchronize: a plain cudaMemcpy from
// pageable memory may return before its DMA lands, and the tests' streams are
// non-blocking, so their kernels would not wait for it.
cudaError_t to_device(void* dst, const void* src, size_t bytes);
// Rounds every value through IEEE half (what an f16 view stores), in place.
void round_to_half(HostTensor* t);
// v rounded to the nearest TF32 value (10 mantissa bits, ties to even), as split_tf32's
// high part (kernels/cuda/cuda_ops.h).
float tf32_high(float v);

// ---- device views ----
// Geometry of a device view: the buffer holds c_before + c + c_after channels
// per image (NCHW planes / NHWC pixel_stride), the view starts at channel
// c_before, and n_pad extra elements separate consecutive images.
struct ViewSpec {
  DType dtype = DType::kF32;
  Layout layout = Layout::kNCHW;
  int c_before = 0;
  int c_after = 0;
  int64_t n_pad = 0;
};
std::string describe(const ViewSpec& s);  // e.g. "f16 NHWC slice[+2,+3] npad 7"
// The usual set: packed and sliced views, both layouts, f32 and f16.
std::vector<ViewSpec> standard_specs();
inline ViewSpec packed_spec(DType d, Layout l) { return ViewSpec{d, l, 0, 0, 0}; }

// A device buffer holding one view (move-only; frees with cudaFree).
class DeviceTensor {
 public:
  DeviceTensor() = default;
  DeviceTensor(DeviceTensor&& o) noexcept { *this = std::move(o); }
  DeviceTensor& operator=(DeviceTensor&& o) noexcept;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor();

  // Allocates the buffer for n x shape with geometry `spec` and fills it with 0xFF.
  cudaError_t create(int n, Shape3 shape, const ViewSpec& spec, cudaStream_t stream);
  // create() then writes `h` into the view (host-side conversion); the rest stays 0xFF.
  cudaError_t upload(const HostTensor& h, const ViewSpec& spec, cudaStream_t stream);
  // Refills the whole buffer with 0xFF (poison) on `stream`.
  cudaError_t poison(cudaStream_t stream);
  // Reads the view back as fp32 NCHW (synchronises `stream`). *outside_touched is
  // the number of buffer elements outside the view that are no longer 0xFF, and
  // *first_outside the buffer element index of the first one (-1 if none).
  cudaError_t download(HostTensor* h, int64_t* outside_touched, int64_t* first_outside, cudaStream_t stream) const;

  const TensorView& view() const { return m_view; }
  const ViewSpec& spec() const { return m_spec; }
  size_t buffer_elems() const { return m_elems; }

 private:
  // Element offset of (b, c, y, x) of the view from the buffer start.
  int64_t buffer_offset(int b, int c, int y, int x) const;
  void* m_base = nullptr;
  size_t m_elems = 0;
  ViewSpec m_spec;
  TensorView m_view;
};

// ---- comparisons ----
// Relative L2 error ||got - want|| / ||want|| (||got - want|| when want is 0).
double rel_l2(const std::vector<float>& got, const std::vector<float>& want);

// Passes when got and want have the same size, every `want`-finite element of got is
// finite, rel_l2 <= tol, AND no element is an outlier: |got - want| <= kOutlierFactor *
// tol * max(|want|, rms(want)) for every element (an L2 bound alone lets one element
// wrong by the RMS pass at tf32/fp16 tolerances). The message gives rel err, max abs
// err and its [n,c,y,x], NaN count, the outlier count and the first outlier.
//
// kOutlierFactor = 8: on the H100 (cuDNN 9.14, docs/results/h100-2026-11-21-search/
// final/gpu_tests.log) the largest element error of any conv run is 8x its rel L2 error
// (WINOGRAD_NONFUSED fp32: max abs 9.97e-6 at rel 1.21e-6 on O(1) outputs) and every
// rel error is at least 8x below its tolerance (fp32 1.2e-6 vs 1e-5, tf32 2.9e-4 and
// fp16 5.8e-4 vs 5e-3), so a correct kernel stays >= 8x inside this bound; an element
// off by rms(want) fails whenever |want| < rms / (8 tol) (25 rms at tol 5e-3).
constexpr double kOutlierFactor = 8.0;
::testing::AssertionResult near_rel(const HostTensor& got, const HostTensor& want, double tol,
                                    const std::string& what);
// Passes when the float bits are identical (memcmp); otherwise reports the number
// of differing elements, the first one ([n,c,y,x], both values and bit patterns).
::testing::AssertionResult bit_equal(const HostTensor& got, const HostTensor& want, const std::string& what);
// Passes when a kernel left every element outside its view untouched.
::testing::AssertionResult untouched_outside(int64_t outside_touched, int64_t first_outside, const std::string& what);

std::string shape_str(int n, Shape3 s);  // "NxCxHxW"

// Fixture of the op tests: skips without a CUDA device, owns a non-blocking
// stream, and after the test checks that the device has no pending (asynchronous)
// error: an illegal address in a kernel is reported by the test that caused it.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  cudaStream_t stream() const { return m_stream; }

 private:
  cudaStream_t m_stream = nullptr;
};

// A GpuTest with a cuDNN and a cuBLAS handle of its own (made in SetUp unless the test
// is skipped; destroyed with the fixture, after TearDown has synchronised the stream).
class LibraryTest : public GpuTest {
 protected:
  void SetUp() override;
  cudnnHandle_t cudnn() const { return m_cudnn.get(); }
  cublasHandle_t cublas() const { return m_cublas.get(); }

 private:
  cuda::CudnnHandle m_cudnn;
  cuda::CublasHandle m_cublas;
};

}  // namespace dlr::test

// First statement of every GPU test: skips with a message without a CUDA device.
#define DLR_REQUIRE_GPU()                                                                     \
  do {                                                                                        \
    if (!::dlr::test::have_cuda_device())                                                     \
      GTEST_SKIP() << "no CUDA device (" << ::dlr::test::cuda_device_message() << ")";        \
  } while (0)
