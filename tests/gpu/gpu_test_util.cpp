#include "tests/gpu/gpu_test_util.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <utility>

#include "runtime/core/half.h"

namespace dlr::test {
namespace {

struct DeviceProbe {
  bool ok = false;
  std::string message;
};

const DeviceProbe& probe() {
  static const DeviceProbe p = [] {
    DeviceProbe r;
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      r.message = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
      cudaGetLastError();  // clear the (non-sticky) error
    } else if (count == 0) {
      r.message = "cudaGetDeviceCount returned 0 devices";
    } else {
      r.ok = true;
      r.message = std::to_string(count) + " device(s)";
    }
    return r;
  }();
  return p;
}

std::string fmt_float(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g (0x%08x)", double(v), bits);
  return buf;
}

}  // namespace

bool have_cuda_device() { return probe().ok; }
std::string cuda_device_message() { return probe().message; }

std::string shape_str(int n, Shape3 s) {
  return std::to_string(n) + "x" + std::to_string(s.c) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w);
}

std::string HostTensor::where(int64_t i) const {
  const int64_t x = i % shape.w;
  const int64_t y = (i / shape.w) % shape.h;
  const int64_t c = (i / (int64_t(shape.w) * shape.h)) % shape.c;
  const int64_t b = i / shape.count();
  return "[" + std::to_string(b) + "," + std::to_string(c) + "," + std::to_string(y) + "," + std::to_string(x) + "]";
}

void fill_random(std::vector<float>* v, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& x : *v) x = dist(rng);
}

HostTensor random_tensor(int n, Shape3 shape, uint32_t seed, float lo, float hi) {
  HostTensor t(n, shape);
  fill_random(&t.data, seed, lo, hi);
  return t;
}

float tf32_high(float v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  b += 0x0FFFu + ((b >> 13) & 1u);
  b &= ~0x1FFFu;
  float r = 0;
  std::memcpy(&r, &b, 4);
  return r;
}

void round_to_half(HostTensor* t) {
  for (float& v : t->data) v = half_to_float(float_to_half(v));
}

std::string describe(const ViewSpec& s) {
  std::string d = std::string(s.dtype == DType::kF16 ? "f16" : "f32") + (s.layout == Layout::kNCHW ? " NCHW" : " NHWC");
  if (s.c_before || s.c_after) d += " slice[+" + std::to_string(s.c_before) + ",+" + std::to_string(s.c_after) + "]";
  if (s.n_pad) d += " npad " + std::to_string(s.n_pad);
  if (!s.c_before && !s.c_after && !s.n_pad) d += " packed";
  return d;
}

std::vector<ViewSpec> standard_specs() {
  return {
      {DType::kF32, Layout::kNCHW, 0, 0, 0},  {DType::kF32, Layout::kNCHW, 3, 2, 5},
      {DType::kF32, Layout::kNHWC, 0, 0, 0},  {DType::kF32, Layout::kNHWC, 2, 3, 7},
      {DType::kF16, Layout::kNCHW, 0, 0, 0},  {DType::kF16, Layout::kNCHW, 1, 4, 3},
      {DType::kF16, Layout::kNHWC, 0, 0, 0},  {DType::kF16, Layout::kNHWC, 5, 1, 9},
  };
}

// ---- DeviceTensor ----

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& o) noexcept {
  if (this != &o) {
    if (m_base) cudaFree(m_base);
    m_base = std::exchange(o.m_base, nullptr);
    m_elems = std::exchange(o.m_elems, 0);
    m_spec = o.m_spec;
    m_view = o.m_view;
  }
  return *this;
}

DeviceTensor::~DeviceTensor() {
  if (m_base) cudaFree(m_base);
}

cudaError_t DeviceTensor::create(int n, Shape3 shape, const ViewSpec& spec, cudaStream_t stream) {
  if (m_base) {
    cudaFree(m_base);
    m_base = nullptr;
  }
  m_spec = spec;
  const int buf_c = spec.c_before + shape.c + spec.c_after;
  const int64_t n_stride = int64_t(buf_c) * shape.h * shape.w + spec.n_pad;
  m_elems = size_t(std::max<int64_t>(int64_t(n) * n_stride, 1));
  const size_t esize = dtype_size(spec.dtype);
  cudaError_t e = cudaMalloc(&m_base, m_elems * esize);
  if (e != cudaSuccess) {
    m_base = nullptr;
    return e;
  }
  TensorView v;
  v.dtype = spec.dtype;
  v.layout = spec.layout;
  v.n = n;
  v.c = shape.c;
  v.h = shape.h;
  v.w = shape.w;
  v.n_stride = n_stride;
  v.pixel_stride = buf_c;
  const int64_t start = spec.layout == Layout::kNCHW ? int64_t(spec.c_before) * shape.h * shape.w : spec.c_before;
  v.data = static_cast<char*>(m_base) + start * int64_t(esize);
  m_view = v;
  return poison(stream);
}

