// CudnnConv (kernels/cuda/conv.h) against the CPU reference cpu::conv2d.
//
// Every run: input/weights/bias random (seeded; weights uniform with variance
// 1/fan_in so outputs are O(1)), device buffers poisoned with NaN bytes
// (gpu_test_util.h), the workspace allocated with exactly workspace_bytes()
// plus a guard zone that must stay intact, and one summary line printed:
//   [conv] <case> <mode> <policy> algo=... ws=... fused=... rel=... maxabs=...
// Tolerances (relative L2): kFP32 1e-5 for every algorithm, kTF32 and kFP16 5e-3. f16 references use half-rounded
// inputs and weights, so only accumulation and output rounding are measured.
//
// Refusals: cuDNN answering NOT_SUPPORTED for a configuration (cudnn_refused() below)
// is legitimate for the extra layouts, forced algorithms and NHWC channel slices; it
// is counted and the count must stay within what the H100 run measured (cuDNN 9.14,
// docs/results/h100-2026-11-21-search/final/gpu_tests.log). Any other error from
// create() or run() -- dlrun's own validation (invalid argument), workspace, memory,
// CUDA -- is a FAILURE, as is any refusal of the NCHW slices the planner relies on.
#include "kernels/cuda/conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_handles.h"
#include "runtime/core/half.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::cuda {
namespace {

using test::DeviceTensor;
using test::HostTensor;
using test::ViewSpec;

struct ConvCase {
  const char* name;
  int n, c, h, w;
  int filters, size, stride_y, stride_x, dilation, padding, groups;
};

// Output sizes follow Darknet: (H + 2*padding - size)/stride + 1; dilated cases use
// odd size with padding = size/2 (the geometry the parser accepts).
const ConvCase kCases[] = {
    {"k3s1p1_c8f16_13x13", 1, 8, 13, 13, 16, 3, 1, 1, 1, 1, 1},
    {"k3s1p1_c3f8_13x13", 1, 3, 13, 13, 8, 3, 1, 1, 1, 1, 1},
    {"k1s1p0_c16f8_13x13_b2", 2, 16, 13, 13, 8, 1, 1, 1, 1, 0, 1},
    {"k3s2p1_c8f16_13x13", 1, 8, 13, 13, 16, 3, 2, 2, 1, 1, 1},
    {"k5s1p2_c6f10_7x5", 1, 6, 7, 5, 10, 5, 1, 1, 1, 2, 1},
    {"k3s1p0_c4f6_7x5_b2", 2, 4, 7, 5, 6, 3, 1, 1, 1, 0, 1},
    {"k3s1p2_c4f8_13x13", 1, 4, 13, 13, 8, 3, 1, 1, 1, 2, 1},
    {"k3g2_c8f12_13x13_b2", 2, 8, 13, 13, 12, 3, 1, 1, 1, 1, 2},
    {"dw_k3s1_c16_13x13", 1, 16, 13, 13, 16, 3, 1, 1, 1, 1, 16},
    {"dw_k3s2_c16_11x9_b2", 2, 16, 11, 9, 16, 3, 2, 2, 1, 1, 16},
    {"k3d2_c8f8_13x13", 1, 8, 13, 13, 8, 3, 1, 1, 2, 1, 1},
    {"k5d2_c4f8_13x13_b2", 2, 4, 13, 13, 8, 5, 1, 1, 2, 2, 1},
    {"k1d2forced1_c8f8_7x5", 1, 8, 7, 5, 8, 1, 1, 1, 2, 0, 1},
    {"k1_c4f8_1x1", 1, 4, 1, 1, 8, 1, 1, 1, 1, 0, 1},
    {"k3p1_c4f8_1x1_b2", 2, 4, 1, 1, 8, 3, 1, 1, 1, 1, 1},
    {"k3_sy2sx1_c8f8_13x13", 1, 8, 13, 13, 8, 3, 2, 1, 1, 1, 1},
    {"k1s2p0_c8f16_13x13", 1, 8, 13, 13, 16, 1, 2, 2, 1, 0, 1},
    {"k3s1p1_c32f64_26x26_b2", 2, 32, 26, 26, 64, 3, 1, 1, 1, 1, 1},
    {"k1_c64f255_13x13", 1, 64, 13, 13, 255, 1, 1, 1, 1, 0, 1},
    // YOLO-sized layers (tensor cores engage; kFind may pick transform algorithms).
    {"k3s1p1_c64f128_38x38", 1, 64, 38, 38, 128, 3, 1, 1, 1, 1, 1},
    {"k1s1p0_c128f64_38x38_b2", 2, 128, 38, 38, 64, 1, 1, 1, 1, 0, 1},
    {"k3s2p1_c64f128_38x38", 1, 64, 38, 38, 128, 3, 2, 2, 1, 1, 1},
};
constexpr int kNumCases = int(sizeof(kCases) / sizeof(kCases[0]));
const ConvCase& find_case(const char* name) {
  for (const ConvCase& c : kCases)
    if (std::strcmp(c.name, name) == 0) return c;
  std::abort();
}

const Activation kActs[] = {Activation::kLinear, Activation::kLeaky, Activation::kLogistic, Activation::kRelu,
                            Activation::kRelu6,  Activation::kElu,   Activation::kSelu,     Activation::kGelu,
                            Activation::kTanh,   Activation::kSwish, Activation::kMish,     Activation::kHardMish};
constexpr int kNumActs = int(sizeof(kActs) / sizeof(kActs[0]));

struct Mode {
  const char* name;
  Precision precision;
  DType dtype;
  Layout layout;
  double tol;
};
const Mode kFp32{"fp32-NCHW", Precision::kFP32, DType::kF32, Layout::kNCHW, 1e-5};
const Mode kTf32{"tf32-NCHW", Precision::kTF32, DType::kF32, Layout::kNCHW, 5e-3};
const Mode kFp16{"fp16-NHWC", Precision::kFP16, DType::kF16, Layout::kNHWC, 5e-3};
const Mode kFp16Nchw{"fp16-NCHW", Precision::kFP16, DType::kF16, Layout::kNCHW, 5e-3};
const Mode kFp32Nhwc{"fp32-NHWC", Precision::kFP32, DType::kF32, Layout::kNHWC, 1e-5};

Shape3 out_shape(const ConvCase& cc) {
  return {cc.filters, (cc.h + 2 * cc.padding - cc.size) / cc.stride_y + 1,
          (cc.w + 2 * cc.padding - cc.size) / cc.stride_x + 1};
}

ConvParams params_of(const ConvCase& cc, Activation act) {
  ConvParams p;
  p.filters = cc.filters;
  p.size = cc.size;
  p.stride_x = cc.stride_x;
  p.stride_y = cc.stride_y;
  p.dilation = cc.dilation;
  p.padding = cc.padding;
  p.groups = cc.groups;
  p.activation = act;
  return p;
}

float round_half(float v) { return half_to_float(float_to_half(v)); }

// Host data of one problem (fp32 NCHW / OIHW; half-rounded when the mode is f16).
struct Problem {
  ConvCase cc;
  ConvParams p;
  bool half = false;
  HostTensor x;
  std::vector<float> w;  // OIHW [F][C/groups][k][k]
  std::vector<float> bias;
};

Problem make_problem(const ConvCase& cc, Activation act, bool half, uint32_t seed) {
  Problem pr;
  pr.cc = cc;
  pr.p = params_of(cc, act);
  pr.half = half;
  pr.x = test::random_tensor(cc.n, {cc.c, cc.h, cc.w}, seed, -1.f, 1.f);
  const int fan_in = cc.c / cc.groups * cc.size * cc.size;
  const float a = std::sqrt(3.f / float(fan_in));  // uniform(-a, a) has variance 1/fan_in
  pr.w.resize(size_t(cc.filters) * size_t(fan_in));
  test::fill_random(&pr.w, seed + 1, -a, a);
  pr.bias.resize(size_t(cc.filters));
  test::fill_random(&pr.bias, seed + 2, -0.5f, 0.5f);
  if (half) {
    test::round_to_half(&pr.x);
    for (float& v : pr.w) v = round_half(v);
  }
  return pr;
}

HostTensor reference(const Problem& pr, bool use_bias) {
  HostTensor x = pr.x;
  HostTensor y(pr.cc.n, out_shape(pr.cc));
  const int threads = 16;  // the GPU machine's cores
  std::vector<float> scratch(
      size_t(std::max<int64_t>(1, cpu::conv2d_scratch_floats(pr.p, x.shape, y.shape, threads))));
  cpu::conv2d(pr.p, x.view(), pr.w.data(), use_bias ? pr.bias.data() : nullptr, y.view(), scratch.data(), threads);
  return y;
}

// Weights in the device layout: OIHW for NCHW, OHWI for NHWC; f32 or f16 bytes.
std::vector<uint8_t> device_weights(const Problem& pr, DType dt, Layout layout) {
  const int f = pr.cc.filters, cg = pr.cc.c / pr.cc.groups, k = pr.cc.size;
  std::vector<uint8_t> bytes(pr.w.size() * dtype_size(dt));
  for (int o = 0; o < f; ++o)
    for (int i = 0; i < cg; ++i)
      for (int y = 0; y < k; ++y)
        for (int x = 0; x < k; ++x) {
          const float v = pr.w[((size_t(o) * cg + i) * k + y) * k + x];
          const size_t dst =
              layout == Layout::kNCHW ? ((size_t(o) * cg + i) * k + y) * k + x : ((size_t(o) * k + y) * k + x) * cg + i;
          if (dt == DType::kF16) {
            const uint16_t h = float_to_half(v);
            std::memcpy(&bytes[dst * 2], &h, 2);
          } else {
            std::memcpy(&bytes[dst * 4], &v, 4);
          }
        }
  return bytes;
}

struct Gpu {
  Stream stream;
  CudnnHandle cudnn;
};
::testing::AssertionResult init_gpu(Gpu* g) {
  auto s = make_stream();
  if (!s.ok()) return ::testing::AssertionFailure() << s.status().to_string();
  auto h = make_cudnn();
  if (!h.ok()) return ::testing::AssertionFailure() << h.status().to_string();
  g->stream = std::move(s).value();
  g->cudnn = std::move(h).value();
  return ::testing::AssertionSuccess();
}

#define CONV_TEST_SETUP(g) \
  DLR_REQUIRE_GPU();       \
  Gpu g;                   \
  ASSERT_TRUE(init_gpu(&g))

constexpr size_t kGuardBytes = 4096;
constexpr uint8_t kGuardByte = 0xA5;

// What one GPU run gave. stage: "" (ran), "harness" (CUDA failure of the test
// itself), "create" or "run" (CudnnConv returned `status`).
struct Outcome {
  std::string stage;
  Status status;
  std::string algo = "-";
  size_t ws = 0;
  bool fused_at_create = false;
  bool fused_after_run = false;
  HostTensor got;
  int64_t outside_touched = 0, first_outside = -1;
  int64_t guard_bad = 0;  // bytes of the guard zone after the workspace that changed
};

#define CONV_HARNESS(call)                                                                           \
  do {                                                                                               \
    const cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                         \
      o.stage = "harness";                                                                           \
      o.status = Status(StatusCode::kCudaError, std::string(#call) + ": " + cudaGetErrorString(e_)); \
      return o;                                                                                      \
    }                                                                                                \
  } while (0)

Outcome run_gpu(Gpu& g, const Problem& pr, const ConvConfig& cfg, const ViewSpec& in_spec, const ViewSpec& out_spec,
                bool use_bias) {
  Outcome o;
  cudaStream_t s = g.stream.get();
  DeviceTensor x, y;
  CONV_HARNESS(x.upload(pr.x, in_spec, s));
  CONV_HARNESS(y.create(pr.cc.n, out_shape(pr.cc), out_spec, s));
  const std::vector<uint8_t> wbytes = device_weights(pr, in_spec.dtype, in_spec.layout);
  auto wbuf = DeviceBuffer::alloc(wbytes.size());
  auto bbuf = DeviceBuffer::alloc(pr.bias.size() * 4);
  if (!wbuf.ok() || !bbuf.ok()) {
    o.stage = "harness";
    o.status = internal_error("weight allocation failed");
    return o;
  }
  CONV_HARNESS(cudaMemcpyAsync(wbuf->data(), wbytes.data(), wbytes.size(), cudaMemcpyHostToDevice, s));
  CONV_HARNESS(cudaMemcpyAsync(bbuf->data(), pr.bias.data(), pr.bias.size() * 4, cudaMemcpyHostToDevice, s));
  CONV_HARNESS(cudaStreamSynchronize(s));  // host vectors are pageable and local

  auto conv = CudnnConv::create(g.cudnn.get(), cfg, x.view(), y.view());
  if (!conv.ok()) {
    o.stage = "create";
    o.status = conv.status();
    return o;
  }
  o.algo = (*conv)->algo_name();
  o.ws = (*conv)->workspace_bytes();
  o.fused_at_create = (*conv)->fused();
  auto ws = DeviceBuffer::alloc(o.ws + kGuardBytes);
  if (!ws.ok()) {
    o.stage = "harness";
    o.status = ws.status();
    return o;
  }
  CONV_HARNESS(cudaMemsetAsync(ws->data(), kGuardByte, o.ws + kGuardBytes, s));
  CONV_HARNESS(cudaDeviceSynchronize());           // every input is in place before the conv (non-blocking stream)
  void* ws_ptr = o.ws > 0 ? ws->data() : nullptr;  // exactly workspace_bytes(); null when 0
  const Status st =
      (*conv)->run(g.cudnn.get(), x.view(), wbuf->data(), use_bias ? static_cast<const float*>(bbuf->data()) : nullptr,
                   y.view(), ws_ptr, o.ws, s);
  CONV_HARNESS(cudaStreamSynchronize(s));
  if (!st.ok()) {
    o.stage = "run";
    o.status = st;
    return o;
  }
  o.fused_after_run = (*conv)->fused();
  std::vector<uint8_t> guard(kGuardBytes);
  CONV_HARNESS(cudaMemcpy(guard.data(), static_cast<uint8_t*>(ws->data()) + o.ws, kGuardBytes, cudaMemcpyDeviceToHost));
  for (uint8_t b : guard) o.guard_bad += b != kGuardByte;
  CONV_HARNESS(y.download(&o.got, &o.outside_touched, &o.first_outside, s));
  return o;
}

ConvConfig make_config(const Problem& pr, const Mode& m, AlgoPolicy policy) {
  ConvConfig cfg;
  cfg.params = pr.p;
  cfg.precision = m.precision;
  cfg.policy = policy;
  return cfg;
}

// True when create() or run() failed because cuDNN itself does not support the
// configuration: a cuDNN call answered CUDNN_STATUS_NOT_SUPPORTED* (kCudnnError), or
// every heuristic/find candidate did (kUnsupported "cuDNN supports no algorithm").
bool cudnn_refused(const Status& st) {
  if (st.code() == StatusCode::kCudnnError) return st.message().find("NOT_SUPPORTED") != std::string::npos;
  if (st.code() == StatusCode::kUnsupported)
    return st.message().find("cuDNN supports no algorithm") != std::string::npos;
  return false;
}
bool cudnn_refused(const Outcome& o) { return (o.stage == "create" || o.stage == "run") && cudnn_refused(o.status); }

// The mode's tolerance for every algorithm (measured on an H100 with cuDNN 9.14: the
// FFT and Winograd algorithms stay near 1e-6 in fp32, well inside 1e-5).
double tolerance(const Mode& m, const std::string& /*algo*/) { return m.tol; }

// "CUDNN_STATUS_..." out of a cuDNN Status message (the whole message otherwise).
std::string status_word(const Status& st) {
  const std::string& msg = st.message();
  const size_t at = msg.find("CUDNN_STATUS_");
  if (at == std::string::npos) return msg.substr(0, 160);
  const size_t end = msg.find_first_of(" ,)", at);
  return msg.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

double max_abs(const HostTensor& a, const HostTensor& b) {
  double mx = 0;
  for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i)
    mx = std::max(mx, double(std::fabs(a.data[i] - b.data[i])));
  return mx;
}

std::string label_of(const Problem& pr, const Mode& m, const ConvConfig& cfg, const ViewSpec& in_spec,
                     const ViewSpec& out_spec) {
  return std::string(pr.cc.name) + " act=" + activation_name(pr.p.activation) + " " + m.name + " " +
         (cfg.policy == AlgoPolicy::kFind ? "find" : "heuristic") +
         (cfg.force_algo >= 0 ? std::string(" force=") + conv_algo_name(cudnnConvolutionFwdAlgo_t(cfg.force_algo))
                              : "") +
         (cfg.allow_fusion ? "" : " nofusion") + " in{" + test::describe(in_spec) + "} out{" +
         test::describe(out_spec) + "}";
}

// Checks a completed run against `ref` and prints the summary line.
void check_outcome(const Outcome& o, const HostTensor& ref, const Mode& m, const std::string& label) {
  if (!o.stage.empty()) {
    ADD_FAILURE() << label << ": " << o.stage << " failed: " << o.status.to_string();
    return;
  }
  const double tol = tolerance(m, o.algo);
  const double rel = test::rel_l2(o.got.data, ref.data);
  std::printf("[conv] %s algo=%s ws=%zu fused=%d%s rel=%.3g maxabs=%.3g tol=%.0e\n", label.c_str(), o.algo.c_str(),
              o.ws, int(o.fused_after_run), o.fused_at_create != o.fused_after_run ? "(REFUSED at run)" : "", rel,
              max_abs(o.got, ref), tol);
  EXPECT_TRUE(test::near_rel(o.got, ref, tol, label + " algo=" + o.algo));
  EXPECT_TRUE(test::untouched_outside(o.outside_touched, o.first_outside, label + " algo=" + o.algo));
  EXPECT_EQ(o.guard_bad, 0) << label << " algo=" << o.algo << ": wrote past workspace_bytes()=" << o.ws;
}

// The full pipeline for one problem: run, reference, check. Returns the outcome.
Outcome check_case(Gpu& g, const ConvCase& cc, Activation act, const Mode& m, ConvConfig* cfg_in = nullptr,
                   AlgoPolicy policy = AlgoPolicy::kHeuristic, uint32_t seed = 1234) {
  const Problem pr = make_problem(cc, act, m.dtype == DType::kF16, seed);
  ConvConfig cfg = cfg_in ? *cfg_in : make_config(pr, m, policy);
  cfg.params = pr.p;
  const ViewSpec spec = test::packed_spec(m.dtype, m.layout);
  const Outcome o = run_gpu(g, pr, cfg, spec, spec, true);
  check_outcome(o, reference(pr, true), m, label_of(pr, m, cfg, spec, spec));
  return o;
}

// ---- accuracy sweeps ----

void sweep(const Mode& m, AlgoPolicy policy) {
  CONV_TEST_SETUP(g);
  for (int i = 0; i < kNumCases; ++i) check_case(g, kCases[i], kActs[i % kNumActs], m, nullptr, policy, 100 + i);
}

TEST(ConvAccuracy, Fp32NchwHeuristic) { sweep(kFp32, AlgoPolicy::kHeuristic); }
TEST(ConvAccuracy, Tf32NchwHeuristic) { sweep(kTf32, AlgoPolicy::kHeuristic); }
TEST(ConvAccuracy, Fp16NhwcHeuristic) { sweep(kFp16, AlgoPolicy::kHeuristic); }
TEST(ConvAccuracy, Fp32NchwFind) { sweep(kFp32, AlgoPolicy::kFind); }
TEST(ConvAccuracy, Tf32NchwFind) { sweep(kTf32, AlgoPolicy::kFind); }
TEST(ConvAccuracy, Fp16NhwcFind) { sweep(kFp16, AlgoPolicy::kFind); }

TEST(ConvAccuracy, EveryActivation) {
  CONV_TEST_SETUP(g);
  for (const Mode& m : {kFp32, kTf32, kFp16})
    for (int a = 0; a < kNumActs; ++a) check_case(g, find_case("k3g2_c8f12_13x13_b2"), kActs[a], m, nullptr);
}

// Layout/dtype combinations beyond the three main modes: a cuDNN refusal is reported
// and counted (H100: none of the 22 cases refused in any of the three modes, so the
// bound is 0: a refusal means cuDNN or the descriptors changed -- measure and update);
// any other error and wrong numbers are failures.
TEST(ConvAccuracy, ExtraLayouts) {
  CONV_TEST_SETUP(g);
  const Mode extra[] = {kFp32Nhwc, {"tf32-NHWC", Precision::kTF32, DType::kF32, Layout::kNHWC, 5e-3}, kFp16Nchw};
  constexpr int kMaxRefusedPerMode = 0;
  for (const Mode& m : extra) {
    int refused = 0;
    for (int i = 0; i < kNumCases; ++i) {
      const Problem pr = make_problem(kCases[i], kActs[i % kNumActs], m.dtype == DType::kF16, 300 + i);
      const ConvConfig cfg = make_config(pr, m, AlgoPolicy::kHeuristic);
      const ViewSpec spec = test::packed_spec(m.dtype, m.layout);
      const Outcome o = run_gpu(g, pr, cfg, spec, spec, true);
      const std::string label = label_of(pr, m, cfg, spec, spec);
      if (cudnn_refused(o)) {
        std::printf("[conv] %s: NOT supported: %s\n", label.c_str(), o.status.to_string().c_str());
        ++refused;
        continue;
      }
      check_outcome(o, reference(pr, true), m, label);  // fails on any other create/run error
    }
    EXPECT_LE(refused, kMaxRefusedPerMode) << m.name << ": cuDNN refused " << refused << " of " << kNumCases;
  }
}

// Every cuDNN algorithm forced in turn: whatever kFind might pick must be right.
// cuDNN refuses some (algorithm, problem) pairs; the H100 run refused 18 of the 48
// pairs in fp32 and in tf32 (DIRECT and WINOGRAD everywhere, FFT/FFT_TILING/
// WINOGRAD_NONFUSED on some problems) and 36 of 48 in fp16 NHWC (only the two
// implicit GEMMs run). More refusals than that fail; so does any other error.
TEST(ConvAlgos, EveryForcedAlgorithm) {
  CONV_TEST_SETUP(g);
  const char* names[] = {"k3s1p1_c8f16_13x13",  "k1s1p0_c16f8_13x13_b2", "k5d2_c4f8_13x13_b2",
                         "k3g2_c8f12_13x13_b2", "dw_k3s2_c16_11x9_b2",   "k3s1p1_c32f64_26x26_b2"};
  struct Bound {
    const Mode* mode;
    int max_refused;
  };
  for (const Bound& b : {Bound{&kFp32, 18}, Bound{&kTf32, 18}, Bound{&kFp16, 36}}) {
    const Mode& m = *b.mode;
    int refused_in_mode = 0;
    for (const char* name : names) {
      const Problem pr = make_problem(find_case(name), Activation::kLeaky, m.dtype == DType::kF16, 77);
      const HostTensor ref = reference(pr, true);
      const ViewSpec spec = test::packed_spec(m.dtype, m.layout);
      int worked = 0;
      std::string refused;
      for (int a = 0; a < int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT); ++a) {
        ConvConfig cfg = make_config(pr, m, AlgoPolicy::kHeuristic);
        cfg.force_algo = a;
        const Outcome o = run_gpu(g, pr, cfg, spec, spec, true);
        if (cudnn_refused(o)) {
          refused += std::string(" ") + conv_algo_name(cudnnConvolutionFwdAlgo_t(a)) + "(" + o.stage + ": " +
                     status_word(o.status) + ")";
          ++refused_in_mode;
          continue;
        }
        ++worked;
        check_outcome(o, ref, m, label_of(pr, m, cfg, spec, spec));  // fails on any other create/run error
      }
      std::printf("[conv] %s %s: %d algorithms ran; refused:%s\n", name, m.name, worked, refused.c_str());
      EXPECT_GT(worked, 0) << name << " " << m.name << ": no algorithm ran";
    }
    EXPECT_LE(refused_in_mode, b.max_refused) << m.name << ": cuDNN refused more forced algorithms than on the H100";
  }
}

// ---- fusion ----

// Fused (cudnnConvolutionBiasActivationForward) vs unfused (conv + bias_activation)
// on the same problem: both near the CPU reference and near each other.
void compare_fusion(Gpu& g, const ConvCase& cc, Activation act, const Mode& m, int force_algo, bool expect_fused) {
  const Problem pr = make_problem(cc, act, m.dtype == DType::kF16, 555);
  const HostTensor ref = reference(pr, true);
  const ViewSpec spec = test::packed_spec(m.dtype, m.layout);
  ConvConfig fused_cfg = make_config(pr, m, AlgoPolicy::kHeuristic);
  fused_cfg.force_algo = force_algo;
  ConvConfig plain_cfg = fused_cfg;
  plain_cfg.allow_fusion = false;
  const Outcome f = run_gpu(g, pr, fused_cfg, spec, spec, true);
  const Outcome u = run_gpu(g, pr, plain_cfg, spec, spec, true);
  const std::string label = label_of(pr, m, fused_cfg, spec, spec);
  check_outcome(f, ref, m, label);
  check_outcome(u, ref, m, label_of(pr, m, plain_cfg, spec, spec));
  if (!f.stage.empty() || !u.stage.empty()) return;
  EXPECT_EQ(f.fused_at_create, expect_fused) << label << " algo=" << f.algo;
  EXPECT_FALSE(u.fused_at_create) << label << ": allow_fusion=false but fused() is true";
  if (f.fused_at_create && !f.fused_after_run)
    std::printf("[conv] %s: FUSED CALL REFUSED by cuDNN at run (fell back to conv + bias_activation)\n", label.c_str());
  int64_t nan_fused = 0, nan_plain = 0;
  for (float v : f.got.data) nan_fused += std::isnan(v);
  for (float v : u.got.data) nan_plain += std::isnan(v);
  EXPECT_FALSE(nan_fused > 0 && nan_plain == 0)
      << label << ": fused output has " << nan_fused << " NaN (output prefilled with NaN) where unfused has none: "
      << "cuDNN reads z=y despite alpha2=0";
  const bool bitwise = f.got.data == u.got.data;
  std::printf("[conv] %s: fused(%s) vs unfused(%s): rel=%.3g maxabs=%.3g bitwise=%d\n", label.c_str(), f.algo.c_str(),
              u.algo.c_str(), test::rel_l2(f.got.data, u.got.data), max_abs(f.got, u.got), int(bitwise));
  EXPECT_TRUE(test::near_rel(f.got, u.got, tolerance(m, f.algo), label + " fused vs unfused"));
}

TEST(ConvFusion, ReluFusedMatchesUnfused) {
  CONV_TEST_SETUP(g);
  const char* names[] = {"k3s1p1_c8f16_13x13", "k1s1p0_c16f8_13x13_b2", "k3s2p1_c8f16_13x13",    "k3g2_c8f12_13x13_b2",
                         "dw_k3s1_c16_13x13",  "k3d2_c8f8_13x13",       "k3s1p1_c32f64_26x26_b2"};
  for (const Mode& m : {kFp32, kTf32})
    for (const char* name : names) compare_fusion(g, find_case(name), Activation::kRelu, m, -1, true);
}

TEST(ConvFusion, LinearFusedWithPrecompGemm) {
  CONV_TEST_SETUP(g);
  const int precomp = int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  const char* names[] = {"k3s1p1_c8f16_13x13", "k1_c64f255_13x13", "k3s1p1_c32f64_26x26_b2"};
  for (const Mode& m : {kFp32, kTf32})
    for (const char* name : names) compare_fusion(g, find_case(name), Activation::kLinear, m, precomp, true);
  // Linear with another algorithm and f16 data are never fused.
  compare_fusion(g, find_case("k3s1p1_c8f16_13x13"), Activation::kLinear, kFp32,
                 int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM), false);
  compare_fusion(g, find_case("k3s1p1_c8f16_13x13"), Activation::kRelu, kFp16, -1, false);
}

