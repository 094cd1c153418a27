// What strict fp32 could gain per convolution of yolov4 @608 (not a correctness test;
// skipped unless DLR_GPU_BENCH=1). For every distinct conv of the network: each cuDNN
// algorithm forced in turn with FMA math, NCHW and NHWC, timed as a CUDA graph of
// repeated runs (median of replays), and its error against IMPLICIT_GEMM on the same
// inputs; and a tf32 conv of the input split into a tf32 high and low part (three
// products, "3xTF32"), timed the same way, with its error, whole and with the reduction
// cut into chunks accumulated by cuDNN (the error of a tensor-core sum grows with its
// length; docs/benchmarks.md, "Strict fp32"). Prints one line per conv
// and the sums weighted by how often each conv occurs; DLR_BENCH_JSON names a JSON file
// for every row.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_3xtf32.h"
#include "kernels/cuda/cuda_ops.h"
#include "loaders/network_desc.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

constexpr int kRuns = 8;     // conv runs per captured graph
constexpr int kReplays = 7;  // timed replays; the median is kept

struct ConvShape {
  Shape3 in;
  Shape3 out;
  ConvParams p;
  int count = 0;
  std::string name() const {
    return std::to_string(in.c) + "->" + std::to_string(out.c) + " k" + std::to_string(p.size) + "s" +
           std::to_string(p.stride_x) + " " + std::to_string(out.h) + "x" + std::to_string(out.w);
  }
};

// Weights in the layout `layout` stores (OIHW or OHWI) from OIHW values.
std::vector<float> weights_for(const std::vector<float>& oihw, int o, int i, int k, Layout layout) {
  if (layout == Layout::kNCHW) return oihw;
  std::vector<float> r(oihw.size());
  for (int a = 0; a < o; ++a)
    for (int c = 0; c < i; ++c)
      for (int y = 0; y < k; ++y)
        for (int x = 0; x < k; ++x) r[size_t(((a * k + y) * k + x) * i + c)] = oihw[size_t(((a * i + c) * k + y) * k + x)];
  return r;
}

struct Timed {
  bool ran = false;
  double us = 0;
  double rel_l2 = 0;
  double max_rel = 0;  // max |got - want| / max |want|
  size_t workspace = 0;
  std::string why;
};

// Downloads `dy` and records its error against `want` in r (rel L2, largest element error
// over the largest |want|).
void record_error(DeviceTensor& dy, const HostTensor& want, cudaStream_t stream, Timed* r, HostTensor* got_out = nullptr) {
  HostTensor got;
  int64_t touched = 0, first = -1;
  EXPECT_EQ(cudaSuccess, dy.download(&got, &touched, &first, stream));
  r->rel_l2 = rel_l2(got.data, want.data);
  double mx = 0, err = 0;
  for (size_t i = 0; i < got.data.size(); ++i) {
    mx = std::max(mx, double(std::fabs(want.data[i])));
    err = std::max(err, double(std::fabs(got.data[i] - want.data[i])));
  }
  r->max_rel = mx > 0 ? err / mx : err;
  if (got_out != nullptr) *got_out = std::move(got);
}

class ConvAlgoBench : public LibraryTest {
 protected:
  void SetUp() override {
    const char* env = std::getenv("DLR_GPU_BENCH");
    if (env == nullptr || std::string(env) != "1") GTEST_SKIP() << "set DLR_GPU_BENCH=1 to run the benchmarks";
    LibraryTest::SetUp();
  }

