// Scratch (forty-second session), after h2d4: why does one cudaMemcpyBatchAsync of many
// small copies run at the link's rate where the same copies one by one do not? Per copy
// size, GB/s of 128 MiB, median of 7, idle or beside a memory-bound kernel on every SM:
//   plain     cudaMemcpyAsync one by one, contiguous (copy i right after copy i - 1, both sides)
//   plainx    one by one, scattered (source every other chunk of 256 MiB, destination reversed)
//   batch     one batch of them all, contiguous          batchx  one batch, scattered
//   batch2/4  batches of 2 / 4 copies, contiguous        batch2x batches of 2, scattered
//   gbatch    one batch captured into a CUDA graph, contiguous; gbatchx the same scattered
// A mode the driver refuses prints its error once and "-" in its cells.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void busy(float4* a, const float4* b, size_t n, int reps) {
  for (int r = 0; r < reps; ++r)
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) a[i] = b[i];
}

struct Ctx {
  size_t total = 128ull << 20;
  char* h = nullptr; char* d = nullptr;
  float4 *ba = nullptr, *bb = nullptr; size_t bn = (256ull << 20) / 16;
  cudaStream_t s0, ks; cudaEvent_t t0, t1;
};

struct Mode { const char* name; bool batch; int group; bool scattered; bool graph; };
static const Mode kModes[] = {
    {"plain", false, 1, false, false},  {"plainx", false, 1, true, false}, {"batch", true, 0, false, false},
    {"batchx", true, 0, true, false},   {"batch2", true, 2, false, false}, {"batch4", true, 4, false, false},
    {"batch2x", true, 2, true, false},  {"gbatch", true, 0, false, true},  {"gbatchx", true, 0, true, true}};

static cudaError_t enqueue(Ctx& c, const Mode& m, size_t chunk, cudaStream_t s) {
  const size_t n = c.total / chunk;
  std::vector<void*> dst(n); std::vector<const void*> src(n); std::vector<size_t> sz(n, chunk);
  for (size_t i = 0; i < n; ++i) {
    src[i] = c.h + (m.scattered ? 2 * i : i) * chunk;
    dst[i] = c.d + (m.scattered ? n - 1 - i : i) * chunk;
  }
  if (!m.batch) {
    for (size_t i = 0; i < n; ++i) { cudaError_t e = cudaMemcpyAsync(dst[i], src[i], chunk, cudaMemcpyHostToDevice, s); if (e) return e; }
    return cudaSuccess;
  }
  cudaMemcpyAttributes a{};
  a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  const size_t g = m.group > 0 ? size_t(m.group) : n;
  for (size_t i = 0; i < n; i += g) {
    size_t idx = 0;
    cudaError_t e = cudaMemcpyBatchAsync(&dst[i], &src[i], &sz[i], std::min(g, n - i), &a, &idx, 1, s);
    if (e) return e;
  }
  return cudaSuccess;
}

static float trial(Ctx& c, const Mode& m, size_t chunk, int bg, cudaGraphExec_t g) {
  if (bg) busy<<<264, 512, 0, c.ks>>>(c.ba, c.bb, c.bn, 40);
  CK(cudaEventRecord(c.t0, c.s0));
  if (g) CK(cudaGraphLaunch(g, c.s0)); else CK(enqueue(c, m, chunk, c.s0));
  CK(cudaEventRecord(c.t1, c.s0));
  CK(cudaDeviceSynchronize());
  float ms = 0; CK(cudaEventElapsedTime(&ms, c.t0, c.t1));
  return float(double(c.total) / (ms * 1e6));
}

int main() {
  Ctx c;
  CK(cudaHostAlloc(&c.h, 2 * c.total, cudaHostAllocDefault));
  std::memset(c.h, 1, 2 * c.total);
  CK(cudaMalloc(&c.d, c.total));
  CK(cudaMalloc(&c.ba, c.bn * 16)); CK(cudaMalloc(&c.bb, c.bn * 16));
  CK(cudaStreamCreateWithFlags(&c.s0, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&c.ks, cudaStreamNonBlocking));
  CK(cudaEventCreate(&c.t0)); CK(cudaEventCreate(&c.t1));
  const size_t sizes[] = {1u << 20, 2u << 20, 4u << 20, 8u << 20};
  printf("%-6s %-8s", "bg", "mode"); for (size_t s : sizes) printf(" %7.1fMiB", double(s) / 1048576); printf("\n");
  for (int bg = 0; bg < 2; ++bg)
    for (const Mode& m : kModes) {
      printf("%-6s %-8s", bg ? "busy" : "idle", m.name);
      std::string err;
      for (size_t chunk : sizes) {
        cudaGraphExec_t ge = nullptr;
        if (m.graph) {
          cudaGraph_t g; cudaStream_t cs; CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
          CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
          const cudaError_t e = enqueue(c, m, chunk, cs);
          const cudaError_t e2 = cudaStreamEndCapture(cs, &g);
          if (e || e2) { err = cudaGetErrorString(e ? e : e2); cudaGetLastError(); printf(" %10s", "-"); CK(cudaStreamDestroy(cs)); continue; }
          CK(cudaGraphInstantiate(&ge, g, 0)); CK(cudaGraphDestroy(g)); CK(cudaStreamDestroy(cs));
        }
        std::vector<float> r;
        trial(c, m, chunk, bg, ge);
        for (int t = 0; t < 7; ++t) r.push_back(trial(c, m, chunk, bg, ge));
        std::sort(r.begin(), r.end());
        printf(" %10.2f", r[3]);
        if (ge) CK(cudaGraphExecDestroy(ge));
      }
      if (!err.empty()) printf("   (%s)", err.c_str());
      printf("\n"); fflush(stdout);
    }
  return 0;
}
