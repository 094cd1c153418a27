// Fused convolution epilogues on the GPU (docs/architecture.md, "Fused steps"):
//  - bias_activation_add gives the bits of bias_activation followed by the shortcut
//    kernel, on every standard geometry (packed and sliced, NCHW and NHWC, f32 and f16);
//  - FusedConv (conv + bias + activation [+ residual], one cuDNN graph) on f16 and on f32
//    (TF32) views matches the CPU reference within the fp16 tolerance of the conv tests;
//    one line per case says the engine and its build time;
//  - whole networks: fusion epilogue gives the bits of fusion off; fusion cudnn (fp16 and
//    tf32) stays within the unfused run's own error against fp32, and streams
//    bit-identically to its own preload.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/conv_graph.h"
#include "kernels/cuda/cuda_handles.h"
#include "kernels/cuda/cuda_ops.h"
#include "runtime/core/half.h"
#include "runtime/multi/runtime.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/session_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr::test {
namespace {

// ---- bias_activation_add against the two passes ----

class EpilogueAdd : public GpuTest {};

TEST_F(EpilogueAdd, SameBitsAsBiasActivationThenShortcut) {
  const std::vector<ViewSpec> specs = standard_specs();
  const Shape3 shape{24, 9, 7};
  std::vector<float> bias(size_t(shape.c));
  fill_random(&bias, 5, -0.5f, 0.5f);
  auto dbias = cuda::DeviceBuffer::alloc(bias.size() * 4);
  ASSERT_TRUE(dbias.ok());
  ASSERT_EQ(cudaSuccess, to_device(dbias->data(), bias.data(), bias.size() * 4));
  const float* b = static_cast<const float*>(dbias->data());
  int cases = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ViewSpec& t_spec = specs[i];
    for (size_t k : {i, (i + 3) % specs.size()}) {
      ViewSpec r_spec = specs[k];
      r_spec.dtype = t_spec.dtype;  // the residual has the output's dtype
      for (Activation act : {Activation::kLinear, Activation::kLeaky, Activation::kMish, Activation::kSwish})
        for (Activation post : {Activation::kLinear, Activation::kLeaky}) {
          const int n = 2;
          HostTensor x = random_tensor(n, shape, 11 + uint32_t(cases));
          HostTensor r = random_tensor(n, shape, 101 + uint32_t(cases));
          if (t_spec.dtype == DType::kF16) round_to_half(&x), round_to_half(&r);
          DeviceTensor t1, t2, dr;
          ASSERT_EQ(cudaSuccess, t1.upload(x, t_spec, stream()));
          ASSERT_EQ(cudaSuccess, t2.upload(x, t_spec, stream()));
          ASSERT_EQ(cudaSuccess, dr.upload(r, r_spec, stream()));
          ASSERT_TRUE(cuda::bias_activation(t1.view(), b, act, stream()).ok());
          ASSERT_TRUE(cuda::shortcut(t1.view(), &dr.view(), 1, post, t1.view(), stream()).ok());
          ASSERT_TRUE(cuda::bias_activation_add(t2.view(), b, act, dr.view(), post, stream()).ok());
          HostTensor two, one;
          int64_t touched = 0, first = -1;
          ASSERT_EQ(cudaSuccess, t1.download(&two, &touched, &first, stream()));
          ASSERT_EQ(cudaSuccess, t2.download(&one, &touched, &first, stream()));
          const std::string what = std::string("bias_activation_add ") + activation_name(act) + "+" +
                                   activation_name(post) + " out " + describe(t_spec) + " residual " +
                                   describe(r_spec);
          EXPECT_TRUE(untouched_outside(touched, first, what));
          EXPECT_TRUE(bit_equal(one, two, what));
          ++cases;
        }
    }
  }
  EXPECT_EQ(cases, int(specs.size()) * 2 * 4 * 2);
}

TEST_F(EpilogueAdd, ResidualOfAnotherShapeIsRefused) {
  DeviceTensor t, r;
  ASSERT_EQ(cudaSuccess, t.create(1, {8, 4, 4}, packed_spec(DType::kF16, Layout::kNHWC), stream()));
  ASSERT_EQ(cudaSuccess, r.create(1, {4, 4, 4}, packed_spec(DType::kF16, Layout::kNHWC), stream()));
  const Status s = cuda::bias_activation_add(t.view(), nullptr, Activation::kLeaky, r.view(), Activation::kLinear,
                                             stream());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("residual"), std::string::npos) << s.message();
}

