// The kernel that holds a stream busy while dlprobe fills the copy queue behind it.
// Built only with the CUDA backend (tools/CMakeLists.txt adds it to dlprobe).
#include <cuda_runtime.h>

namespace {

// One thread spins until `ns` nanoseconds of %globaltimer have passed since it
// started, or (should the timer not advance) 4 cycles per requested nanosecond.
__global__ void dlprobe_spin_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  const long long c0 = clock64();
  const long long max_cycles = static_cast<long long>(ns) * 4;
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns && clock64() - c0 < max_cycles);
}

}  // namespace

// Enqueues the spin on `stream`; returns the launch error (cudaSuccess if none).
extern "C" cudaError_t dlprobe_launch_spin(cudaStream_t stream, unsigned long long ns) {
  dlprobe_spin_kernel<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();
}
