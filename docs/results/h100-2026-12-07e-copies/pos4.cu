// Scratch (forty-second session): is the "slow state" (docs/streaming.md section 6,
// "Position in the process") a cost of every kernel of the process, or of the first
// session's own (cuDNN) kernels? Session S1 (CFG, fp16 preload) timed, a graph of 600
// plain kernels timed, then S2 (the same model) opened and run once, then both again.
// Usage: pos4 CFG WEIGHTS SIZE. Built against build-device's static libraries (head of
// this folder's README).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include "runtime/session.h"
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
using namespace dlr;

__global__ void work(float* a, const float* b, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = b[i] * 1.0001f + 0.5f;
}

static float time_graph(cudaGraphExec_t g, cudaStream_t s) {
  cudaEvent_t t0, t1; CK(cudaEventCreate(&t0)); CK(cudaEventCreate(&t1));
  std::vector<float> r;
  for (int i = 0; i < 22; ++i) {
    CK(cudaEventRecord(t0, s)); CK(cudaGraphLaunch(g, s)); CK(cudaEventRecord(t1, s)); CK(cudaStreamSynchronize(s));
    float ms = 0; CK(cudaEventElapsedTime(&ms, t0, t1)); if (i) r.push_back(ms);
  }
  std::sort(r.begin(), r.end());
  return r[r.size() / 2];
}

static double session_ms(Session& s, const std::vector<float>& in) {
  std::vector<double> v;
  for (int i = 0; i < 70; ++i) {
    if (!s.engine().set_input(in.data(), 1).ok() || !s.engine().run().ok()) { std::puts("run failed"); std::exit(1); }
    if (i >= 10) v.push_back(s.engine().last_run_timing().network_ms);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  if (argc < 4) { std::puts("usage: pos4 CFG WEIGHTS SIZE"); return 2; }
  const int size = std::atoi(argv[3]);
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.width = o.height = size;
  std::vector<float> in(size_t(3) * size * size, 0.5f);
  auto s1 = Session::open(argv[1], argv[2], o);
  if (!s1.ok()) { std::printf("S1: %s\n", s1.status().message().c_str()); return 1; }
  const int n = 1 << 18;
  float *a, *b; CK(cudaMalloc(&a, 64 * n * sizeof(float))); CK(cudaMalloc(&b, 64 * n * sizeof(float)));
  CK(cudaMemset(a, 0, 64 * n * sizeof(float))); CK(cudaMemset(b, 0, 64 * n * sizeof(float)));
  cudaStream_t st; CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 600; ++i) work<<<(i % 3 + 1) * 66, 256, 0, st>>>(a + (i % 64) * n, b + ((i + 7) % 64) * n, n);
  CK(cudaStreamEndCapture(st, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
  const double s1_before = session_ms(**s1, in);
  const float g_before = time_graph(ge, st);
  std::printf("before S2: S1 %.4f ms, graph %.4f ms\n", s1_before, g_before);
  auto s2 = Session::open(argv[1], argv[2], o);
  if (!s2.ok()) { std::printf("S2: %s\n", s2.status().message().c_str()); return 1; }
  if (!(*s2)->engine().set_input(in.data(), 1).ok() || !(*s2)->engine().run().ok()) { std::puts("S2 run failed"); return 1; }
  CK(cudaDeviceSynchronize());
  const double s1_after = session_ms(**s1, in);
  const float g_after = time_graph(ge, st);
  const double s1_again = session_ms(**s1, in);
  const float g_again = time_graph(ge, st);
  std::printf("after S2:  S1 %.4f / %.4f ms (%+.2f %%), graph %.4f / %.4f ms (%+.2f %%)\n", s1_after, s1_again,
              100.0 * (std::min(s1_after, s1_again) / s1_before - 1.0), g_after, g_again,
              100.0 * (std::min(g_after, g_again) / g_before - 1.0));
  return 0;
}