// ---- FusedConv against the CPU reference ----

struct Case {
  const char* name;
  int n, c, h, w, filters, size, stride, padding;
};
const Case kCases[] = {
    {"k3s1_c16f32_19x19", 1, 16, 19, 19, 32, 3, 1, 1},
    {"k1s1_c64f32_38x38_b2", 2, 64, 38, 38, 32, 1, 1, 0},
    {"k3s2_c32f64_38x38", 1, 32, 38, 38, 64, 3, 2, 1},
};

float round_half(float v) { return half_to_float(float_to_half(v)); }

// OIHW floats as OHWI weights of `dt`.
std::vector<uint8_t> ohwi(const std::vector<float>& oihw, int f, int c, int k, DType dt) {
  const size_t es = dtype_size(dt);
  std::vector<uint8_t> bytes(oihw.size() * es);
  for (int o = 0; o < f; ++o)
    for (int i = 0; i < c; ++i)
      for (int y = 0; y < k; ++y)
        for (int x = 0; x < k; ++x) {
          const float v = oihw[((size_t(o) * c + i) * k + y) * k + x];
          uint8_t* dst = &bytes[(((size_t(o) * k + y) * k + x) * c + i) * es];
          if (dt == DType::kF16) {
            const uint16_t h = float_to_half(v);
            std::memcpy(dst, &h, 2);
          } else {
            std::memcpy(dst, &v, 4);
          }
        }
  return bytes;
}

