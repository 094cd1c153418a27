// Scratch (forty-second session), pos2 as a sequence: what puts a process's kernels in the "slow state" of
// docs/streaming.md section 6 ("Position in the process": once cuDNN has run a second
// handle's or another model's convolutions, every kernel of the process is 0.3-0.9 us
// longer for good)? One candidate per process (argv[1]): time a graph of 600 small
// kernels (median of 21 replays), run the candidate once, time the graph again.
//   0 nothing   1 a kernel launched with a cluster of 2 blocks   2 a kernel with 200 KiB of
//   dynamic shared memory   3 a kernel whose preferred shared-memory carveout is 100 %
//   4 the same graph's kernels with a carveout of 0 %   5 a kernel of 1024 threads x 255
//   registers   6 a cooperative launch   7 one cuDNN convolution through a new handle (the
//   known trigger; the control)   8 a cuDNN handle made, no convolution
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cudnn.h>
#define CD(x) do { cudnnStatus_t e_ = (x); if (e_ != CUDNN_STATUS_SUCCESS) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudnnGetErrorString(e_)); exit(1); } } while (0)
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void work(float* a, const float* b, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = b[i] * 1.0001f + 0.5f;
}
__global__ void __cluster_dims__(2, 1, 1) clustered(float* a) { if (threadIdx.x == 0) a[blockIdx.x] += 1.0f; }
__global__ void bigshared(float* a) {
  extern __shared__ float s[];
  s[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}
__global__ void carve(float* a) { a[threadIdx.x] += 1.0f; }
__global__ void __launch_bounds__(1024, 1) heavy(float* a) {
  float v[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) v[k] = a[(threadIdx.x + k) % 1024] * k;
  float s = 0;
#pragma unroll
  for (int k = 0; k < 64; ++k) s += v[k] * v[63 - k];
  a[threadIdx.x] = s;
}
__global__ void coop(float* a) { cooperative_groups::this_grid().sync(); if (threadIdx.x == 0) a[blockIdx.x] += 1.0f; }


static cudnnHandle_t g_handle = nullptr;
// One fp16 NHWC 3x3 convolution, 256 -> 512 channels at 38x38, the heuristics' first algorithm.
static void cudnn_conv(cudaStream_t s, bool run, bool new_handle = true) {
  if (new_handle || !g_handle) { CD(cudnnCreate(&g_handle)); CD(cudnnSetStream(g_handle, s)); }
  cudnnHandle_t h = g_handle;
  if (!run) return;
  cudnnTensorDescriptor_t x, y; cudnnFilterDescriptor_t w; cudnnConvolutionDescriptor_t c;
  CD(cudnnCreateTensorDescriptor(&x)); CD(cudnnCreateTensorDescriptor(&y));
  CD(cudnnCreateFilterDescriptor(&w)); CD(cudnnCreateConvolutionDescriptor(&c));
  CD(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, 256, 38, 38));
  CD(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, 512, 256, 3, 3));
  CD(cudnnSetConvolution2dDescriptor(c, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CD(cudnnSetConvolutionMathType(c, CUDNN_TENSOR_OP_MATH));
  CD(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 1, 512, 38, 38));
  cudnnConvolutionFwdAlgoPerf_t perf[8]; int got = 0;
  CD(cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, c, y, 8, &got, perf));
  void *dx, *dw, *dy, *ws = nullptr;
  CK(cudaMalloc(&dx, 256 * 38 * 38 * 2)); CK(cudaMalloc(&dw, 512 * 256 * 9 * 2)); CK(cudaMalloc(&dy, 512 * 38 * 38 * 2));
  CK(cudaMemset(dx, 0, 256 * 38 * 38 * 2)); CK(cudaMemset(dw, 0, 512 * 256 * 9 * 2));
  if (perf[0].memory) CK(cudaMalloc(&ws, perf[0].memory));
  const float one = 1, zero = 0;
  CD(cudnnConvolutionForward(h, &one, x, dx, w, dw, c, perf[0].algo, ws, perf[0].memory, &zero, y, dy));
  printf("cuDNN algorithm %d, workspace %zu\n", int(perf[0].algo), perf[0].memory);
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

// argv: actions in order, the graph timed after each: H (a conv through a new cuDNN handle),
// h (a conv through the last handle), k (cluster launch), m (200 KiB dynamic shared memory),
// v (carveout 100 %), r (1024 threads, heavy registers), o (cooperative launch).
int main(int argc, char** argv) {
  const int n = 1 << 18;
  float *a, *b; CK(cudaMalloc(&a, 64 * n * sizeof(float))); CK(cudaMalloc(&b, 64 * n * sizeof(float)));
  CK(cudaMemset(a, 0, 64 * n * sizeof(float))); CK(cudaMemset(b, 0, 64 * n * sizeof(float)));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g; cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < 600; ++i) work<<<(i % 3 + 1) * 66, 256, 0, s>>>(a + (i % 64) * n, b + ((i + 7) % 64) * n, n);
  CK(cudaStreamEndCapture(s, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
  std::printf("%-10s %.4f ms\n", "start", time_graph(ge, s));
  for (int k = 1; k < argc; ++k) {
    const char c = argv[k][0];
    if (c == 'H') cudnn_conv(s, true, true);
    if (c == 'h') cudnn_conv(s, true, false);
    if (c == 'k') clustered<<<2, 32, 0, s>>>(a);
    if (c == 'm') { CK(cudaFuncSetAttribute(bigshared, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 << 10)); bigshared<<<1, 256, 200 << 10, s>>>(a); }
    if (c == 'v') { CK(cudaFuncSetAttribute(carve, cudaFuncAttributePreferredSharedMemoryCarveout, 100)); carve<<<132, 32, 0, s>>>(a); }
    if (c == 'r') heavy<<<132, 1024, 0, s>>>(a);
    if (c == 'o') { void* args[] = {&a}; CK(cudaLaunchCooperativeKernel((void*)coop, dim3(132), dim3(64), args, 0, s)); }
    CK(cudaGetLastError()); CK(cudaStreamSynchronize(s));
    const float t1 = time_graph(ge, s), t2 = time_graph(ge, s);
    std::printf("after %-4s %.4f / %.4f ms\n", argv[k], t1, t2);
  }
  return 0;
}
