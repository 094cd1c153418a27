// Scratch (forty-second session): does anything make a small host-to-device copy run
// nearer the link's rate? The streamed rows of issues 30 and 33 are copy-bound in units
// of 1-4 MiB, which ran at 45-49 GB/s beside kernels against 53-54 in 8-16 MiB copies.
// Per copy size, GB/s of 128 MiB (whole copies) from pinned memory, median of 7, for:
//   plain   cudaMemcpyAsync back to back on one stream (the engine's way, outside a graph)
//   graph   the same copies as a chain of memcpy nodes in a CUDA graph (the engine's way)
//   batch   one cudaMemcpyBatchAsync of them all (CUDA 12.8+)
//   batchov the same with cudaMemcpyFlagPreferOverlapWithCompute
//   thp     plain, from mmap'd memory advised as transparent huge pages, cudaHostRegister'ed
//   wc      plain, from cudaHostAllocWriteCombined memory
// on three backgrounds: idle; a memory-bound kernel on every SM; a chain of 4000 small
// kernels (about 2-4 us each, as an inference's graph launches them).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <vector>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void busy(float4* a, const float4* b, size_t n, int reps) {
  for (int r = 0; r < reps; ++r)
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) a[i] = b[i];
}
__global__ void small(float4* a, const float4* b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) a[i] = b[i];
}

struct Ctx {
  size_t total = 128ull << 20;
  char* h = nullptr; char* ht = nullptr; char* hw = nullptr; char* d = nullptr;
  float4 *ba = nullptr, *bb = nullptr; size_t bn = (256ull << 20) / 16;
  cudaStream_t s0, ks; cudaEvent_t t0, t1;
  cudaGraphExec_t smallg = nullptr;
};

enum Mode { kPlain, kGraph, kBatch, kBatchOv, kThp, kWc, kModes };
static const char* kName[] = {"plain", "graph", "batch", "batchov", "thp", "wc"};

static void background(Ctx& c, int bg) {
  if (bg == 1) busy<<<264, 512, 0, c.ks>>>(c.ba, c.bb, c.bn, 40);
  if (bg == 2) CK(cudaGraphLaunch(c.smallg, c.ks));
  CK(cudaGetLastError());
}

static void enqueue(Ctx& c, Mode m, size_t chunk, size_t n, cudaStream_t s) {
  const char* src = m == kThp ? c.ht : m == kWc ? c.hw : c.h;
  if (m == kBatch || m == kBatchOv) {
    std::vector<void*> dst(n); std::vector<const void*> srcs(n); std::vector<size_t> sz(n, chunk);
    for (size_t i = 0; i < n; ++i) { dst[i] = c.d + i * chunk; srcs[i] = src + i * chunk; }
    cudaMemcpyAttributes a{};
    a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    a.flags = m == kBatchOv ? cudaMemcpyFlagPreferOverlapWithCompute : 0;
    size_t idx = 0;
    CK(cudaMemcpyBatchAsync(dst.data(), srcs.data(), sz.data(), n, &a, &idx, 1, s));
    return;
  }
  for (size_t i = 0; i < n; ++i) CK(cudaMemcpyAsync(c.d + i * chunk, src + i * chunk, chunk, cudaMemcpyHostToDevice, s));
}

static float trial(Ctx& c, Mode m, size_t chunk, int bg, cudaGraphExec_t g) {
  const size_t n = c.total / chunk;
  background(c, bg);
  CK(cudaEventRecord(c.t0, c.s0));
  if (m == kGraph) CK(cudaGraphLaunch(g, c.s0)); else enqueue(c, m, chunk, n, c.s0);
  CK(cudaEventRecord(c.t1, c.s0));
  CK(cudaDeviceSynchronize());
  float ms = 0; CK(cudaEventElapsedTime(&ms, c.t0, c.t1));
  return float(double(n * chunk) / (ms * 1e6));
}

int main() {
  Ctx c;
  CK(cudaHostAlloc(&c.h, c.total, cudaHostAllocDefault));
  CK(cudaHostAlloc(&c.hw, c.total, cudaHostAllocWriteCombined));
  std::memset(c.hw, 1, c.total);
  void* p = mmap(nullptr, c.total + (2u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { printf("mmap failed\n"); return 1; }
  c.ht = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + (2u << 20) - 1) & ~uintptr_t((2u << 20) - 1));
  printf("madvise(MADV_HUGEPAGE): %d\n", madvise(c.ht, c.total, MADV_HUGEPAGE));
  std::memset(c.ht, 1, c.total); std::memset(c.h, 1, c.total);
  CK(cudaHostRegister(c.ht, c.total, cudaHostRegisterDefault));
  CK(cudaMalloc(&c.d, c.total));
  CK(cudaMalloc(&c.ba, c.bn * 16)); CK(cudaMalloc(&c.bb, c.bn * 16));
  CK(cudaStreamCreateWithFlags(&c.s0, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&c.ks, cudaStreamNonBlocking));
  CK(cudaEventCreate(&c.t0)); CK(cudaEventCreate(&c.t1));
  {  // the small kernels' graph: 4000 launches of 33 blocks over 1 MiB each
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(c.ks, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < 4000; ++i) small<<<33, 256, 0, c.ks>>>(c.ba + (i % 64) * 65536, c.bb + (i % 64) * 65536, 65536);
    CK(cudaStreamEndCapture(c.ks, &g));
    CK(cudaGraphInstantiate(&c.smallg, g, 0));
  }
  FILE* thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (thp) { char line[256] = {}; if (fgets(line, sizeof line, thp)) printf("THP: %s", line); fclose(thp); }
  { // the background's own time
    for (int bg = 1; bg <= 2; ++bg) {
      background(c, bg); CK(cudaDeviceSynchronize());
      CK(cudaEventRecord(c.t0, c.ks)); background(c, bg); CK(cudaEventRecord(c.t1, c.ks)); CK(cudaDeviceSynchronize());
      float ms = 0; CK(cudaEventElapsedTime(&ms, c.t0, c.t1)); printf("background %d alone: %.3f ms\n", bg, ms);
    }
  }
  const size_t sizes[] = {1u << 20, 2u << 20, 7u << 19, 4u << 20, 8u << 20, 16u << 20};
  const char* bgname[] = {"idle", "busy", "small"};
  printf("%-6s %-8s", "bg", "mode"); for (size_t s : sizes) printf(" %7.1fMiB", double(s) / 1048576); printf("\n");
  for (int bg = 0; bg < 3; ++bg)
    for (int m = 0; m < kModes; ++m) {
      printf("%-6s %-8s", bgname[bg], kName[m]);
      for (size_t chunk : sizes) {
        cudaGraphExec_t ge = nullptr;
        if (m == kGraph) {
          cudaGraph_t g; cudaStream_t cs; CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
          CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
          enqueue(c, kPlain, chunk, c.total / chunk, cs);
          CK(cudaStreamEndCapture(cs, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
          CK(cudaGraphDestroy(g)); CK(cudaStreamDestroy(cs));
        }
        std::vector<float> r;
        trial(c, Mode(m), chunk, bg, ge);
        for (int t = 0; t < 7; ++t) r.push_back(trial(c, Mode(m), chunk, bg, ge));
        std::sort(r.begin(), r.end());
        printf(" %10.2f", r[3]);
        if (ge) CK(cudaGraphExecDestroy(ge));
      }
      printf("\n"); fflush(stdout);
    }
  return 0;
}