  // Median GPU time of one call of `run_once`, as a captured graph of kRuns calls.
  double time_us(const std::function<Status(cudaStream_t)>& run_once) {
    cudaStream_t s = stream();
    EXPECT_TRUE(run_once(s).ok());  // loads its kernels
    EXPECT_EQ(cudaSuccess, cudaStreamSynchronize(s));
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kRuns; ++i) EXPECT_TRUE(run_once(s).ok());
    EXPECT_EQ(cudaSuccess, cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec = nullptr;
    EXPECT_EQ(cudaSuccess, cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t a = nullptr, b = nullptr;
    EXPECT_EQ(cudaSuccess, cudaEventCreate(&a));
    EXPECT_EQ(cudaSuccess, cudaEventCreate(&b));
    std::vector<double> t;
    for (int r = -1; r < kReplays; ++r) {
      EXPECT_EQ(cudaSuccess, cudaEventRecord(a, s));
      EXPECT_EQ(cudaSuccess, cudaGraphLaunch(exec, s));
      EXPECT_EQ(cudaSuccess, cudaEventRecord(b, s));
      EXPECT_EQ(cudaSuccess, cudaEventSynchronize(b));
      float ms = 0;
      EXPECT_EQ(cudaSuccess, cudaEventElapsedTime(&ms, a, b));
      if (r >= 0) t.push_back(1000.0 * ms / kRuns);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }

  // Creates the conv (algorithm `algo`, -1: heuristics), times it and compares its output with `want`.
  Timed measure(const ConvShape& cs, Precision prec, Layout layout, int algo, const HostTensor& x,
                const std::vector<float>& w_host, const HostTensor* want, HostTensor* got_out = nullptr) {
    Timed r;
    const ViewSpec spec = packed_spec(DType::kF32, layout);
    DeviceTensor dx, dy;
    EXPECT_EQ(cudaSuccess, dx.upload(x, spec, stream()));
    EXPECT_EQ(cudaSuccess, dy.create(1, cs.out, spec, stream()));
    cuda::ConvConfig cfg;
    cfg.params = cs.p;
    cfg.params.activation = Activation::kLinear;
    cfg.params.batch_normalize = false;
    cfg.precision = prec;
    cfg.workspace_limit = size_t(1) << 30;
    cfg.allow_fusion = false;
    cfg.force_algo = algo;
    auto conv = cuda::CudnnConv::create(cudnn(), cfg, dx.view(), dy.view());
    if (!conv.ok()) {
      r.why = conv.status().to_string().substr(0, 60);
      cudaGetLastError();
      return r;
    }
    void* ws = nullptr;
    r.workspace = (*conv)->workspace_bytes();
    if (r.workspace > 0) {
      EXPECT_EQ(cudaSuccess, cudaMalloc(&ws, r.workspace));
    }
    void* dw = nullptr;
    EXPECT_EQ(cudaSuccess, cudaMalloc(&dw, w_host.size() * 4));
    EXPECT_EQ(cudaSuccess, to_device(dw, w_host.data(), w_host.size() * 4));
    const Status st = (*conv)->run(cudnn(), dx.view(), dw, nullptr, dy.view(), ws, r.workspace, stream());
    if (st.ok()) {
      if (want != nullptr) {
        record_error(dy, *want, stream(), &r, got_out);
      } else if (got_out != nullptr) {
        int64_t touched = 0, first = -1;
        EXPECT_EQ(cudaSuccess, dy.download(got_out, &touched, &first, stream()));
      }
      const cuda::CudnnConv& c = **conv;
      r.us = time_us([&](cudaStream_t st) { return c.run(cudnn(), dx.view(), dw, nullptr, dy.view(), ws, r.workspace, st); });
      r.ran = true;
    } else {
      r.why = st.to_string().substr(0, 60);
    }
    cudaFree(dw);
    if (ws) cudaFree(ws);
    EXPECT_EQ(cudaSuccess, cudaGetLastError());
    return r;
  }

  // 3xTF32 with the reduction cut into chunks of at most `chunk_k` products (input
  // channels x k x k): per chunk one tf32 conv (precomputed implicit GEMM) of [x_hi, x_hi,
  // x_lo] over its channels against [w_hi, w_lo, w_hi], accumulated into the output by
  // cuDNN (beta = 1) after the first. Groups of 1 only.
  Timed measure_chunked(const ConvShape& cs, Layout layout, int chunk_k, const HostTensor& x,
                        const std::vector<float>& w, const HostTensor& ref) {
    Timed r;
    const int kk = cs.p.size * cs.p.size, C = cs.in.c, O = cs.p.filters;
    const int cc = std::max(1, chunk_k / kk);
    const ViewSpec spec = packed_spec(DType::kF32, layout);
    DeviceTensor dy;
    EXPECT_EQ(cudaSuccess, dy.create(1, cs.out, spec, stream()));
    struct Chunk {
      DeviceTensor x;
      void* w = nullptr;
      std::unique_ptr<cuda::CudnnConv> conv;
    };
    std::vector<Chunk> chunks;
    size_t ws_bytes = 0;
    const size_t plane = size_t(cs.in.h) * size_t(cs.in.w);
    for (int c0 = 0; c0 < C; c0 += cc) {
      const int n = std::min(cc, C - c0);
      Chunk ch;
      HostTensor x3(1, Shape3{3 * n, cs.in.h, cs.in.w});
      for (int c = 0; c < n; ++c)
        for (size_t i = 0; i < plane; ++i) {
          const float v = x.data[size_t(c0 + c) * plane + i], hi = tf32_high(v);
          x3.data[size_t(c) * plane + i] = hi;
          x3.data[size_t(n + c) * plane + i] = hi;
          x3.data[size_t(2 * n + c) * plane + i] = v - hi;
        }
      std::vector<float> w3(size_t(O) * 3 * n * kk);
      for (int o = 0; o < O; ++o)
        for (int c = 0; c < n; ++c)
          for (int k = 0; k < kk; ++k) {
            const float v = w[(size_t(o) * C + c0 + c) * kk + k], hi = tf32_high(v);
            w3[(size_t(o) * 3 * n + c) * kk + k] = hi;
            w3[(size_t(o) * 3 * n + n + c) * kk + k] = v - hi;
            w3[(size_t(o) * 3 * n + 2 * n + c) * kk + k] = hi;
          }
      const std::vector<float> wl = weights_for(w3, O, 3 * n, cs.p.size, layout);
      EXPECT_EQ(cudaSuccess, ch.x.upload(x3, spec, stream()));
      EXPECT_EQ(cudaSuccess, cudaMalloc(&ch.w, wl.size() * 4));
      EXPECT_EQ(cudaSuccess, to_device(ch.w, wl.data(), wl.size() * 4));
      cuda::ConvConfig cfg;
      cfg.params = cs.p;
      cfg.params.activation = Activation::kLinear;
      cfg.params.batch_normalize = false;
      cfg.precision = Precision::kTF32;
      cfg.workspace_limit = size_t(1) << 30;
      cfg.allow_fusion = false;
      cfg.force_algo = int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
      cfg.accumulate = c0 > 0;
      auto conv = cuda::CudnnConv::create(cudnn(), cfg, ch.x.view(), dy.view());
      if (!conv.ok()) {
        r.why = conv.status().to_string().substr(0, 60);
        for (Chunk& k : chunks) cudaFree(k.w);
        cudaFree(ch.w);
        return r;
      }
      ch.conv = std::move(conv).value();
      ws_bytes = std::max(ws_bytes, ch.conv->workspace_bytes());
      chunks.push_back(std::move(ch));
    }
    void* ws = nullptr;
    if (ws_bytes > 0) {
      EXPECT_EQ(cudaSuccess, cudaMalloc(&ws, ws_bytes));
    }
    auto run_all = [&](cudaStream_t st) -> Status {
      for (const Chunk& ch : chunks) {
        const Status s1 = ch.conv->run(cudnn(), ch.x.view(), ch.w, nullptr, dy.view(), ws, ws_bytes, st);
        if (!s1.ok()) return s1;
      }
      return Status();
    };
    const Status st = run_all(stream());
    if (st.ok()) {
      record_error(dy, ref, stream(), &r);
      r.us = time_us(run_all);
      r.ran = true;
      r.workspace = ws_bytes;
    } else {
      r.why = st.to_string().substr(0, 60);
    }
    for (Chunk& ch : chunks) cudaFree(ch.w);
    if (ws) cudaFree(ws);
    EXPECT_EQ(cudaSuccess, cudaGetLastError());
    return r;
  }

  // The 3xTF32 conv as the engine runs it (kernels/cuda/conv_3xtf32.h, form `form`, chunks
  // of 512 products): the operand splits, the convs and the epilogue, timed and compared.
  Timed measure_x3(const ConvShape& cs, cuda::Tf32x3Form form, const HostTensor& x, const std::vector<float>& ohwi,
                   const HostTensor& want) {
    Timed r;
    const ViewSpec spec = packed_spec(DType::kF32, Layout::kNHWC);
    DeviceTensor dx, dy;
    EXPECT_EQ(cudaSuccess, dx.upload(x, spec, stream()));
    EXPECT_EQ(cudaSuccess, dy.create(1, cs.out, spec, stream()));
    cuda::Tf32x3Config cfg;
    cfg.params = cs.p;
    cfg.params.activation = Activation::kLinear;
    cfg.params.batch_normalize = false;
    cfg.form = form;
    cfg.workspace_limit = size_t(1) << 30;
    auto conv = cuda::Tf32x3Conv::create(cudnn(), cfg, dx.view(), dy.view());
    if (!conv.ok()) {
      r.why = conv.status().message().substr(0, 60);
      cudaGetLastError();
      return r;
    }
    r.workspace = (*conv)->workspace_bytes();
    auto ws = cuda::DeviceBuffer::alloc(r.workspace);
    auto dw = cuda::DeviceBuffer::alloc(ohwi.size() * 4);
    if (!ws.ok() || !dw.ok()) {
      ADD_FAILURE() << "no device memory for the 3xTF32 conv of " << cs.name();
      return r;
    }
    EXPECT_EQ(cudaSuccess, to_device(dw->data(), ohwi.data(), ohwi.size() * 4));
    const cuda::Tf32x3Conv& c = **conv;
    auto once = [&](cudaStream_t st) {
      return c.run(cudnn(), cublas(), dx.view(), static_cast<const float*>(dw->data()), nullptr, dy.view(), ws->data(),
                   r.workspace, st);
    };
    if (once(stream()).ok()) {
      record_error(dy, want, stream(), &r);
      r.us = time_us(once);
      r.ran = true;
    }
    EXPECT_EQ(cudaSuccess, cudaGetLastError());
    return r;
  }
};

// The distinct convs of yolov4 at `size`, with how often each occurs.
std::map<std::string, ConvShape> yolov4_convs(const std::string& cfg, int size) {
  CfgOptions opt;
  opt.width = opt.height = size;
  auto net = parse_network_cfg(cfg, opt);
  EXPECT_TRUE(net.ok()) << net.status().to_string();
  std::map<std::string, ConvShape> shapes;
  if (!net.ok()) return shapes;
  for (const LayerDesc& l : net->layers) {
    if (l.kind != LayerKind::kConv) continue;
    ConvShape cs{l.in, l.out, l.conv(), 0};
    ConvShape& e = shapes.emplace(cs.name(), cs).first->second;
    ++e.count;
  }
  return shapes;
}

nlohmann::json row_json(const Timed& t) {
  return {{"ran", t.ran}, {"us", t.us}, {"rel_l2", t.rel_l2}, {"max_rel", t.max_rel}, {"workspace", t.workspace},
          {"why", t.why}};
}

TEST_F(ConvAlgoBench, StrictFp32AndThreeTf32) {
  const std::string cfg = shared_file("models/yolov4.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared data not found";
  const std::map<std::string, ConvShape> shapes = yolov4_convs(cfg, 608);
  ASSERT_FALSE(shapes.empty());
  nlohmann::json rows = nlohmann::json::array();
  double sum_heur = 0, sum_best = 0, sum_3tf32 = 0, sum_tf32 = 0, sum_best_nhwc = 0, sum_chunk_nhwc = 0,
         sum_chunk_nchw = 0;
  for (const auto& [name, cs] : shapes) {
    const int ci = cs.in.c / cs.p.groups;
    HostTensor x = random_tensor(1, cs.in, 11, -1.f, 1.f);
    std::vector<float> w(size_t(cs.p.filters) * size_t(ci) * size_t(cs.p.size * cs.p.size));
    const float scale = 1.f / std::sqrt(float(ci * cs.p.size * cs.p.size));
    fill_random(&w, 12, -scale, scale);
    HostTensor ref;
    const Timed gemm = measure(cs, Precision::kFP32, Layout::kNCHW, int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM), x,
                               w, nullptr, &ref);
    ASSERT_TRUE(gemm.ran) << name << ": " << gemm.why;
    nlohmann::json row = {{"conv", name}, {"count", cs.count}};
    const Timed heur = measure(cs, Precision::kFP32, Layout::kNCHW, -1, x, w, &ref);
    row["fp32_nchw_heuristic"] = row_json(heur);
    double best = heur.ran ? heur.us : 1e30, best_nhwc = 1e30;
    std::string best_name = "heuristic", line;
    for (Layout lay : {Layout::kNCHW, Layout::kNHWC}) {
      const std::vector<float> wl = weights_for(w, cs.p.filters, ci, cs.p.size, lay);
      for (int a = 0; a < int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT); ++a) {
        const Timed t = measure(cs, Precision::kFP32, lay, a, x, wl, &ref);
        const std::string key = std::string(lay == Layout::kNCHW ? "nchw " : "nhwc ") +
                                cuda::conv_algo_name(cudnnConvolutionFwdAlgo_t(a));
        row["fp32"][key] = row_json(t);
        if (!t.ran) continue;
        line += " " + key + "=" + std::to_string(int(t.us)) + (t.rel_l2 > 1e-5 ? "!" : "");
        if (t.rel_l2 <= 1e-5 && t.max_rel <= 1e-5) {
          if (t.us < best) best = t.us, best_name = key;
          if (lay == Layout::kNHWC) best_nhwc = std::min(best_nhwc, t.us);
        }
      }
    }
    // 3xTF32: in = [x_hi, x_hi, x_lo] (3C channels), w = [w_hi, w_lo, w_hi].
    ConvShape c3 = cs;
    c3.in.c = 3 * cs.in.c;
    HostTensor x3(1, c3.in);
    const size_t plane = size_t(cs.in.h) * size_t(cs.in.w) * size_t(cs.in.c);
    for (size_t i = 0; i < plane; ++i) {
      const float hi = tf32_high(x.data[i]);
      x3.data[i] = hi;
      x3.data[plane + i] = hi;
      x3.data[2 * plane + i] = x.data[i] - hi;
    }
    const size_t khw = size_t(cs.p.size * cs.p.size);
    std::vector<float> w3(w.size() * 3);
    for (int o = 0; o < cs.p.filters; ++o)
      for (int c = 0; c < ci; ++c)
        for (size_t k = 0; k < khw; ++k) {
          const float v = w[(size_t(o) * ci + c) * khw + k], hi = tf32_high(v);
          w3[(size_t(o) * 3 * ci + c) * khw + k] = hi;
          w3[(size_t(o) * 3 * ci + ci + c) * khw + k] = v - hi;
          w3[(size_t(o) * 3 * ci + 2 * ci + c) * khw + k] = hi;
        }
    Timed t3;
    if (cs.p.groups == 1) {
      t3 = measure(c3, Precision::kTF32, Layout::kNHWC, int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM), x3,
                   weights_for(w3, cs.p.filters, 3 * ci, cs.p.size, Layout::kNHWC), &ref);
    }
    const Timed tf = measure(cs, Precision::kTF32, Layout::kNHWC, -1, x,
                             weights_for(w, cs.p.filters, ci, cs.p.size, Layout::kNHWC), &ref);
    row["tf32_nhwc_heuristic"] = row_json(tf);
    Timed ch_nhwc, ch_nchw, ch256;
    if (cs.p.groups == 1) {
      ch_nhwc = measure_chunked(cs, Layout::kNHWC, 512, x, w, ref);
      ch_nchw = measure_chunked(cs, Layout::kNCHW, 512, x, w, ref);
      ch256 = measure_chunked(cs, Layout::kNHWC, 256, x, w, ref);
    }
    row["three_tf32_chunk512_nhwc"] = row_json(ch_nhwc);
    row["three_tf32_chunk512_nchw"] = row_json(ch_nchw);
    row["three_tf32_chunk256_nhwc"] = row_json(ch256);
    row["three_tf32_nhwc"] = row_json(t3);
    row["best_strict"] = {{"us", best}, {"name", best_name}};
    rows.push_back(row);
    sum_heur += cs.count * heur.us;
    sum_best += cs.count * best;
    sum_best_nhwc += cs.count * best_nhwc;
    sum_tf32 += cs.count * tf.us;
    sum_3tf32 += cs.count * (t3.ran ? t3.us : best);
    sum_chunk_nhwc += cs.count * (ch_nhwc.ran ? ch_nhwc.us : best);
    sum_chunk_nchw += cs.count * (ch_nchw.ran ? ch_nchw.us : best);
    std::printf("[algo] %-22s x%-2d heur %7.1f best %7.1f (%s) 3xtf32 %7.1f (rel %.1e max %.1e) tf32 %6.1f "
                "chunk512 nhwc %7.1f (%.1e %.1e) nchw %7.1f (%.1e) chunk256 nhwc %7.1f (%.1e %.1e) |%s\n",
                name.c_str(), cs.count, heur.us, best, best_name.c_str(), t3.us, t3.rel_l2, t3.max_rel, tf.us,
                ch_nhwc.us, ch_nhwc.rel_l2, ch_nhwc.max_rel, ch_nchw.us, ch_nchw.rel_l2, ch256.us, ch256.rel_l2,
                ch256.max_rel, line.c_str());
  }
  std::printf("[algo] sums (us, weighted by count): fp32 NCHW heuristic %.1f, best strict %.1f, best strict NHWC %.1f, "
              "3xTF32 (else best) %.1f, tf32 heuristic %.1f, 3xTF32 in chunks of 512 NHWC %.1f NCHW %.1f\n",
              sum_heur, sum_best, sum_best_nhwc, sum_3tf32, sum_tf32, sum_chunk_nhwc, sum_chunk_nchw);
  if (const char* path = std::getenv("DLR_BENCH_JSON")) {
    std::ofstream(path) << nlohmann::json{{"rows", rows},
                                          {"sum_heuristic_us", sum_heur},
                                          {"sum_best_strict_us", sum_best},
                                          {"sum_best_strict_nhwc_us", sum_best_nhwc},
                                          {"sum_three_tf32_us", sum_3tf32},
                                          {"sum_tf32_us", sum_tf32},
                                          {"sum_three_tf32_chunk512_nhwc_us", sum_chunk_nhwc},
                                          {"sum_three_tf32_chunk512_nchw_us", sum_chunk_nchw}}
                               .dump(1);
  }
}

