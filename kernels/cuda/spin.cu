// A kernel that holds a stream busy for a given time: the copy probe
// (runtime/cuda/copy_probe.cpp) fills the copy queue behind it.
#include "kernels/cuda/spin.h"

namespace dlr::cuda {
namespace {

// One thread spins until `ns` nanoseconds of %globaltimer have passed since it
// started, or (should the timer not advance) 4 cycles per requested nanosecond.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  const long long c0 = clock64();
  const long long max_cycles = static_cast<long long>(ns) * 4;
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns && clock64() - c0 < max_cycles);
}

}  // namespace

cudaError_t launch_spin(cudaStream_t stream, unsigned long long ns) {
  spin_kernel<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();
}

}  // namespace dlr::cuda