// Every case, activation and residual form as a cuDNN graph on views of `dt` (f16: fp16
// data; f32: TF32 math) against the CPU reference in f32 (inputs and weights rounded to
// half for f16; the f16 path's conv output rounded to half before the residual, as the
// unfused path stores it). Returns the number of refusals.
int check_fused_cases(DType dt, cudaStream_t stream) {
  auto handle = cuda::make_cudnn();
  EXPECT_TRUE(handle.ok()) << handle.status().to_string();
  if (!handle.ok()) return -1;
  const bool f16 = dt == DType::kF16;
  int built = 0, refused = 0;
  uint32_t seed = f16 ? 1 : 1001;
  for (const Case& cc : kCases)
    for (Activation act : {Activation::kLinear, Activation::kLeaky, Activation::kMish, Activation::kLogistic,
                           Activation::kSwish})
      for (int res = 0; res < 3; ++res) {  // none; residual then linear; residual then leaky
        ++seed;
        ConvParams p;
        p.filters = cc.filters;
        p.size = cc.size;
        p.stride_x = p.stride_y = cc.stride;
        p.padding = cc.padding;
        p.activation = act;
        const Shape3 out{cc.filters, (cc.h + 2 * cc.padding - cc.size) / cc.stride + 1,
                         (cc.w + 2 * cc.padding - cc.size) / cc.stride + 1};
        HostTensor x = random_tensor(cc.n, {cc.c, cc.h, cc.w}, seed, -1.f, 1.f);
        if (f16) round_to_half(&x);
        const int fan_in = cc.c * cc.size * cc.size;
        const float a = std::sqrt(3.f / float(fan_in));
        std::vector<float> w(size_t(cc.filters) * size_t(fan_in)), bias(size_t(cc.filters));
        fill_random(&w, seed + 1, -a, a);
        if (f16)
          for (float& v : w) v = round_half(v);
        fill_random(&bias, seed + 2, -0.5f, 0.5f);
        HostTensor r = random_tensor(cc.n, out, seed + 3, -1.f, 1.f);
        if (f16) round_to_half(&r);
        HostTensor want(cc.n, out);
        std::vector<float> scratch(size_t(std::max<int64_t>(1, cpu::conv2d_scratch_floats(p, x.shape, out, 4))));
        cpu::conv2d(p, x.view(), w.data(), bias.data(), want.view(), scratch.data(), 4);
        const Activation post = res == 2 ? Activation::kLeaky : Activation::kLinear;
        if (res > 0) {
          for (size_t i = 0; i < want.data.size(); ++i)
            want.data[i] = (f16 ? round_half(want.data[i]) : want.data[i]) + r.data[i];
          cpu::activate_array(post, want.data.data(), int64_t(want.data.size()));
        }
        const ViewSpec spec = packed_spec(dt, Layout::kNHWC);
        DeviceTensor dx, dy, dr;
        EXPECT_EQ(cudaSuccess, dx.upload(x, spec, stream));
        EXPECT_EQ(cudaSuccess, dy.create(cc.n, out, spec, stream));
        EXPECT_EQ(cudaSuccess, dr.upload(r, spec, stream));
        const std::vector<uint8_t> wb = ohwi(w, cc.filters, cc.c, cc.size, dt);
        auto dw = cuda::DeviceBuffer::alloc(wb.size());
        auto db = cuda::DeviceBuffer::alloc(bias.size() * 4);
        EXPECT_TRUE(dw.ok() && db.ok());
        if (!dw.ok() || !db.ok()) return -1;
        EXPECT_EQ(cudaSuccess, to_device(dw->data(), wb.data(), wb.size()));
        EXPECT_EQ(cudaSuccess, to_device(db->data(), bias.data(), bias.size() * 4));
        cuda::FusedConvConfig cfg;
        cfg.params = p;
        cfg.residual = res > 0;
        cfg.post = post;
        // several of cuDNN's engines (each a compilation): every selected plan is checked
        cfg.max_plans = res == 1 && (act == Activation::kMish || act == Activation::kLeaky) ? 3 : 1;
        const std::string what = std::string("fused conv ") + dtype_name(dt) + " " + cc.name + " " +
                                 activation_name(act) + (res == 0 ? "" : res == 1 ? " + residual" : " + residual, leaky");
        auto conv = cuda::FusedConv::create(handle->get(), cfg, dx.view(), dy.view());
        if (!conv.ok()) {
          EXPECT_EQ(conv.status().code(), StatusCode::kUnsupported) << what << ": " << conv.status().to_string();
          std::printf("[fused] %s: refused (%s)\n", what.c_str(), conv.status().message().c_str());
          ++refused;
          continue;
        }
        EXPECT_GE((*conv)->plan_count(), 1);
        EXPECT_LE((*conv)->plan_count(), cfg.max_plans);
        auto ws = cuda::DeviceBuffer::alloc(std::max<size_t>(1, (*conv)->max_workspace_bytes()));
        EXPECT_TRUE(ws.ok());
        if (!ws.ok()) return -1;
        for (int plan = 0; plan < (*conv)->plan_count(); ++plan) {
          EXPECT_TRUE((*conv)->select(plan).ok());
          EXPECT_EQ(cudaSuccess, cudaDeviceSynchronize());
          const Status st = (*conv)->run(handle->get(), dx.view(), dw->data(), static_cast<const float*>(db->data()),
                                         &dr.view(), dy.view(), ws->data(), (*conv)->workspace_bytes(), stream);
          EXPECT_TRUE(st.ok()) << what << ": " << st.to_string();
          HostTensor got;
          int64_t touched = 0, first = -1;
          EXPECT_EQ(cudaSuccess, dy.download(&got, &touched, &first, stream));
          std::printf("[fused] %s: %s, build %.1f ms, workspace %zu, rel %.3g\n", what.c_str(),
                      (*conv)->describe().c_str(), (*conv)->info().build_ms, (*conv)->workspace_bytes(),
                      rel_l2(got.data, want.data));
          EXPECT_TRUE(near_rel(got, want, 5e-3, what + " plan " + std::to_string(plan)));
        }
        EXPECT_FALSE((*conv)->select((*conv)->plan_count()).ok());
        ++built;
      }
  std::printf("[fused] %s: %d built, %d refused\n", dtype_name(dt), built, refused);
  return refused;
}

