// The 3xTF32 convolution (kernels/cuda/conv_3xtf32.h) and its operand split
// (split_tf32, split_tf32_patches) and the partial sums (sum_partials): the
// split is exact (hi + lo == v, hi on the TF32 grid, both chunk layouts as documented); the
// conv in each form (chunked, GEMM) stays within 1e-5 of a double-precision
// reference (rel L2 and every element against the largest output) with reductions cut into several chunks,
// strides, batches, a channel-slice input, bias and activations, accumulation and a
// residual; a channel slice read in place gives its packed copy's output bit for bit;
// bad views and workspaces are refused.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/conv_3xtf32.h"
#include "kernels/cuda/cuda_ops.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

// Device memory of n elements of T (owned).
template <class T>
struct DeviceArray {
  cuda::DeviceBuffer buf;
  T* p = nullptr;
  explicit DeviceArray(size_t n) {
    auto b = cuda::DeviceBuffer::alloc(n * sizeof(T));
    EXPECT_TRUE(b.ok()) << b.status().to_string();
    if (b.ok()) buf = std::move(b).value();
    p = static_cast<T*>(buf.data());
  }
};

class Tf32x3Test : public LibraryTest {};

TEST_F(Tf32x3Test, SplitIsExactInChunks) {
  const int64_t rows = 37;
  const int c = 11, stride = 14, chunk = 4;  // chunks of 4, 4 and 3 columns
  std::vector<float> src(size_t(rows * stride));
  fill_random(&src, 3, -100.f, 100.f);
  src[5] = 1.0f + 1.0f / 4096;  // a tie on the TF32 grid
  DeviceArray<float> d_src(src.size()), d_dst(size_t(rows * 3 * c));
  ASSERT_EQ(cudaSuccess, to_device(d_src.p, src.data(), src.size() * 4));
  for (auto layout : {cuda::Tf32SplitLayout::kChunkBlocks, cuda::Tf32SplitLayout::kChunksInRow})
  for (auto order : {cuda::Tf32SplitOrder::kHighHighLow, cuda::Tf32SplitOrder::kHighLowHigh}) {
    ASSERT_TRUE(cuda::split_tf32(d_src.p, rows, c, stride, chunk, order, layout, d_dst.p, stream()).ok());
    std::vector<float> got(size_t(rows * 3 * c));
    ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(got.data(), d_dst.p, got.size() * 4, cudaMemcpyDeviceToHost, stream()));
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream()));
    for (int64_t r = 0; r < rows; ++r)
      for (int col = 0; col < c; ++col) {
        const int j = col / chunk, k = col % chunk, n = std::min(chunk, c - j * chunk);
        const float v = src[size_t(r * stride + col)], hi = tf32_high(v), lo = v - hi;
        ASSERT_EQ(hi + lo, v);
        const float* out = layout == cuda::Tf32SplitLayout::kChunkBlocks ? got.data() + rows * 3 * j * chunk + r * 3 * n
                                                                         : got.data() + r * 3 * c + 3 * j * chunk;
        const bool hhl = order == cuda::Tf32SplitOrder::kHighHighLow;
        ASSERT_EQ(out[k], hi) << "row " << r << " col " << col;
        ASSERT_EQ(out[n + k], hhl ? hi : lo) << "row " << r << " col " << col;
        ASSERT_EQ(out[2 * n + k], hhl ? lo : hi) << "row " << r << " col " << col;
      }
  }
  EXPECT_EQ(tf32_high(1.0f + 1.0f / 4096), 1.0f);  // ties to even
  const Status narrow =
      cuda::split_tf32(d_src.p, rows, c, c - 1, chunk, cuda::Tf32SplitOrder::kHighLowHigh,
                       cuda::Tf32SplitLayout::kChunkBlocks, d_dst.p, stream());
  EXPECT_EQ(narrow.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(narrow.message().find("stride 10"), std::string::npos) << narrow.message();
  const Status null =
      cuda::split_tf32(nullptr, rows, c, c, chunk, cuda::Tf32SplitOrder::kHighLowHigh,
                       cuda::Tf32SplitLayout::kChunkBlocks, d_dst.p, stream());
  EXPECT_NE(null.message().find("split_tf32: null pointer"), std::string::npos) << null.message();
}

struct Case {
  const char* name;
  int n, c, h, w, filters, size, stride, pad;
  Activation act;
  bool bias, accumulate, residual, slice;
  int chunk_products;
};