TEST(ConvFusion, NullBias) {
  CONV_TEST_SETUP(g);
  for (const Mode& m : {kFp32, kFp16}) {
    for (Activation act : {Activation::kRelu, Activation::kLinear, Activation::kLeaky}) {
      const Problem pr = make_problem(find_case("k3s1p1_c8f16_13x13"), act, m.dtype == DType::kF16, 9);
      const ConvConfig cfg = make_config(pr, m, AlgoPolicy::kHeuristic);
      const ViewSpec spec = test::packed_spec(m.dtype, m.layout);
      const Outcome o = run_gpu(g, pr, cfg, spec, spec, false);
      check_outcome(o, reference(pr, false), m, label_of(pr, m, cfg, spec, spec) + " bias=null");
    }
  }
}

// ---- algorithm cache ----

TEST(ConvCache, SameKeySameAlgorithm) {
  CONV_TEST_SETUP(g);
  const Problem pr = make_problem(find_case("k3s1p1_c32f64_26x26_b2"), Activation::kLeaky, false, 5);
  for (AlgoPolicy policy : {AlgoPolicy::kHeuristic, AlgoPolicy::kFind}) {
    ConvConfig cfg = make_config(pr, kFp32, policy);
    const Outcome a = run_gpu(g, pr, cfg, test::packed_spec(DType::kF32, Layout::kNCHW),
                              test::packed_spec(DType::kF32, Layout::kNCHW), true);
    const Outcome b = run_gpu(g, pr, cfg, test::packed_spec(DType::kF32, Layout::kNCHW),
                              test::packed_spec(DType::kF32, Layout::kNCHW), true);
    ASSERT_TRUE(a.stage.empty() && b.stage.empty()) << a.status.to_string() << " / " << b.status.to_string();
    EXPECT_EQ(a.algo, b.algo);
    EXPECT_TRUE(test::bit_equal(a.got, b.got, "same config, same algorithm, run twice"));
    TensorView in = TensorView::packed(nullptr, DType::kF32, Layout::kNCHW, pr.cc.n, pr.x.shape);
    TensorView out = TensorView::packed(nullptr, DType::kF32, Layout::kNCHW, pr.cc.n, out_shape(pr.cc));
    auto key = CudnnConv::cache_key(cfg, in, out);
    ASSERT_TRUE(key.ok()) << key.status().to_string();
    cudnnConvolutionFwdAlgo_t cached{};
    ASSERT_TRUE(AlgoCache::process().lookup(*key, &cached)) << "no cache entry for " << *key;
    EXPECT_EQ(conv_algo_name(cached), a.algo) << *key;
    std::printf("[conv] cache key '%s' -> %s\n", key->c_str(), conv_algo_name(cached));
  }
  // A stored entry is used by create (unique key: an unusual workspace limit).
  ConvConfig cfg = make_config(pr, kFp32, AlgoPolicy::kHeuristic);
  cfg.workspace_limit = (size_t(64) << 20) + 12345;
  const ViewSpec spec = test::packed_spec(DType::kF32, Layout::kNCHW);
  const Outcome natural = run_gpu(g, pr, cfg, spec, spec, true);
  ASSERT_TRUE(natural.stage.empty()) << natural.status.to_string();
  const cudnnConvolutionFwdAlgo_t other = natural.algo == "IMPLICIT_GEMM"
                                              ? CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
                                              : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cfg.workspace_limit += 1;
  TensorView in = TensorView::packed(nullptr, DType::kF32, Layout::kNCHW, pr.cc.n, pr.x.shape);
  TensorView out = TensorView::packed(nullptr, DType::kF32, Layout::kNCHW, pr.cc.n, out_shape(pr.cc));
  auto key = CudnnConv::cache_key(cfg, in, out);
  ASSERT_TRUE(key.ok());
  AlgoCache::process().store(*key, other);
  EXPECT_EQ(AlgoCache::process().insert(*key, natural.algo == "IMPLICIT_GEMM" ? CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM
                                                                              : CUDNN_CONVOLUTION_FWD_ALGO_FFT),
            other)
      << "insert must keep the first entry";
  const Outcome forced = run_gpu(g, pr, cfg, spec, spec, true);
  EXPECT_EQ(forced.algo, conv_algo_name(other)) << "create ignored the cached algorithm";
  check_outcome(forced, reference(pr, true), kFp32, "cache-stored algorithm");
}

