// Scratch: H2D copy throughput, one vs several copy streams, with/without a busy kernel and event waits.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void busy(float4* a, const float4* b, size_t n, int reps) {
  for (int r = 0; r < reps; ++r)
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) a[i] = b[i];
}
int main() {
  const size_t total = 128ull << 20;
  char* h; char* d; CK(cudaMallocHost(&h, total)); CK(cudaMalloc(&d, total));
  for (size_t i = 0; i < total; ++i) h[i] = char(i);
  const size_t bn = (256ull << 20) / 16; float4 *ba, *bb; CK(cudaMalloc(&ba, bn * 16)); CK(cudaMalloc(&bb, bn * 16));
  cudaStream_t s[4], ks; for (auto& x : s) CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking));
  cudaEvent_t t0, t1, done, j[4]; CK(cudaEventCreate(&t0)); CK(cudaEventCreate(&t1)); CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  for (auto& x : j) CK(cudaEventCreateWithFlags(&x, cudaEventDisableTiming));
  CK(cudaEventRecord(done, ks)); CK(cudaDeviceSynchronize());
  int dev; CK(cudaGetDevice(&dev)); cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, dev));
  printf("%s asyncEngineCount %d\n", p.name, p.asyncEngineCount);
  for (int withk = 0; withk < 2; ++withk)
  for (int waits = 0; waits < 2; ++waits)
  for (size_t sz : {1ull << 20, 2ull << 20, 4ull << 20, 8ull << 20}) {
    printf("busy=%d waits=%d size %4zu KiB:", withk, waits, sz >> 10);
    for (int ns : {1, 2, 3}) {
      std::vector<float> ms;
      for (int rep = 0; rep < 7; ++rep) {
        if (withk) busy<<<264, 512, 0, ks>>>(ba, bb, bn, 16);
        CK(cudaEventRecord(t0, s[0]));
        for (int k = 1; k < ns; ++k) CK(cudaStreamWaitEvent(s[k], t0, 0));
        const size_t n = total / sz;
        for (size_t i = 0; i < n; ++i) {
          cudaStream_t st = s[i % ns];
          if (waits) CK(cudaStreamWaitEvent(st, done, 0));
          CK(cudaMemcpyAsync(d + i * sz, h + i * sz, sz, cudaMemcpyHostToDevice, st));
        }
        for (int k = 1; k < ns; ++k) { CK(cudaEventRecord(j[k], s[k])); CK(cudaStreamWaitEvent(s[0], j[k], 0)); }
        CK(cudaEventRecord(t1, s[0])); CK(cudaDeviceSynchronize());
        float m; CK(cudaEventElapsedTime(&m, t0, t1)); ms.push_back(m);
      }
      std::sort(ms.begin(), ms.end());
      printf("  %d streams %.2f GB/s", ns, total / (ms[3] * 1e6));
    }
    printf("\n");
  }
  return 0;
}