// out[b][o][y][x] in double over OIHW weights `w` (fp32 NCHW host tensors).
std::vector<double> reference_conv(const Case& k, const HostTensor& x, const std::vector<float>& w, int oh, int ow) {
  std::vector<double> y(size_t(k.n) * k.filters * oh * ow, 0.0);
  for (int b = 0; b < k.n; ++b)
    for (int o = 0; o < k.filters; ++o)
      for (int yy = 0; yy < oh; ++yy)
        for (int xx = 0; xx < ow; ++xx) {
          double s = 0;
          for (int c = 0; c < k.c; ++c)
            for (int i = 0; i < k.size; ++i)
              for (int j = 0; j < k.size; ++j) {
                const int iy = yy * k.stride - k.pad + i, ix = xx * k.stride - k.pad + j;
                if (iy < 0 || ix < 0 || iy >= k.h || ix >= k.w) continue;
                s += double(x.at(b, c, iy, ix)) * double(w[((size_t(o) * k.c + c) * k.size + i) * k.size + j]);
              }
          y[((size_t(b) * k.filters + o) * oh + yy) * ow + xx] = s;
        }
  return y;
}

// The chunks the form cuts the reduction into (conv_3xtf32.h): C channels of k x k
// products (the last chunk may be narrower), or (kGemm) the k x k x C products in chunks
// of one width.
int expected_chunks(const Case& k, cuda::Tf32x3Form form) {
  const int kk = k.size * k.size;
  if (form == cuda::Tf32x3Form::kChunks) {
    const int widest = std::min(k.c, k.chunk_products / kk);
    return (k.c + widest - 1) / widest;
  }
  const int n = kk * k.c;
  int d = std::min(n, k.chunk_products);
  while (n % d != 0) --d;
  return n / d;
}

const char* form_name(cuda::Tf32x3Form form) { return form == cuda::Tf32x3Form::kGemm ? "GEMM" : "chunked"; }