// ---- workspace ----

TEST(ConvWorkspace, LimitAndExactSize) {
  CONV_TEST_SETUP(g);
  const Problem pr = make_problem(find_case("k3s1p1_c32f64_26x26_b2"), Activation::kMish, false, 6);
  const HostTensor ref = reference(pr, true);
  const ViewSpec spec = test::packed_spec(DType::kF32, Layout::kNCHW);
  for (AlgoPolicy policy : {AlgoPolicy::kHeuristic, AlgoPolicy::kFind}) {  // limit 0: a no-workspace algorithm
    ConvConfig cfg = make_config(pr, kFp32, policy);
    cfg.workspace_limit = 0;
    const Outcome o = run_gpu(g, pr, cfg, spec, spec, true);
    check_outcome(o, ref, kFp32, label_of(pr, kFp32, cfg, spec, spec) + " limit=0");
    EXPECT_EQ(o.ws, 0u);
  }
  // An algorithm that needs workspace: run() refuses one byte less, runs with exactly it.
  bool found = false;
  for (int a = 0; a < int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT) && !found; ++a) {
    ConvConfig cfg = make_config(pr, kFp32, AlgoPolicy::kHeuristic);
    cfg.force_algo = a;
    DeviceTensor x, y;
    ASSERT_EQ(cudaSuccess, x.upload(pr.x, spec, g.stream.get()));
    ASSERT_EQ(cudaSuccess, y.create(pr.cc.n, out_shape(pr.cc), spec, g.stream.get()));
    auto conv = CudnnConv::create(g.cudnn.get(), cfg, x.view(), y.view());
    if (!conv.ok()) {  // cuDNN may refuse a forced algorithm; nothing else may fail
      EXPECT_TRUE(cudnn_refused(conv.status())) << "force " << a << ": " << conv.status().to_string();
      continue;
    }
    if ((*conv)->workspace_bytes() == 0) continue;
    found = true;
    const size_t ws = (*conv)->workspace_bytes();
    auto buf = DeviceBuffer::alloc(ws);
    auto w = DeviceBuffer::alloc(pr.w.size() * 4);
    ASSERT_TRUE(buf.ok() && w.ok());
    const Status st =
        (*conv)->run(g.cudnn.get(), x.view(), w->data(), nullptr, y.view(), buf->data(), ws - 1, g.stream.get());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << (*conv)->algo_name() << ": " << st.to_string();
    const Status st0 = (*conv)->run(g.cudnn.get(), x.view(), w->data(), nullptr, y.view(), nullptr, ws, g.stream.get());
    EXPECT_EQ(st0.code(), StatusCode::kInvalidArgument) << "null workspace: " << st0.to_string();
    std::printf("[conv] workspace check with %s (%zu bytes): %s / %s\n", (*conv)->algo_name().c_str(), ws,
                st.to_string().c_str(), st0.to_string().c_str());
    ConvConfig exact = cfg;  // the full run with exactly ws bytes + guard
    check_outcome(run_gpu(g, pr, exact, spec, spec, true), ref, kFp32, label_of(pr, kFp32, exact, spec, spec));
  }
  if (!found) std::printf("[conv] no algorithm needed workspace for this case (size check not exercised)\n");
}

