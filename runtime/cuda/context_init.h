// Creating the CUDA context (and a cuDNN handle) on a helper thread while the caller
// parses the cfg, reads the prepared file's header and compiles the plan. Plain C++:
// the CUDA calls are in context_init.cpp, so a caller such as runtime/session.cpp needs
// no CUDA header.
//
// Threads: the constructor starts the thread; wait() and the destructor join it (the
// destructor on every path, so no thread outlives its owner). The CUDA runtime is
// thread-safe and the primary context is shared by every thread of the process, so the
// calling thread may make CUDA calls before wait(): one that needs the context then
// waits inside the runtime for the helper's creation to finish.
#pragma once

#include <memory>

#include "runtime/core/status.h"

namespace dlr {

class CudaContextInit {
 public:
  // Starts the thread: cudaSetDevice(device), cudaFree(nullptr) (the context), then
  // cudnnCreate (kept here for the engine, context_init_impl.h take_cudnn()), then the
  // set-up of one tiny convolution (CudnnConv::create: cuDNN loads its convolution
  // libraries on first use; no device memory, no kernel).
  explicit CudaContextInit(int device);
  ~CudaContextInit();  // joins; destroys a cuDNN handle no engine took
  CudaContextInit(const CudaContextInit&) = delete;
  CudaContextInit& operator=(const CudaContextInit&) = delete;

  // Joins (the first call) and returns what the helper reported: an error names the
  // CUDA or cuDNN call. Later calls return the same status without waiting.
  Status wait();
  int device() const;
  double context_ms() const;  // the helper's cudaSetDevice + cudaFree(nullptr), ms (after wait())
  double cudnn_ms() const;    // the helper's cudnnCreate, ms (after wait())
  double prime_ms() const;    // the helper's tiny convolution set-up, ms (after wait())
  double waited_ms() const;   // how long wait() blocked the caller, ms

  struct Impl;
  Impl& impl() { return *m_impl; }

 private:
  std::unique_ptr<Impl> m_impl;
};

}  // namespace dlr
