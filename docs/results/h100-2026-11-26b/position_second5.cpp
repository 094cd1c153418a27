// Scratch: does running yolov4's convolutions through a NEW cuDNN handle (no second
// session) make session S1 slower for good? And through the same handle twice?
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <thread>
#include <cuda_runtime.h>
#include <cudnn.h>
#include "runtime/session.h"
#define private public
#include "runtime/cuda/cuda_engine_impl.h"
#undef private
#include "kernels/cuda/conv.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/cuda_handles.h"
using namespace dlr;
static double med(Engine& e, const std::vector<float>& in, int n = 60) {
  std::vector<double> v;
  for (int i = 0; i < n + 10; ++i) {
    if (!e.set_input(in.data(), 1).ok() || !e.run().ok()) { std::puts("run failed"); std::exit(1); }
    if (i >= 10) v.push_back(e.last_run_timing().network_ms);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
// Runs every conv of `plan` once (fp16 NHWC, packed views on scratch) through `h`.
static void run_convs(const ExecutionPlan& plan, cudnnHandle_t h, int limit) {
  size_t most = 0;
  for (const Step& s : plan.steps) most = std::max<size_t>(most, std::max(s.in.count(), s.out.count()));
  void *a, *b, *w, *bias, *ws; cudaMalloc(&a, most * 2); cudaMalloc(&b, most * 2); cudaMalloc(&w, 64 << 20);
  cudaMalloc(&bias, 1 << 20); cudaMalloc(&ws, 256 << 20);
  cudaMemset(a, 0, most * 2); cudaMemset(w, 0, 64 << 20); cudaMemset(bias, 0, 1 << 20);
  cudaStream_t st; cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  int n = 0;
  for (const Step& s : plan.steps) {
    if (s.kind != LayerKind::kConv || n >= limit) continue;
    ++n;
    cuda::ConvConfig cfg; cfg.params = std::get<ConvParams>(s.params); cfg.precision = Precision::kFP16;
    TensorView vin = TensorView::packed(a, DType::kF16, Layout::kNHWC, 1, s.in);
    TensorView vout = TensorView::packed(b, DType::kF16, Layout::kNHWC, 1, s.out);
    auto c = cuda::CudnnConv::create(h, cfg, vin, vout);
    if (!c.ok()) { std::printf("create: %s\n", c.status().message().c_str()); continue; }
    Status r = (*c)->run(h, vin, w, static_cast<const float*>(bias), vout, ws, 256 << 20, st);
    if (!r.ok()) std::printf("run: %s\n", r.message().c_str());
  }
  cudaStreamSynchronize(st);
  std::printf("  ran %d convs\n", n);
}
int main(int argc, char** argv) {
  std::string cfg = argv[1], w = argv[2], what = argv[3];
  SessionOptions o;
  o.device = DeviceKind::kCUDA; o.precision = Precision::kFP16; o.width = o.height = 608;
  std::vector<float> in(3 * 608 * 608, 0.5f);
  if (what == "h2_before_open") {  // a conv through another handle before S1 exists
    cudaSetDevice(0);
    auto h = cuda::make_cudnn(); if (!h.ok()) return 1;
    Session* none = nullptr; (void)none;
    SessionOptions c = o;
    auto tmp = Session::open(cfg, w, SessionOptions{});  // CPU plan only, for the conv shapes
    if (!tmp.ok()) return 1;
    run_convs((*tmp)->plan(), h->get(), 1);
  }
  auto s1 = Session::open(cfg, w, o); if (!s1.ok()) { std::puts(s1.status().message().c_str()); return 1; }
  Engine& e = (*s1)->engine();
  std::printf("%-14s before %.3f\n", what.c_str(), med(e, in));
  if (what == "h2_all" || what == "h2_one" || what == "h2_ten") {
    auto h = cuda::make_cudnn(); if (!h.ok()) return 1;
    run_convs((*s1)->plan(), h->get(), what == "h2_all" ? 1000 : what == "h2_ten" ? 10 : 1);
  }
  if (what == "h1_all" || what == "h1_one") {  // S1's own handle, another stream
    cudnnHandle_t h1 = static_cast<CudaEngine&>(e).m_cudnn.get();
    run_convs((*s1)->plan(), h1, what == "h1_all" ? 1000 : 1);
    cudnnSetStream(h1, static_cast<CudaEngine&>(e).m_stream.get());  // back to S1's stream
  }
  if (what == "h1_tiny_all" || what == "h1_half") {  // another model's convs / half of the packed ones through S1's handle
    cudnnHandle_t h1 = static_cast<CudaEngine&>(e).m_cudnn.get();
    if (what == "h1_tiny_all") {
      SessionOptions c; c.width = c.height = 416;
      auto t = Session::open(argv[4], argv[5], c);
      if (!t.ok()) { std::puts(t.status().message().c_str()); return 1; }
      run_convs((*t)->plan(), h1, 1000);
    } else {
      run_convs((*s1)->plan(), h1, 55);
    }
    cudnnSetStream(h1, static_cast<CudaEngine&>(e).m_stream.get());
  }
  if (what == "ours_new") {  // kernels yolov4 never runs (avgpool, then sam), new code, no cuDNN
    void* p; cudaMalloc(&p, 8 << 20); cudaMemset(p, 0, 8 << 20);
    TensorView a = TensorView::packed(p, DType::kF32, Layout::kNCHW, 1, Shape3{16, 32, 32});
    TensorView b = TensorView::packed(static_cast<char*>(p) + (2 << 20), DType::kF32, Layout::kNCHW, 1, Shape3{16, 1, 1});
    TensorView c = TensorView::packed(static_cast<char*>(p) + (4 << 20), DType::kF32, Layout::kNCHW, 1, Shape3{16, 32, 32});
    if (!cuda::avgpool(a, b, nullptr).ok()) std::puts("avgpool failed");
    if (!cuda::sam(a, a, Activation::kLinear, c, nullptr).ok()) std::puts("sam failed");
    cudaDeviceSynchronize();
  }
  if (what == "ours_known") {  // a kernel yolov4 runs (maxpool config of its SPP) on new buffers
    void* p; cudaMalloc(&p, 8 << 20); cudaMemset(p, 0, 8 << 20);
    TensorView a = TensorView::packed(p, DType::kF16, Layout::kNHWC, 1, Shape3{16, 19, 19});
    TensorView b = TensorView::packed(static_cast<char*>(p) + (2 << 20), DType::kF16, Layout::kNHWC, 1, Shape3{16, 19, 19});
    MaxPoolParams mp; mp.size = 5; mp.stride_x = mp.stride_y = 1; mp.padding = 4;
    if (!cuda::maxpool(mp, a, b, nullptr).ok()) std::puts("maxpool failed");
    cudaDeviceSynchronize();
  }
  if (what == "h1_new_one") {  // one conv config yolov4 does not have, through S1's own handle
    cudnnHandle_t h1 = static_cast<CudaEngine&>(e).m_cudnn.get();
    ExecutionPlan p = (*s1)->plan();
    for (Step& st : p.steps)
      if (st.kind == LayerKind::kConv) { auto& cp = std::get<ConvParams>(st.params); cp.filters = 40; st.out.c = 40; break; }
    run_convs(p, h1, 1);
    cudnnSetStream(h1, static_cast<CudaEngine&>(e).m_stream.get());
  }
  if (what == "h2_all_thread") {  // the same, on another thread (as a helper-made handle)
    std::thread t([&] { cudaSetDevice(0); auto h = cuda::make_cudnn(); if (h.ok()) run_convs((*s1)->plan(), h->get(), 1000); });
    t.join();
  }
  auto cfg_set = [](const char* tag, cudaFuncCache c) { std::printf("  %s: %s\n", tag, cudaGetErrorString(cudaDeviceSetCacheConfig(c))); };
  if (what == "cfg_shared") cfg_set("PreferShared", cudaFuncCachePreferShared);
  if (what == "cfg_l1") cfg_set("PreferL1", cudaFuncCachePreferL1);
  if (what == "cfg_equal") cfg_set("PreferEqual", cudaFuncCachePreferEqual);
  if (what.rfind("h2then_", 0) == 0) {
    auto h = cuda::make_cudnn(); if (!h.ok()) return 1;
    run_convs((*s1)->plan(), h->get(), 1);
    std::printf("%-14s trig   %.3f\n", what.c_str(), med(e, in));
    if (what == "h2then_l1") cfg_set("PreferL1", cudaFuncCachePreferL1);
    if (what == "h2then_shared") cfg_set("PreferShared", cudaFuncCachePreferShared);
    if (what == "h2then_equal") cfg_set("PreferEqual", cudaFuncCachePreferEqual);
    if (what == "h2then_none") cfg_set("PreferNone", cudaFuncCachePreferNone);
    if (what == "h2then_destroy") { h->reset(); std::puts("  H2 destroyed"); }
  }
  std::printf("%-14s after  %.3f\n", what.c_str(), med(e, in));
  std::printf("%-14s after2 %.3f\n", what.c_str(), med(e, in));
  return 0;
}