// ---- errors ----

TEST(ConvErrors, BadConfigurations) {
  CONV_TEST_SETUP(g);
  const ConvCase& cc = find_case("k3s1p1_c8f16_13x13");
  const Problem pr = make_problem(cc, Activation::kLeaky, false, 3);
  const TensorView in = TensorView::packed(nullptr, DType::kF32, Layout::kNCHW, 1, pr.x.shape);
  ConvConfig cfg = make_config(pr, kFp32, AlgoPolicy::kHeuristic);
  Shape3 wrong = out_shape(cc);
  wrong.h += 1;
  auto r1 =
      CudnnConv::create(g.cudnn.get(), cfg, in, TensorView::packed(nullptr, DType::kF32, Layout::kNCHW, 1, wrong));
  ASSERT_FALSE(r1.ok());
  EXPECT_NE(r1.status().message().find("output size"), std::string::npos) << r1.status().to_string();
  std::printf("[conv] wrong output size -> %s\n", r1.status().to_string().c_str());

  const TensorView out = TensorView::packed(nullptr, DType::kF32, Layout::kNCHW, 1, out_shape(cc));
  ConvConfig half = cfg;
  half.precision = Precision::kFP16;
  auto r2 = CudnnConv::create(g.cudnn.get(), half, in, out);
  EXPECT_FALSE(r2.ok()) << "fp16 precision on f32 views accepted";

  ConvConfig dil = cfg;  // dilation 2 with padding 0: cuDNN's size differs from Darknet's formula
  dil.params.dilation = 2;
  dil.params.padding = 0;
  Shape3 dn = {cc.filters, cc.h - 2, cc.w - 2};
  auto r3 = CudnnConv::create(g.cudnn.get(), dil, in, TensorView::packed(nullptr, DType::kF32, Layout::kNCHW, 1, dn));
  EXPECT_FALSE(r3.ok()) << "non-Darknet dilation geometry accepted";
  if (!r3.ok()) std::printf("[conv] dilation 2 padding 0 -> %s\n", r3.status().to_string().c_str());

  auto good = CudnnConv::create(g.cudnn.get(), cfg, in, out);
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  DeviceTensor x, y;
  ASSERT_EQ(cudaSuccess, x.upload(pr.x, test::packed_spec(DType::kF32, Layout::kNCHW), g.stream.get()));
  ASSERT_EQ(cudaSuccess, y.create(2, out_shape(cc), test::packed_spec(DType::kF32, Layout::kNCHW), g.stream.get()));
  const Status st =
      (*good)->run(g.cudnn.get(), x.view(), x.view().data, nullptr, y.view(), nullptr, 1 << 30, g.stream.get());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << "run with a batch-2 output view: " << st.to_string();
}

