// launch_host_wait (host_wait.h): one thread polls a mapped host word, sleeping between
// polls (sm_70 and later) from 0.5 us doubling up to 32 us, so that a short wait ends
// within a microsecond or two and a long one (a read from disk: milliseconds) puts few
// PCIe reads beside the copies and the reads.
#include "kernels/cuda/host_wait.h"

namespace dlr::cuda {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void host_wait_kernel(const volatile int32_t* word, const volatile int32_t* target,
                                 volatile int32_t* timed_out, int32_t code, unsigned long long timeout_ns) {
  const int32_t want = *target;
  if (*word >= want) return;
  const unsigned long long start = global_ns();
  unsigned sleep_ns = 500;
  while (*word < want) {
    if (timeout_ns > 0 && global_ns() - start > timeout_ns) {
      if (timed_out) *timed_out = code;
      __threadfence_system();
      return;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    __nanosleep(sleep_ns);
#endif
    if (sleep_ns < 32000) sleep_ns *= 2;
  }
  // The host stored the word with release order after the bytes it announces; the
  // stream's next operations start after this kernel has ended.
  __threadfence_system();
}

}  // namespace

cudaError_t launch_host_wait(const HostWait& w, cudaStream_t stream) {
  if (w.word == nullptr || w.target == nullptr) return cudaErrorInvalidValue;
  host_wait_kernel<<<1, 1, 0, stream>>>(w.word, w.target, w.timed_out, w.code,
                                        static_cast<unsigned long long>(w.timeout_ns));
  return cudaGetLastError();
}

}  // namespace dlr::cuda
