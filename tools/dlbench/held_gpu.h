// The "held" condition of dlbench --startup-gpu: a process of `dlbench --hold-gpu`
// (startup.h) keeps a CUDA context on GPU 0 while a HeldGpu lives, as another detector
// or a daemon keeps the GPU started. Without one, and without the driver's persistence
// mode, the driver starts the GPU for every process that is the only one using it.
#pragma once

#include <sys/types.h>

#include <memory>

#include "runtime/core/status.h"

namespace dlr::tools {

class HeldGpu {
 public:
  // Runs this executable (/proc/self/exe) with --hold-gpu and returns once it printed
  // "held"; an error when it ended first (no usable GPU: its message is on stderr, which
  // it shares with this process). Its standard input is a pipe that this object owns.
  static Expected<std::unique_ptr<HeldGpu>> start();
  // Closes the pipe (the holder ends at end of input) and waits for the process.
  ~HeldGpu();
  HeldGpu(const HeldGpu&) = delete;
  HeldGpu& operator=(const HeldGpu&) = delete;

 private:
  HeldGpu(pid_t pid, int to_child) : m_pid(pid), m_to_child(to_child) {}
  pid_t m_pid;
  int m_to_child;  // write end of the holder's standard input
};

}  // namespace dlr::tools