// ---- channel slices (strided descriptors) ----

// Runs `modes` with the given view specs on 4 problems each; reports cuDNN refusals
// as "strided <what> NOT supported" and collects them; any other create/run error,
// wrong numbers or writes outside the view fail.
void strided(const char* what, const ViewSpec& in_tmpl, const ViewSpec& out_tmpl, std::vector<Mode> modes,
             Activation act, std::vector<std::string>* refused, int* problems) {
  DLR_REQUIRE_GPU();
  Gpu g;
  ASSERT_TRUE(init_gpu(&g));
  const char* names[] = {"k3s1p1_c8f16_13x13", "k1s1p0_c16f8_13x13_b2", "k3g2_c8f12_13x13_b2",
                         "k3s1p1_c32f64_26x26_b2"};
  for (const Mode& m : modes) {
    for (const char* name : names) {
      const Problem pr = make_problem(find_case(name), act, m.dtype == DType::kF16, 21);
      ViewSpec in_spec = in_tmpl, out_spec = out_tmpl;
      in_spec.dtype = out_spec.dtype = m.dtype;
      in_spec.layout = out_spec.layout = m.layout;
      const ConvConfig cfg = make_config(pr, m, AlgoPolicy::kHeuristic);
      const Outcome o = run_gpu(g, pr, cfg, in_spec, out_spec, true);
      const std::string label = label_of(pr, m, cfg, in_spec, out_spec);
      ++*problems;
      if (cudnn_refused(o)) {
        const std::string line = std::string("strided ") + what + " NOT supported" +
                                 (o.stage == "run" ? " at run" : "") + ": " + o.status.to_string() + " [" + label + "]";
        std::printf("[conv] %s\n", line.c_str());
        refused->push_back(line);
        continue;
      }
      check_outcome(o, reference(pr, true), m, label);
    }
  }
}