cudaError_t DeviceTensor::poison(cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(m_base, 0xFF, m_elems * dtype_size(m_spec.dtype), stream);
  if (e != cudaSuccess) return e;
  return cudaStreamSynchronize(stream);
}

int64_t DeviceTensor::buffer_offset(int b, int c, int y, int x) const {
  const TensorView& v = m_view;
  if (v.layout == Layout::kNCHW)
    return b * v.n_stride + ((int64_t(m_spec.c_before) + c) * v.h + y) * v.w + x;
  return b * v.n_stride + (int64_t(y) * v.w + x) * v.pixel_stride + m_spec.c_before + c;
}

cudaError_t DeviceTensor::upload(const HostTensor& h, const ViewSpec& spec, cudaStream_t stream) {
  cudaError_t e = create(h.n, h.shape, spec, stream);
  if (e != cudaSuccess) return e;
  const size_t esize = dtype_size(spec.dtype);
  std::vector<uint8_t> bytes(m_elems * esize, 0xFF);
  for (int b = 0; b < h.n; ++b)
    for (int c = 0; c < h.shape.c; ++c)
      for (int y = 0; y < h.shape.h; ++y)
        for (int x = 0; x < h.shape.w; ++x) {
          const float v = h.at(b, c, y, x);
          const size_t off = size_t(buffer_offset(b, c, y, x));
          if (spec.dtype == DType::kF16) {
            const uint16_t hv = float_to_half(v);
            std::memcpy(bytes.data() + off * 2, &hv, 2);
          } else {
            std::memcpy(bytes.data() + off * 4, &v, 4);
          }
        }
  e = cudaMemcpyAsync(m_base, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream);
  if (e != cudaSuccess) return e;
  return cudaStreamSynchronize(stream);  // `bytes` must outlive the copy
}

cudaError_t DeviceTensor::download(HostTensor* h, int64_t* outside_touched, int64_t* first_outside,
                                   cudaStream_t stream) const {
  const size_t esize = dtype_size(m_spec.dtype);
  std::vector<uint8_t> bytes(m_elems * esize);
  cudaError_t e = cudaMemcpyAsync(bytes.data(), m_base, bytes.size(), cudaMemcpyDeviceToHost, stream);
  if (e != cudaSuccess) return e;
  e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return e;
  const TensorView& v = m_view;
  *h = HostTensor(v.n, v.shape());
  std::vector<uint8_t> inside(m_elems, 0);
  for (int b = 0; b < v.n; ++b)
    for (int c = 0; c < v.c; ++c)
      for (int y = 0; y < v.h; ++y)
        for (int x = 0; x < v.w; ++x) {
          const size_t off = size_t(buffer_offset(b, c, y, x));
          inside[off] = 1;
          float f;
          if (m_spec.dtype == DType::kF16) {
            uint16_t hv;
            std::memcpy(&hv, bytes.data() + off * 2, 2);
            f = half_to_float(hv);
          } else {
            std::memcpy(&f, bytes.data() + off * 4, 4);
          }
          h->at(b, c, y, x) = f;
        }
  *outside_touched = 0;
  *first_outside = -1;
  for (size_t i = 0; i < m_elems; ++i) {
    if (inside[i]) continue;
    bool poisoned = true;
    for (size_t k = 0; k < esize; ++k) poisoned = poisoned && bytes[i * esize + k] == 0xFF;
    if (!poisoned) {
      if (*first_outside < 0) *first_outside = int64_t(i);
      ++*outside_touched;
    }
  }
  return cudaSuccess;
}

// ---- comparisons ----

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

