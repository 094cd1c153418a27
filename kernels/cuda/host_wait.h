// Device work that waits for the host: a one-thread kernel that holds its stream until
// a word of mapped pinned host memory reaches a target (kernels/cuda/host_wait.cu).
// A CUDA graph that replays a whole inference waits this way for each weight read from
// storage (runtime/storage/read_pipeline.h, DeviceWait::landed) instead of the host
// enqueueing the inference read by read. Plain C++ can include this.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace dlr::cuda {

// Where the kernel reads and what it reports; every pointer is a device pointer of
// mapped pinned host memory (cudaHostGetDevicePointer), read and written with
// system-scope volatile accesses while the host writes them.
struct HostWait {
  const int32_t* word = nullptr;    // the word the host advances (never decreases while waited on)
  const int32_t* target = nullptr;  // wait until *word >= *target (read once, when the kernel starts)
  int32_t* timed_out = nullptr;     // set to `code` if the wait gave up (null: never written)
  int32_t code = 1;                 // what *timed_out receives (e.g. the read unit + 1)
  uint64_t timeout_ns = 0;          // give up after this long on the GPU's global timer (0: never)
};

// Enqueues the wait on `stream` (capturable into a graph: its parameters are fixed, the
// host changes the words between replays). The stream's later work runs once the wait
// is over, by arrival of the value or by giving up. Returns the launch error
// (cudaSuccess if none); never synchronises.
cudaError_t launch_host_wait(const HostWait& w, cudaStream_t stream);

}  // namespace dlr::cuda