// max_refused: how many of the problems cuDNN may refuse. 0 for every NCHW slice and
// for NHWC batch padding: the H100 ran them all, and the CUDA engine's NCHW plans put
// convolutions on channel slices (conv_strided_io, docs/architecture.md), so a refusal
// there breaks the runtime. NHWC channel slices: cuDNN 9.14 refused all 4 problems
// (every algorithm NOT_SUPPORTED; the planner never uses them), so up to all. When
// every problem was refused the test is skipped with the first refusal.
#define STRIDED_TEST(name, what, in_spec, out_spec, modes, act, max_refused)                          \
  TEST(ConvStrided, name) {                                                                           \
    std::vector<std::string> refused;                                                                 \
    int problems = 0;                                                                                 \
    strided(what, in_spec, out_spec, modes, act, &refused, &problems);                                \
    if (HasFatalFailure()) return;                                                                    \
    EXPECT_LE(int(refused.size()), (max_refused)) << (refused.empty() ? std::string() : refused[0]); \
    if (problems > 0 && int(refused.size()) == problems && !HasFailure())                             \
      GTEST_SKIP() << refused.size() << " of " << problems << " refused by cuDNN; first: " << refused[0]; \
  }

// NCHW f32 slices: c_before 3 puts a 13x13 slice 2028 bytes into the buffer (4-byte
// aligned only), c_before 4 gives 16-byte aligned starts; n_pad > 0 makes n_stride
// larger than the buffer's images. NHWC f16: pixel_stride = c_before + c + c_after.
STRIDED_TEST(NchwOutputSlice, "output", (ViewSpec{}), (ViewSpec{DType::kF32, Layout::kNCHW, 3, 2, 5}),
             (std::vector<Mode>{kFp32, kTf32}), Activation::kLeaky, 0)