int compute_capability_major() {
  int major = 0;
  EXPECT_EQ(cudaSuccess, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  return major;
}

class FusedConvTest : public GpuTest {};

// Hopper and Ampere run these graphs (runtime fusion); a refusal of the yolov4 cases there
// would turn fusion into a silent no-op.
TEST_F(FusedConvTest, MatchesTheCpuReference) {
  const int refused = check_fused_cases(DType::kF16, stream());
  if (compute_capability_major() >= 8) {
    EXPECT_EQ(refused, 0);
  }
}

TEST_F(FusedConvTest, Tf32MatchesTheCpuReference) {
  const int refused = check_fused_cases(DType::kF32, stream());
  if (compute_capability_major() >= 8) {
    EXPECT_EQ(refused, 0);
  }
}

// ---- whole networks ----

struct Heads {
  std::vector<std::vector<float>> out;
  EngineOpenTiming timing;
  bool ok = false;
};

Heads run_net(const std::string& cfg, const std::string& weights, const SessionOptions& o,
              const std::vector<float>& input) {
  Heads h;
  auto s = Session::open(cfg, weights, o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return h;
  h.out = test::network_heads(**s, input);  // its checks fail the test on a bad run
  h.timing = (*s)->engine().open_timing();
  h.ok = !h.out.empty();
  return h;
}

TEST(FusionGpu, EpilogueIsBitIdenticalAndCudnnStaysWithinTheRunsOwnError) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const std::string cfg = required_shared_file("models/yolov4.cfg");
  if (cfg.empty()) GTEST_SKIP() << "yolov4.cfg not found";
  const std::string weights = synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  const int size = 416;
  const std::vector<float> input = random_input(1, 3, size, size, 3);
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.width = o.height = size;
  o.precision = Precision::kFP32;
  o.fusion = Fusion::kOff;
  const Heads ref = run_net(cfg, weights, o, input);
  ASSERT_TRUE(ref.ok);
  for (Precision p : {Precision::kFP32, Precision::kTF32, Precision::kFP16}) {
    o.precision = p;
    o.fusion = Fusion::kOff;
    const Heads off = run_net(cfg, weights, o, input);
    o.fusion = Fusion::kEpilogue;
    const Heads epi = run_net(cfg, weights, o, input);
    ASSERT_TRUE(off.ok && epi.ok);
    for (size_t k = 0; k < off.out.size(); ++k)
      ASSERT_EQ(epi.out[k], off.out[k]) << precision_name(p) << " head " << k << ": epilogue differs from off";
    if (p == Precision::kFP32) continue;  // strict fp32 never runs graphs (they may round to TF32)
    const double off_err = test::worst_relative(off.out, ref.out, 1e-6);
    o.fusion = Fusion::kCudnn;
    const Heads fused = run_net(cfg, weights, o, input);
    ASSERT_TRUE(fused.ok);
    const double err = test::worst_relative(fused.out, ref.out, 1e-6);
    std::printf("yolov4 @%d %s: error vs fp32, fusion off %.3g, cudnn %.3g (%d convs as cuDNN graphs, %d refused, "
                "%.1f ms to build)\n",
                size, precision_name(p), off_err, err, fused.timing.convs_fused, fused.timing.fused_refused,
                fused.timing.fused_ms);
    EXPECT_GE(fused.timing.convs_fused, 100);  // yolov4: 110 convs, 10 of them over a concatenation's parts
    EXPECT_LE(err, 2.5 * off_err + 1e-3);
    // Streamed at the smallest pool: the same graphs on weights that arrive later.
    o.mode = WeightMode::kStream;
    o.weight_budget = WeightBudget::min();
    const Heads streamed = run_net(cfg, weights, o, input);
    ASSERT_TRUE(streamed.ok);
    for (size_t k = 0; k < fused.out.size(); ++k)
      ASSERT_EQ(streamed.out[k], fused.out[k]) << "head " << k << ": streamed cudnn-fused run differs from its preload";
  }
}

// The plan cache file of `dir` (one model).
std::string plan_cache_file(const std::string& dir) {
  std::string path;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/fused-plans")) {
    EXPECT_TRUE(path.empty()) << "more than one plan cache file";
    path = entry.path().string();
  }
  return path;
}

// Its "plans" object.
nlohmann::json read_plan_cache(const std::string& dir) {
  const std::string text = read_bytes(plan_cache_file(dir));
  EXPECT_FALSE(text.empty()) << "no plan cache file in " << dir;
  return text.empty() ? nlohmann::json() : nlohmann::json::parse(text)["plans"];
}