void check_case(cudnnHandle_t handle, cublasHandle_t cublas, cudaStream_t stream, const Case& k,
                cuda::Tf32x3Form form) {
  SCOPED_TRACE(std::string(k.name) + ", " + form_name(form));
  const int oh = (k.h + 2 * k.pad - k.size) / k.stride + 1, ow = (k.w + 2 * k.pad - k.size) / k.stride + 1;
  const Shape3 in_shape{k.c, k.h, k.w}, out_shape{k.filters, oh, ow};
  const HostTensor x = random_tensor(k.n, in_shape, 21, -1.f, 1.f);
  std::vector<float> w(size_t(k.filters) * k.c * k.size * k.size);
  const float scale = 1.f / std::sqrt(float(k.c * k.size * k.size));
  fill_random(&w, 22, -scale, scale);
  std::vector<float> bias(size_t(k.filters));
  fill_random(&bias, 23, -0.5f, 0.5f);
  const HostTensor out0 = random_tensor(k.n, out_shape, 24, -1.f, 1.f);  // accumulate: the output's old values
  const HostTensor res = random_tensor(k.n, out_shape, 25, -1.f, 1.f);
  const std::vector<double> conv = reference_conv(k, x, w, oh, ow);
  HostTensor want(k.n, out_shape);
  for (size_t i = 0; i < want.data.size(); ++i) {
    const int o = int((i / size_t(oh * ow)) % size_t(k.filters));
    double v = conv[i] + (k.bias ? bias[size_t(o)] : 0.0) + (k.accumulate ? out0.data[i] : 0.0);
    float f = cpu::activate(k.act, float(v));
    if (k.residual) f = cpu::activate(Activation::kLeaky, f + res.data[i]);
    want.data[i] = f;
  }
  const ViewSpec in_spec{DType::kF32, Layout::kNHWC, k.slice ? 3 : 0, k.slice ? 5 : 0, 0};
  const ViewSpec out_spec = packed_spec(DType::kF32, Layout::kNHWC);
  DeviceTensor dx, dy, dr;
  ASSERT_EQ(cudaSuccess, dx.upload(x, in_spec, stream));
  ASSERT_EQ(cudaSuccess, dy.upload(out0, out_spec, stream));
  ASSERT_EQ(cudaSuccess, dr.upload(res, out_spec, stream));
  std::vector<float> ohwi(w.size());
  for (int o = 0; o < k.filters; ++o)
    for (int c = 0; c < k.c; ++c)
      for (int i = 0; i < k.size * k.size; ++i)
        ohwi[(size_t(o) * k.size * k.size + i) * k.c + c] = w[(size_t(o) * k.c + c) * k.size * k.size + i];
  DeviceArray<float> dw(ohwi.size()), db(bias.size());
  ASSERT_EQ(cudaSuccess, to_device(dw.p, ohwi.data(), ohwi.size() * 4));
  ASSERT_EQ(cudaSuccess, to_device(db.p, bias.data(), bias.size() * 4));
  cuda::Tf32x3Config cfg;
  cfg.params.filters = k.filters;
  cfg.params.size = k.size;
  cfg.params.stride_x = cfg.params.stride_y = k.stride;
  cfg.params.padding = k.pad;
  cfg.params.activation = k.act;
  cfg.chunk_products = k.chunk_products;
  cfg.accumulate = k.accumulate;
  cfg.form = form;
  auto conv3 = cuda::Tf32x3Conv::create(handle, cfg, dx.view(), dy.view());
  const int chunks = expected_chunks(k, form);
  ASSERT_TRUE(conv3.ok()) << conv3.status().to_string();
  EXPECT_EQ((*conv3)->chunks(), chunks);
  const size_t ws_bytes = (*conv3)->workspace_bytes();
  DeviceArray<char> ws(ws_bytes);
  const TensorView rv = dr.view();
  const cuda::ConvResidual residual = k.residual ? cuda::ConvResidual{&rv, Activation::kLeaky} : cuda::ConvResidual{};
  const Status short_ws = (*conv3)->run(handle, cublas, dx.view(), dw.p, db.p, dy.view(), ws.p, ws_bytes - 1, stream, residual);
  EXPECT_EQ(short_ws.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(short_ws.message().find(std::to_string(ws_bytes) + " needed"), std::string::npos) << short_ws.message();
  ASSERT_TRUE((*conv3)->run(handle, cublas, dx.view(), dw.p, k.bias ? db.p : nullptr, dy.view(), ws.p, ws_bytes, stream,
                            residual)
                  .ok());
  HostTensor got;
  int64_t touched = 0, first = -1;
  ASSERT_EQ(cudaSuccess, dy.download(&got, &touched, &first, stream));
  EXPECT_TRUE(near_rel(got, want, 1e-5, k.name));
  double mx = 0, err = 0;
  for (size_t i = 0; i < got.data.size(); ++i) {
    mx = std::max(mx, double(std::fabs(want.data[i])));
    err = std::max(err, double(std::fabs(got.data[i] - want.data[i])));
  }
  std::printf("[3xtf32] %-28s %s, %d chunks, max error %.2e of the largest output, workspace %zu bytes\n", k.name,
              form_name(form), (*conv3)->chunks(), err / mx, ws_bytes);
  EXPECT_LE(err, 1e-5 * mx);
}

TEST_F(Tf32x3Test, WithinTheStrictToleranceOfADoubleReference) {
  const Case cases[] = {
      {"k3 c128 13x13 leaky, 3 chunks", 1, 128, 13, 13, 64, 3, 1, 1, Activation::kLeaky, true, false, false, false, 512},
      {"k1 c1024 7x7 mish, 2 chunks", 1, 1024, 7, 7, 32, 1, 1, 0, Activation::kMish, true, false, false, false, 512},
      {"k3/2 c64 15x15 batch 2", 2, 64, 15, 15, 48, 3, 2, 1, Activation::kLinear, false, false, false, false, 512},
      {"k3 c96 slice, accumulate", 1, 96, 9, 11, 40, 3, 1, 1, Activation::kLogistic, true, true, false, true, 256},
      {"k1 c300 residual, 3 chunks", 1, 300, 10, 10, 24, 1, 1, 0, Activation::kLinear, true, false, true, false, 128},
      {"k3 c8 one chunk", 1, 8, 20, 20, 16, 3, 1, 1, Activation::kSwish, true, false, false, false, 512},
      {"k1 c64 slice, 2 chunks", 1, 64, 9, 9, 24, 1, 1, 0, Activation::kLeaky, true, false, false, true, 32},
  };
  for (const Case& k : cases)
    for (auto form : {cuda::Tf32x3Form::kChunks, cuda::Tf32x3Form::kGemm})
      check_case(cudnn(), cublas(), stream(), k, form);
}

// The engine hands a 3xTF32 conv an input-channel slice in place of its packed copy
// (CudaEngine::x3_input): the same values read through a channel-slice view give the
// same output bit for bit, in both forms, for a 3x3 (patches unrolled) and a 1x1 conv.
TEST_F(Tf32x3Test, ChannelSliceInPlaceBitIdenticalToItsPackedCopy) {
  for (const int size : {3, 1}) {
    const int c = 72, h = 11, w = 9, filters = 40, pad = size / 2;
    const HostTensor x = random_tensor(1, Shape3{c, h, w}, 31, -1.f, 1.f);
    std::vector<float> ohwi(size_t(filters) * c * size * size);
    fill_random(&ohwi, 32, -0.1f, 0.1f);
    DeviceTensor sliced, packed, y_sliced, y_packed;
    ASSERT_EQ(cudaSuccess, sliced.upload(x, ViewSpec{DType::kF32, Layout::kNHWC, 8, 24, 0}, stream()));
    ASSERT_EQ(cudaSuccess, packed.upload(x, packed_spec(DType::kF32, Layout::kNHWC), stream()));
    const Shape3 out{filters, h, w};
    ASSERT_EQ(cudaSuccess, y_sliced.create(1, out, packed_spec(DType::kF32, Layout::kNHWC), stream()));
    ASSERT_EQ(cudaSuccess, y_packed.create(1, out, packed_spec(DType::kF32, Layout::kNHWC), stream()));
    DeviceArray<float> dw(ohwi.size());
    ASSERT_EQ(cudaSuccess, to_device(dw.p, ohwi.data(), ohwi.size() * 4));
    for (auto form : {cuda::Tf32x3Form::kChunks, cuda::Tf32x3Form::kGemm}) {
      SCOPED_TRACE(std::string(form_name(form)) + ", k" + std::to_string(size));
      cuda::Tf32x3Config cfg;
      cfg.params.filters = filters;
      cfg.params.size = size;
      cfg.params.padding = pad;
      cfg.params.activation = Activation::kLeaky;
      cfg.chunk_products = 256;
      cfg.form = form;
      HostTensor got[2];
      DeviceTensor* ins[2] = {&sliced, &packed};
      DeviceTensor* outs[2] = {&y_sliced, &y_packed};
      for (int k = 0; k < 2; ++k) {
        auto conv = cuda::Tf32x3Conv::create(cudnn(), cfg, ins[k]->view(), outs[k]->view());
        ASSERT_TRUE(conv.ok()) << conv.status().to_string();
        DeviceArray<char> ws((*conv)->workspace_bytes());
        ASSERT_TRUE((*conv)->run(cudnn(), cublas(), ins[k]->view(), dw.p, nullptr, outs[k]->view(), ws.p,
                                 (*conv)->workspace_bytes(), stream())
                        .ok());
        int64_t touched = 0, first = -1;
        ASSERT_EQ(cudaSuccess, outs[k]->download(&got[k], &touched, &first, stream()));
      }
      ASSERT_EQ(got[0].data.size(), got[1].data.size());
      EXPECT_EQ(0, std::memcmp(got[0].data.data(), got[1].data.data(), got[0].data.size() * sizeof(float)));
    }
  }
}

// Each refusal names what was expected.
void expect_refused(const Expected<std::unique_ptr<cuda::Tf32x3Conv>>& r, StatusCode code, const std::string& why) {
  ASSERT_FALSE(r.ok()) << why;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message() << " (wanted " << why << ")";
}

TEST_F(Tf32x3Test, BadConfigurationsAreRefused) {
  const TensorView nhwc_in = TensorView::packed(nullptr, DType::kF32, Layout::kNHWC, 1, Shape3{16, 8, 8});
  const TensorView nhwc_out = TensorView::packed(nullptr, DType::kF32, Layout::kNHWC, 1, Shape3{8, 8, 8});
  cuda::Tf32x3Config cfg;
  cfg.params.filters = 8;
  cfg.params.size = 3;
  cfg.params.padding = 1;
  cfg.params.activation = Activation::kLinear;
  cuda::Tf32x3Config grouped = cfg;
  grouped.params.groups = 2;
  expect_refused(cuda::Tf32x3Conv::create(cudnn(), grouped, nhwc_in, nhwc_out), StatusCode::kUnsupported,
                 "grouped convolutions are not split");
  const TensorView nchw_in = TensorView::packed(nullptr, DType::kF32, Layout::kNCHW, 1, Shape3{16, 8, 8});
  expect_refused(cuda::Tf32x3Conv::create(cudnn(), cfg, nchw_in, nhwc_out), StatusCode::kUnsupported,
                 "f32 NHWC views only");
  TensorView padded = nhwc_in;  // images apart: the split reads them as one run of rows
  padded.n_stride += 16;
  expect_refused(cuda::Tf32x3Conv::create(cudnn(), cfg, padded, nhwc_out), StatusCode::kUnsupported,
                 "images of the input must follow each other");
  cuda::Tf32x3Config tiny = cfg;
  tiny.chunk_products = 8;  // under one 3x3 channel
  expect_refused(cuda::Tf32x3Conv::create(cudnn(), tiny, nhwc_in, nhwc_out), StatusCode::kInvalidArgument,
                 "a chunk of 8 products holds no input channel of a 3x3 kernel");
  const TensorView prime_in = TensorView::packed(nullptr, DType::kF32, Layout::kNHWC, 1, Shape3{127, 8, 8});
  cuda::Tf32x3Config prime = cfg;  // 127 products of a 1x1: chunks of 1 product only
  prime.form = cuda::Tf32x3Form::kGemm;
  prime.params.size = 1;
  prime.params.padding = 0;
  prime.chunk_products = 100;
  expect_refused(cuda::Tf32x3Conv::create(cudnn(), prime, prime_in, nhwc_out), StatusCode::kUnsupported,
                 "GEMM form: no divisor of 127 products fills a quarter of a chunk of 100");
  cuda::Tf32x3Config dilated = cfg;
  dilated.form = cuda::Tf32x3Form::kGemm;
  dilated.params.dilation = 2;
  expect_refused(cuda::Tf32x3Conv::create(cudnn(), dilated, nhwc_in, nhwc_out), StatusCode::kUnsupported,
                 "GEMM form: dilated kernels are not unrolled");
  cuda::Tf32x3Config small = cfg;
  small.workspace_limit = 1024;
  expect_refused(cuda::Tf32x3Conv::create(cudnn(), small, nhwc_in, nhwc_out), StatusCode::kOutOfMemory,
                 "over the limit");
}

// The launchers of the split patches and of the partial sums refuse bad arguments with
// one line each, before any CUDA call (so this runs without a device: nothing here is
// launched, the pointers are never read).
void expect_error(const Status& st, StatusCode code, const std::string& why) {
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(why), std::string::npos) << st.message() << " (wanted " << why << ")";
}