STRIDED_TEST(NchwOutputSliceAligned, "output (aligned offset)", (ViewSpec{}),
             (ViewSpec{DType::kF32, Layout::kNCHW, 4, 4, 0}), (std::vector<Mode>{kFp32}), Activation::kLeaky, 0)
STRIDED_TEST(NchwInputSlice, "input", (ViewSpec{DType::kF32, Layout::kNCHW, 2, 3, 7}), (ViewSpec{}),
             (std::vector<Mode>{kFp32, kTf32}), Activation::kLogistic, 0)
STRIDED_TEST(NchwFusedReluOutputSlice, "output (fused relu)", (ViewSpec{}),
             (ViewSpec{DType::kF32, Layout::kNCHW, 3, 2, 5}), (std::vector<Mode>{kFp32}), Activation::kRelu, 0)
STRIDED_TEST(NhwcF16OutputSlice, "NHWC f16 output", (ViewSpec{}), (ViewSpec{DType::kF16, Layout::kNHWC, 8, 8, 0}),
             (std::vector<Mode>{kFp16}), Activation::kMish, 4)
STRIDED_TEST(NhwcF16OutputSliceOdd, "NHWC f16 output (odd offset)", (ViewSpec{}),
             (ViewSpec{DType::kF16, Layout::kNHWC, 3, 2, 5}), (std::vector<Mode>{kFp16}), Activation::kLeaky, 4)
