// Scratch (thirty-ninth session): can SMs pulling int8 weights from mapped pinned host
// memory (expanding them to fp16 as they read) add PCIe bandwidth to the copy engine's?
// Measures host bytes per second for: DMA alone (chunk sizes), a pull kernel alone (grid
// sizes), and both at once (a fraction of the bytes pulled), on an idle GPU and beside a
// background kernel (memory-bound, or memory-bound on half the SMs).
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void busy(float4* a, const float4* b, size_t n, int reps) {
  for (int r = 0; r < reps; ++r)
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) a[i] = b[i];
}

// Each thread reads 4 x 16 host bytes per trip (independent loads in flight), writes 128 B of fp16.
__global__ void pull_expand(const int4* __restrict__ host, const float* __restrict__ scales, int4* out, size_t n16, int row16) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t base = blockIdx.x * size_t(blockDim.x) + threadIdx.x; base < n16; base += 4 * stride) {
    int4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) { size_t i = base + k * stride; if (i < n16) v[k] = __ldcv(host + i); }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      size_t i = base + k * stride; if (i >= n16) break;
      const float s = scales[i / row16];
      const int8_t* q = reinterpret_cast<const int8_t*>(&v[k]);
      __align__(16) __half h[16];
#pragma unroll
      for (int j = 0; j < 16; ++j) h[j] = __float2half_rn(float(q[j]) * s);
      out[2 * i] = reinterpret_cast<int4*>(h)[0];
      out[2 * i + 1] = reinterpret_cast<int4*>(h)[1];
    }
  }
}

struct Ctx {
  size_t total = 64ull << 20;
  int8_t* h = nullptr; int8_t* hd = nullptr; int8_t* d = nullptr; int4* e = nullptr; float* sc = nullptr;
  float4 *ba = nullptr, *bb = nullptr; size_t bn = (256ull << 20) / 16;
  cudaStream_t s0, s1, ks; cudaEvent_t t0, t1, j1;
};

// Times one trial: DMA of [0, dma_bytes) in chunks on s0, pull of the rest with `blocks` on s1.
static float trial(Ctx& c, size_t dma_bytes, size_t chunk, int blocks, int bg, int bg_blocks) {
  if (bg) busy<<<bg_blocks, 512, 0, c.ks>>>(c.ba, c.bb, c.bn, 40);
  CK(cudaEventRecord(c.t0, c.s0));
  CK(cudaStreamWaitEvent(c.s1, c.t0, 0));
  const size_t pull = c.total - dma_bytes;
  if (pull) {
    pull_expand<<<blocks, 512, 0, c.s1>>>(reinterpret_cast<const int4*>(c.hd + dma_bytes), c.sc,
                                          c.e + 2 * (dma_bytes / 16), pull / 16, 4608 / 16);
    CK(cudaGetLastError());
  }
  for (size_t off = 0; off < dma_bytes; off += chunk)
    CK(cudaMemcpyAsync(c.d + off, c.h + off, std::min(chunk, dma_bytes - off), cudaMemcpyHostToDevice, c.s0));
  CK(cudaEventRecord(c.j1, c.s1)); CK(cudaStreamWaitEvent(c.s0, c.j1, 0));
  CK(cudaEventRecord(c.t1, c.s0)); CK(cudaDeviceSynchronize());
  float ms; CK(cudaEventElapsedTime(&ms, c.t0, c.t1)); return ms;
}

static double rate(Ctx& c, size_t dma_bytes, size_t chunk, int blocks, int bg, int bg_blocks) {
  std::vector<float> v;
  for (int r = 0; r < 9; ++r) v.push_back(trial(c, dma_bytes, chunk, blocks, bg, bg_blocks));
  std::sort(v.begin(), v.end());
  return c.total / (v[4] * 1e6);
}

int main() {
  Ctx c;
  CK(cudaHostAlloc(&c.h, c.total, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&c.hd), c.h, 0));
  CK(cudaMalloc(&c.d, c.total)); CK(cudaMalloc(&c.e, 2 * c.total));
  const size_t rows = c.total / 4608 + 1;
  std::vector<float> hs(rows); for (size_t r = 0; r < rows; ++r) hs[r] = 0.001f * float(1 + r % 97);
  CK(cudaMalloc(&c.sc, rows * 4)); CK(cudaMemcpy(c.sc, hs.data(), rows * 4, cudaMemcpyHostToDevice));
  for (size_t i = 0; i < c.total; ++i) c.h[i] = int8_t((i * 2654435761u) >> 24);
  CK(cudaMalloc(&c.ba, c.bn * 16)); CK(cudaMalloc(&c.bb, c.bn * 16));
  CK(cudaStreamCreateWithFlags(&c.s0, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&c.s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&c.ks, cudaStreamNonBlocking));
  CK(cudaEventCreate(&c.t0)); CK(cudaEventCreate(&c.t1)); CK(cudaEventCreateWithFlags(&c.j1, cudaEventDisableTiming));
  int dev; CK(cudaGetDevice(&dev)); cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, dev));
  printf("%s SMs %d asyncEngineCount %d; 64 MiB of host bytes per trial, median of 9, GB/s of host bytes\n",
         p.name, p.multiProcessorCount, p.asyncEngineCount);
  // Correctness of the pull: every element against the host's expansion.
  trial(c, 0, 0, 132, 0, 0);
  std::vector<__half> out(c.total); CK(cudaMemcpy(out.data(), c.e, 2 * c.total, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < c.total; ++i) if (__half2float(out[i]) != __half2float(__float2half_rn(float(c.h[i]) * hs[i / 4608]))) ++bad;
  printf("pull check: %zu of %zu elements differ\n", bad, c.total);
  // The background's time alone, to see that it outlasts every trial.
  { CK(cudaEventRecord(c.t0, c.ks)); busy<<<264, 512, 0, c.ks>>>(c.ba, c.bb, c.bn, 40); CK(cudaEventRecord(c.t1, c.ks));
    CK(cudaDeviceSynchronize()); float ms; CK(cudaEventElapsedTime(&ms, c.t0, c.t1)); printf("background alone: %.2f ms\n", ms); }
  struct Bg { int on, blocks; const char* name; } bgs[] = {{0, 0, "idle"}, {1, 264, "busy-all"}, {1, 66, "busy-half"}};
  for (auto bg : bgs) {
    printf("== %s\n", bg.name);
    printf("dma alone:");
    for (size_t mib : {1, 2, 4, 8, 16}) printf("  %zuMiB %.2f", mib, rate(c, c.total, mib << 20, 0, bg.on, bg.blocks));
    printf("\npull alone (blocks of 512):");
    for (int b : {4, 8, 16, 33, 66, 132, 264}) printf("  %d:%.2f", b, rate(c, 0, 0, b, bg.on, bg.blocks));
    printf("\n");
    for (size_t chunk_mib : {2, 4, 8})
      for (int b : {8, 16, 33}) {
        printf("dma %zuMiB + pull %3d blocks, pulled fraction:", chunk_mib, b);
        for (int pct : {10, 20, 30, 40, 50}) {
          const size_t pull = c.total * pct / 100 / (16 * 4608) * (16 * 4608);
          printf("  %d%% %.2f", pct, rate(c, c.total - pull, chunk_mib << 20, b, bg.on, bg.blocks));
        }
        printf("\n");
      }
  }
  return 0;
}