::testing::AssertionResult near_rel(const HostTensor& got, const HostTensor& want, double tol,
                                    const std::string& what) {
  if (got.data.size() != want.data.size() || got.n != want.n || got.shape != want.shape)
    return ::testing::AssertionFailure() << what << ": shape " << shape_str(got.n, got.shape) << " vs expected "
                                         << shape_str(want.n, want.shape);
  const size_t count = want.data.size();
  double sq = 0;
  for (float v : want.data) sq += double(v) * double(v);
  const double rms = count ? std::sqrt(sq / double(count)) : 0.0;
  double max_abs = 0;
  int64_t max_i = -1, first_bad = -1, bad = 0, nonfinite = 0, first_nonfinite = -1;
  for (size_t i = 0; i < count; ++i) {
    const float g = got.data[i], w = want.data[i];
    if (std::isfinite(w) && !std::isfinite(g)) {
      if (first_nonfinite < 0) first_nonfinite = int64_t(i);
      ++nonfinite;
    }
    const double d = std::fabs(double(g) - double(w));
    if (std::isfinite(d) && (max_i < 0 || d > max_abs)) {
      max_abs = d;
      max_i = int64_t(i);
    }
    if (std::isfinite(w) && !(d <= kOutlierFactor * tol * std::max(std::fabs(double(w)), rms))) {
      if (first_bad < 0) first_bad = int64_t(i);
      ++bad;
    }
  }
  const double rel = rel_l2(got.data, want.data);
  std::ostringstream msg;
  msg << what << ": rel err " << rel << " (tol " << tol << "), max abs err " << max_abs;
  if (max_i >= 0)
    msg << " at " << want.where(max_i) << " got " << fmt_float(got.data[max_i]) << " want "
        << fmt_float(want.data[max_i]);
  msg << ", non-finite " << nonfinite;
  if (first_nonfinite >= 0)
    msg << " (first " << want.where(first_nonfinite) << " got " << fmt_float(got.data[first_nonfinite]) << " want "
        << fmt_float(want.data[first_nonfinite]) << ")";
  msg << ", outliers (|d| > " << kOutlierFactor << "*tol*max(|want|, rms)) " << bad << "/" << count;
  if (first_bad >= 0)
    msg << ", first " << want.where(first_bad) << " got " << fmt_float(got.data[first_bad]) << " want "
        << fmt_float(want.data[first_bad]);
  if (nonfinite == 0 && rel <= tol && bad == 0) return ::testing::AssertionSuccess() << msg.str();
  return ::testing::AssertionFailure() << msg.str();
}

::testing::AssertionResult bit_equal(const HostTensor& got, const HostTensor& want, const std::string& what) {
  if (got.data.size() != want.data.size() || got.n != want.n || got.shape != want.shape)
    return ::testing::AssertionFailure() << what << ": shape " << shape_str(got.n, got.shape) << " vs expected "
                                         << shape_str(want.n, want.shape);
  if (std::memcmp(got.data.data(), want.data.data(), want.data.size() * sizeof(float)) == 0)
    return ::testing::AssertionSuccess();
  int64_t first = -1, diff = 0;
  double max_abs = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    if (std::memcmp(&got.data[i], &want.data[i], sizeof(float)) != 0) {
      if (first < 0) first = int64_t(i);
      ++diff;
      const double d = std::fabs(double(got.data[i]) - double(want.data[i]));
      if (!(d <= max_abs)) max_abs = d;
    }
  }
  return ::testing::AssertionFailure() << what << ": not bit-identical: " << diff << "/" << want.data.size()
                                       << " elements differ (max abs " << max_abs << "), first at "
                                       << want.where(first) << " got " << fmt_float(got.data[size_t(first)])
                                       << " want " << fmt_float(want.data[size_t(first)]);
}

::testing::AssertionResult untouched_outside(int64_t outside_touched, int64_t first_outside, const std::string& what) {
  if (outside_touched == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << outside_touched
                                       << " buffer elements outside the view were written (first at buffer element "
                                       << first_outside << ")";
}

void GpuTest::SetUp() {
  if (!have_cuda_device()) GTEST_SKIP() << "no CUDA device (" << cuda_device_message() << ")";
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
}

void LibraryTest::SetUp() {
  GpuTest::SetUp();
  if (IsSkipped() || HasFatalFailure()) return;
  auto dnn = cuda::make_cudnn();
  ASSERT_TRUE(dnn.ok()) << dnn.status().to_string();
  m_cudnn = std::move(dnn).value();
  auto blas = cuda::make_cublas();
  ASSERT_TRUE(blas.ok()) << blas.status().to_string();
  m_cublas = std::move(blas).value();
}

void GpuTest::TearDown() {
  if (!m_stream) return;
  const cudaError_t sync = cudaStreamSynchronize(m_stream);
  EXPECT_EQ(cudaSuccess, sync) << "pending device error after the test: " << cudaGetErrorName(sync) << ": "
                               << cudaGetErrorString(sync)
                               << " (sticky errors fail every later test; rerun this one with compute-sanitizer)";
  EXPECT_EQ(cudaSuccess, cudaStreamDestroy(m_stream));
  m_stream = nullptr;
}

cudaError_t to_device(void* dst, const void* src, size_t bytes) {
  const cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

}  // namespace dlr::test
