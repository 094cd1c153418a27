// CudaContextInit's state (runtime/cuda/context_init.h), for the CUDA side only.
#pragma once

#include <thread>

#include "kernels/cuda/cuda_handles.h"
#include "runtime/cuda/context_init.h"

namespace dlr {

struct CudaContextInit::Impl {
  int device = 0;
  std::thread thread;  // joined by wait() or the destructor
  // Written by the thread, read after the join:
  Status status;
  cuda::CudnnHandle cudnn;  // created on `device`; moved out by take_cudnn()
  double context_ms = 0;
  double cudnn_ms = 0;
  double prime_ms = 0;   // the tiny convolution's setup
  bool primed = false;   // it succeeded
  double waited_ms = 0;  // written by wait() on the caller's thread
};

namespace cuda {
// The helper's cuDNN handle when `init` is non-null, created for `device` and
// successful (joins first); else an empty handle (the engine then creates its own).
CudnnHandle take_cudnn(CudaContextInit* init, int device);
}  // namespace cuda

}  // namespace dlr