// With the cache on (auto), the first open builds the graphs, times each against the conv
// with its epilogue pass, runs the faster and keeps plans and times; the second loads the
// graphs that won, builds none that lost, times nothing and computes the same bits.
TEST(FusionGpu, PlansKeptByTheFirstOpenAreLoadedByTheNext) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const std::string cfg = required_shared_file("models/yolov4-tiny.cfg");
  if (cfg.empty()) GTEST_SKIP() << "yolov4-tiny.cfg not found";
  const std::string weights = synthetic_weights(cfg);
  const std::vector<float> input = random_input(1, 3, 416, 416, 5);
  const std::string dir = temp_dir() + "/fused-cache";
  setenv("DLR_CACHE_DIR", dir.c_str(), 1);
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.cache_kernel_times = true;  // fusion auto: graphs only where their plans are kept
  const Heads first = run_net(cfg, weights, o, input);
  const Heads second = run_net(cfg, weights, o, input);
  // Streamed at the smallest pool: the preload's choices (one file per model), the same bits.
  SessionOptions so = o;
  so.mode = WeightMode::kStream;
  so.weight_budget = WeightBudget::min();
  const Heads streamed = run_net(cfg, weights, so, input);
  unsetenv("DLR_CACHE_DIR");
  ASSERT_TRUE(first.ok && second.ok && streamed.ok);
  EXPECT_EQ(streamed.timing.fused_timed, 0);
  for (size_t k = 0; k < first.out.size(); ++k)
    ASSERT_EQ(streamed.out[k], first.out[k]) << "head " << k << ": streamed auto-fused run differs from its preload";
  const EngineOpenTiming &a = first.timing, &b = second.timing;
  std::printf("yolov4-tiny fp16, fusion auto with the cache: first open %d convs fused, %d faster unfused "
              "(%d configurations timed in %.1f ms), graphs %.1f ms; second %d fused, %d unfused, %d loaded in %.1f ms\n",
              a.convs_fused, a.fused_slower, a.fused_timed, a.fused_choice_ms, a.fused_ms, b.convs_fused,
              b.fused_slower, b.fused_loaded, b.fused_ms);
  EXPECT_GT(a.convs_fused + a.fused_slower, 10);
  EXPECT_GT(a.fused_timed, 0);
  EXPECT_EQ(a.fused_loaded, 0);
  EXPECT_EQ(b.fused_timed, 0);
  EXPECT_EQ(b.convs_fused, a.convs_fused);
  EXPECT_EQ(b.fused_slower, a.fused_slower);
  // The file: every configuration timed; a plan kept exactly where the graph won.
  const nlohmann::json plans = read_plan_cache(dir);
  int with_plan = 0;
  for (const auto& [conv, e] : plans.items()) {
    const double g = e["graph_ms"].get<double>(), u = e["epilogue_ms"].get<double>();
    EXPECT_GT(g, 0) << conv;
    EXPECT_GT(u, 0) << conv;
    const bool graph = !e["plan"].get<std::string>().empty();
    EXPECT_EQ(graph, g <= u) << conv << ": graph " << g << " ms, epilogue " << u << " ms";
    with_plan += graph ? 1 : 0;
  }
  EXPECT_EQ(a.fused_timed, int(plans.size()));
  EXPECT_EQ(b.fused_plans_stored, int(plans.size()));
  EXPECT_EQ(b.fused_loaded, with_plan);
  for (size_t k = 0; k < first.out.size(); ++k) ASSERT_EQ(second.out[k], first.out[k]) << "head " << k;
  // With find_algorithms, several of cuDNN's engines per graph are timed and the fastest
  // kept: the result stays within the fp16 error of the unfused run.
  const std::string dir_find = temp_dir() + "/fused-cache-find";
  setenv("DLR_CACHE_DIR", dir_find.c_str(), 1);
  o.find_algorithms = true;
  const Heads found = run_net(cfg, weights, o, input);
  unsetenv("DLR_CACHE_DIR");
  o.find_algorithms = false;
  o.cache_kernel_times = false;
  o.fusion = Fusion::kOff;
  const Heads off = run_net(cfg, weights, o, input);
  o.precision = Precision::kFP32;
  const Heads ref = run_net(cfg, weights, o, input);
  ASSERT_TRUE(found.ok && off.ok && ref.ok);
  const double off_err = test::worst_relative(off.out, ref.out, 1e-6);
  const double found_err = test::worst_relative(found.out, ref.out, 1e-6);
  std::printf("yolov4-tiny fp16 with find_algorithms: %d convs fused, %d faster unfused, %d configurations timed in "
              "%.1f ms; error vs fp32 %.3g (unfused %.3g)\n",
              found.timing.convs_fused, found.timing.fused_slower, found.timing.fused_timed,
              found.timing.fused_choice_ms, found_err, off_err);
  EXPECT_EQ(found.timing.fused_timed, a.fused_timed);
  EXPECT_LE(found_err, 2.5 * off_err + 1e-3);
  o.precision = Precision::kFP16;
  o.fusion = Fusion::kAuto;
  o.cache_kernel_times = true;
  // Without the cache, auto keeps the epilogue pass: no graph, no build time.
  o.cache_kernel_times = false;
  ASSERT_EQ(o.fusion, Fusion::kAuto);
  const Heads plain = run_net(cfg, weights, o, input);
  ASSERT_TRUE(plain.ok);
  EXPECT_EQ(plain.timing.convs_fused, 0);
}

