// A one-thread kernel that spins for a given time on a stream (kernels/cuda/spin.cu),
// to hold the stream busy while copies queue behind it. Plain C++ can include this.
#pragma once

#include <cuda_runtime_api.h>

namespace dlr::cuda {

// Enqueues the spin (`ns` nanoseconds of the GPU's global timer) on `stream`;
// returns the launch error (cudaSuccess if none). Never synchronises.
cudaError_t launch_spin(cudaStream_t stream, unsigned long long ns);

}  // namespace dlr::cuda