STRIDED_TEST(NhwcF16InputSlice, "NHWC f16 input", (ViewSpec{DType::kF16, Layout::kNHWC, 8, 8, 0}), (ViewSpec{}),
             (std::vector<Mode>{kFp16}), Activation::kLeaky, 4)

STRIDED_TEST(NhwcF16BatchPadOnly, "NHWC f16 n_stride padding", (ViewSpec{DType::kF16, Layout::kNHWC, 0, 0, 7}),
             (ViewSpec{DType::kF16, Layout::kNHWC, 0, 0, 5}), (std::vector<Mode>{kFp16}), Activation::kLeaky, 0)
STRIDED_TEST(NhwcF32OutputSlice, "NHWC f32 output", (ViewSpec{}), (ViewSpec{DType::kF32, Layout::kNHWC, 4, 4, 0}),
             (std::vector<Mode>{kFp32Nhwc}), Activation::kLeaky, 4)
STRIDED_TEST(NchwF16OutputSlice, "NCHW f16 output", (ViewSpec{}), (ViewSpec{DType::kF16, Layout::kNCHW, 3, 2, 5}),
             (std::vector<Mode>{kFp16Nchw}), Activation::kLeaky, 0)
STRIDED_TEST(NchwF16InputSlice, "NCHW f16 input", (ViewSpec{DType::kF16, Layout::kNCHW, 2, 3, 7}), (ViewSpec{}),
             (std::vector<Mode>{kFp16Nchw}), Activation::kLeaky, 0)

}  // namespace
}  // namespace dlr::cuda