// A Runtime's engines share arena and ring, so they time nothing; they follow the kept
// choices instead: a configuration kept as "the epilogue pass is faster" is not built
// there either, they compute the standalone session's bits, and the file stays as it was.
TEST(FusionGpu, RuntimeEnginesFollowTheKeptChoice) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const std::string cfg = required_shared_file("models/yolov4-tiny.cfg");
  if (cfg.empty()) GTEST_SKIP() << "yolov4-tiny.cfg not found";
  const std::string weights = synthetic_weights(cfg);
  const std::vector<float> input = random_input(1, 3, 416, 416, 7);
  const std::string dir = temp_dir() + "/fused-cache-runtime";
  setenv("DLR_CACHE_DIR", dir.c_str(), 1);
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.cache_kernel_times = true;
  const Heads timed = run_net(cfg, weights, o, input);
  ASSERT_TRUE(timed.ok);
  // One configuration the graph won is turned into an epilogue choice, so that the file
  // holds both kinds whatever the timing found.
  const std::string path = plan_cache_file(dir);
  ASSERT_FALSE(path.empty());
  nlohmann::json doc = nlohmann::json::parse(read_bytes(path));
  bool turned = false;
  for (auto& [conv, e] : doc["plans"].items()) {
    if (turned || e["plan"].get<std::string>().empty()) continue;
    e["plan"] = "";
    e["graph_ms"] = 2 * e["epilogue_ms"].get<double>();
    turned = true;
  }
  ASSERT_TRUE(turned) << "no configuration ran as a cuDNN graph";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << doc.dump(1);
  const Heads alone = run_net(cfg, weights, o, input);
  const std::string kept = read_bytes(path);
  auto rt = Runtime::create(RuntimeOptions{});
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto m = (*rt)->open(cfg, weights, o);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const std::vector<std::vector<float>> shared = network_heads((*m)->session(), input);
  const EngineOpenTiming t = (*m)->session().engine().open_timing();
  const std::string after = read_bytes(path);
  unsetenv("DLR_CACHE_DIR");
  ASSERT_TRUE(alone.ok);
  std::printf("yolov4-tiny fp16, kept choices: alone %d fused, %d unfused; in a Runtime %d fused, %d unfused, %d "
              "timed\n",
              alone.timing.convs_fused, alone.timing.fused_slower, t.convs_fused, t.fused_slower, t.fused_timed);
  EXPECT_GT(alone.timing.fused_slower, timed.timing.fused_slower);
  EXPECT_EQ(t.fused_timed, 0);
  EXPECT_EQ(t.fused_slower, alone.timing.fused_slower);
  EXPECT_EQ(t.convs_fused, alone.timing.convs_fused);
  EXPECT_EQ(after, kept) << "the Runtime's engine rewrote the kept choices";
  ASSERT_EQ(shared.size(), alone.out.size());
  for (size_t k = 0; k < shared.size(); ++k) ASSERT_EQ(shared[k], alone.out[k]) << "head " << k;
}

}  // namespace
}  // namespace dlr::test