// The two forms of the engine's 3xTF32 conv (chunked, GEMM) per conv of yolov4 @608,
// with the split passes and the epilogue, against the fastest strict FMA conv (cuDNN's
// heuristic, NHWC): what the open's choice picks between.
TEST_F(ConvAlgoBench, ThreeTf32Forms) {
  const std::string cfg = shared_file("models/yolov4.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared data not found";
  const std::map<std::string, ConvShape> shapes = yolov4_convs(cfg, 608);
  ASSERT_FALSE(shapes.empty());
  nlohmann::json rows = nlohmann::json::array();
  double sum_fma = 0, sum_chunks = 0, sum_best = 0;
  for (const auto& [name, cs] : shapes) {
    if (cs.p.groups != 1) continue;
    HostTensor x = random_tensor(1, cs.in, 11, -1.f, 1.f);
    std::vector<float> w(size_t(cs.p.filters) * size_t(cs.in.c) * size_t(cs.p.size * cs.p.size));
    const float scale = 1.f / std::sqrt(float(cs.in.c * cs.p.size * cs.p.size));
    fill_random(&w, 12, -scale, scale);
    const std::vector<float> ohwi = weights_for(w, cs.p.filters, cs.in.c, cs.p.size, Layout::kNHWC);
    HostTensor ref;
    const Timed gemm = measure(cs, Precision::kFP32, Layout::kNCHW, int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM), x,
                               w, nullptr, &ref);
    ASSERT_TRUE(gemm.ran) << name << ": " << gemm.why;
    const Timed fma = measure(cs, Precision::kFP32, Layout::kNHWC, -1, x, ohwi, &ref);
    const Timed chunks = measure_x3(cs, cuda::Tf32x3Form::kChunks, x, ohwi, ref);
    const Timed gemm3 = measure_x3(cs, cuda::Tf32x3Form::kGemm, x, ohwi, ref);
    double best = fma.ran ? fma.us : 1e30;
    for (const Timed* t : {&chunks, &gemm3})
      if (t->ran && t->us < best) best = t->us;
    sum_fma += cs.count * fma.us;
    sum_chunks += cs.count * (chunks.ran ? std::min(chunks.us, fma.us) : fma.us);
    sum_best += cs.count * best;
    rows.push_back({{"conv", name}, {"count", cs.count}, {"fma_nhwc", row_json(fma)}, {"chunked", row_json(chunks)},
                    {"gemm", row_json(gemm3)}});
    std::printf("[forms] %-22s x%-2d fma %7.1f chunked %7.1f (%.1e) gemm %7.1f (%.1e, ws %zu MiB) %s\n",
                name.c_str(), cs.count, fma.us, chunks.us, chunks.max_rel, gemm3.us, gemm3.max_rel,
                gemm3.workspace >> 20, gemm3.why.c_str());
    for (const Timed* t : {&chunks, &gemm3}) EXPECT_TRUE(!t->ran || t->max_rel <= 1e-5) << name;
  }
  std::printf("[forms] sums (us, weighted by count): fma NHWC %.1f, best of fma and chunked %.1f, best of all three "
              "%.1f\n",
              sum_fma, sum_chunks, sum_best);
  if (const char* path = std::getenv("DLR_BENCH_JSON")) {
    std::ofstream(std::string(path) + ".forms.json")
        << nlohmann::json{{"rows", rows}, {"sum_fma_nhwc_us", sum_fma}, {"sum_best_fma_chunked_us", sum_chunks},
                          {"sum_best_us", sum_best}}
               .dump(1);
  }
}