TEST(Tf32x3Launchers, BadArgumentsAreRefused) {
  float* fake = reinterpret_cast<float*>(uintptr_t(256));
  const TensorView nhwc = TensorView::packed(fake, DType::kF32, Layout::kNHWC, 1, Shape3{8, 6, 6});
  const TensorView nchw = TensorView::packed(fake, DType::kF32, Layout::kNCHW, 1, Shape3{8, 6, 6});
  ConvParams p;
  p.filters = 8;
  p.size = 3;
  p.padding = 1;
  expect_error(cuda::split_tf32_patches(nhwc, p, 6, 6, 24, nullptr, nullptr), StatusCode::kInvalidArgument,
               "split_tf32_patches: null input or destination");
  expect_error(cuda::split_tf32_patches(nchw, p, 6, 6, 24, fake, nullptr), StatusCode::kUnsupported,
               "split_tf32_patches: f32 NHWC input only");
  ConvParams dilated = p;
  dilated.dilation = 2;
  expect_error(cuda::split_tf32_patches(nhwc, dilated, 6, 6, 24, fake, nullptr), StatusCode::kInvalidArgument,
               "dilation 2");
  expect_error(cuda::split_tf32_patches(nhwc, p, 6, 6, 0, fake, nullptr), StatusCode::kInvalidArgument,
               "or chunk 0 out of range");
  expect_error(cuda::sum_partials(fake, 0, nullptr, Activation::kLinear, false, nhwc, nullptr, Activation::kLinear,
                                  nullptr),
               StatusCode::kInvalidArgument, "sum_partials: null partials or output, or 0 parts");
  expect_error(cuda::sum_partials(fake, 2, nullptr, Activation::kLinear, false, nchw, nullptr, Activation::kLinear,
                                  nullptr),
               StatusCode::kUnsupported, "sum_partials: the output must be packed f32 NHWC");
  const TensorView other = TensorView::packed(fake, DType::kF32, Layout::kNHWC, 1, Shape3{8, 6, 5});
  expect_error(cuda::sum_partials(fake, 2, nullptr, Activation::kLinear, false, nhwc, &other, Activation::kLinear,
                                  nullptr),
               StatusCode::kInvalidArgument, "sum_partials: the residual must be f32 with the output's shape");
}

}  // namespace
}  // namespace dlr::test