// The convs of yolov4 @608 that a 4 MiB fp32 slot slices (weights over 4 MiB), as the
// engine runs them in NHWC: whole, and as input-channel slices (each its own Tf32x3Conv
// over a channel slice of the input, accumulating into the output after the first, its
// weights a contiguous O x k x k x n block), in both forms and with chunks of 512, 256 and
// 128 products; per slice also the two split passes alone. What slicing costs the 3xTF32
// kernels and which part of a slice costs it.
TEST_F(ConvAlgoBench, SlicedThreeTf32) {
  const std::string cfg = shared_file("models/yolov4.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared data not found";
  constexpr int64_t kSlot = int64_t(4) << 20;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [name, cs] : yolov4_convs(cfg, 608)) {
    const int C = cs.in.c, O = cs.p.filters, kk = cs.p.size * cs.p.size;
    if (cs.p.groups != 1 || int64_t(C) * O * kk * 4 <= kSlot) continue;
    const int n = int(kSlot / (int64_t(O) * kk * 4)) / 8 * 8;
    if (n < 8) continue;
    HostTensor x = random_tensor(1, cs.in, 11, -1.f, 1.f);
    std::vector<float> w(size_t(O) * size_t(C) * size_t(kk));
    fill_random(&w, 12, -1.f / std::sqrt(float(C * kk)), 1.f / std::sqrt(float(C * kk)));
    const std::vector<float> ohwi = weights_for(w, O, C, cs.p.size, Layout::kNHWC);
    HostTensor ref;
    ASSERT_TRUE(measure(cs, Precision::kFP32, Layout::kNCHW, int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM), x, w,
                        nullptr, &ref)
                    .ran);
    const ViewSpec spec = packed_spec(DType::kF32, Layout::kNHWC);
    DeviceTensor dx, dy;
    ASSERT_EQ(cudaSuccess, dx.upload(x, spec, stream()));
    ASSERT_EQ(cudaSuccess, dy.create(1, cs.out, spec, stream()));
    // Each slice's weights contiguous (O x k x k x n_s), back to back.
    std::vector<int> c0s;
    std::vector<float> sliced;
    for (int c0 = 0; c0 < C; c0 += n) {
      c0s.push_back(c0);
      const int ns = std::min(n, C - c0);
      for (int o = 0; o < O; ++o)
        for (int k = 0; k < kk; ++k)
          for (int c = 0; c < ns; ++c) sliced.push_back(ohwi[(size_t(o) * kk + k) * C + c0 + c]);
    }
    auto dw = cuda::DeviceBuffer::alloc(sliced.size() * 4);
    auto dwhole = cuda::DeviceBuffer::alloc(ohwi.size() * 4);
    ASSERT_TRUE(dw.ok() && dwhole.ok());
    ASSERT_EQ(cudaSuccess, to_device(dw->data(), sliced.data(), sliced.size() * 4));
    ASSERT_EQ(cudaSuccess, to_device(dwhole->data(), ohwi.data(), ohwi.size() * 4));
    nlohmann::json row{{"conv", name}, {"count", cs.count}, {"slice_channels", n}, {"slices", c0s.size()}};
    std::string line;
    for (const cuda::Tf32x3Form form : {cuda::Tf32x3Form::kChunks, cuda::Tf32x3Form::kGemm}) {
      for (const int chunk : {512, 256, 128}) {
        if (chunk < kk) continue;
        const std::string key = std::string(form == cuda::Tf32x3Form::kGemm ? "gemm" : "chunked") + std::to_string(chunk);
        cuda::Tf32x3Config tc;
        tc.params = cs.p;
        tc.params.activation = Activation::kLinear;
        tc.params.batch_normalize = false;
        tc.form = form;
        tc.chunk_products = chunk;
        tc.workspace_limit = size_t(1) << 30;
        auto whole = cuda::Tf32x3Conv::create(cudnn(), tc, dx.view(), dy.view());
        std::vector<std::unique_ptr<cuda::Tf32x3Conv>> convs;
        std::vector<TensorView> ins;
        size_t ws_bytes = whole.ok() ? (*whole)->workspace_bytes() : 0;
        bool ok = whole.ok();
        for (size_t s = 0; s < c0s.size() && ok; ++s) {
          TensorView v = dx.view();
          v.data = static_cast<float*>(v.data) + c0s[s];
          v.c = std::min(n, C - c0s[s]);
          tc.accumulate = s > 0;
          auto made = cuda::Tf32x3Conv::create(cudnn(), tc, v, dy.view());
          ok = made.ok();
          if (!ok) break;
          ws_bytes = std::max(ws_bytes, (*made)->workspace_bytes());
          convs.push_back(std::move(made).value());
          ins.push_back(v);
        }
        if (!ok) {
          cudaGetLastError();
          row[key] = {{"ran", false}};
          continue;
        }
        auto ws = cuda::DeviceBuffer::alloc(ws_bytes);
        ASSERT_TRUE(ws.ok());
        const float* wbase = static_cast<const float*>(dw->data());
        auto run_slices = [&](cudaStream_t st) -> Status {
          const float* wp = wbase;
          for (size_t s = 0; s < convs.size(); ++s) {
            DLR_RETURN_IF_ERROR(convs[s]->run(cudnn(), cublas(), ins[s], wp, nullptr, dy.view(), ws->data(), ws_bytes, st));
            wp += size_t(O) * kk * size_t(ins[s].c);
          }
          return Status();
        };
        auto run_whole = [&](cudaStream_t st) {
          return (*whole)->run(cudnn(), cublas(), dx.view(), static_cast<const float*>(dwhole->data()), nullptr,
                               dy.view(), ws->data(), ws_bytes, st);
        };
        Timed ts, tw;
        ASSERT_TRUE(run_slices(stream()).ok());
        record_error(dy, ref, stream(), &ts);
        ts.us = time_us(run_slices);
        ASSERT_TRUE(run_whole(stream()).ok());
        record_error(dy, ref, stream(), &tw);
        tw.us = time_us(run_whole);
        // The split passes of the first slice alone.
        float* scratch = static_cast<float*>(ws->data());
        const int cols = form == cuda::Tf32x3Form::kGemm ? kk * n : n;
        int ch = std::min(n, chunk / kk);  // as Tf32x3Conv cuts: kChunks whole channels, kGemm a divisor of cols
        if (form == cuda::Tf32x3Form::kGemm)
          for (ch = std::min(cols, chunk); ch > 1 && cols % ch != 0;) --ch;
        const double split_w = time_us([&](cudaStream_t st) {
          return cuda::split_tf32(wbase, form == cuda::Tf32x3Form::kGemm ? O : int64_t(O) * kk, cols, cols, ch,
                                  cuda::Tf32SplitOrder::kHighLowHigh,
                                  form == cuda::Tf32x3Form::kGemm ? cuda::Tf32SplitLayout::kChunksInRow
                                                                  : cuda::Tf32SplitLayout::kChunkBlocks,
                                  scratch, st);
        });
        double split_x = 0;
        if (form == cuda::Tf32x3Form::kGemm) {
          split_x = time_us([&](cudaStream_t st) {
            return cuda::split_tf32_patches(ins[0], cs.p, cs.out.h, cs.out.w, ch, scratch, st);
          });
        }
        row[key] = {{"ran", true},         {"whole_us", tw.us},         {"slices_us", ts.us},
                    {"whole_max_rel", tw.max_rel}, {"slices_max_rel", ts.max_rel}, {"chunks_whole", (*whole)->chunks()},
                    {"chunks_slice", convs[0]->chunks()}, {"split_w_slice_us", split_w}, {"split_x_slice_us", split_x}};
        char buf[200];
        std::snprintf(buf, sizeof buf, " %s %.1f/%.1f (w %.1f x %.1f)", key.c_str(), tw.us, ts.us, split_w, split_x);
        line += buf;
        EXPECT_LE(ts.max_rel, 1e-5) << name << " " << key;
      }
    }
    std::printf("[sliced] %-22s x%-2d %zu slices of %d:%s\n", name.c_str(), cs.count, c0s.size(), n, line.c_str());
    rows.push_back(row);
  }
  if (const char* path = std::getenv("DLR_BENCH_JSON"))
    std::ofstream(std::string(path) + ".sliced.json") << nlohmann::json{{"rows", rows}}.dump(1);
}

}  // namespace
}  // namespace dlr::test
