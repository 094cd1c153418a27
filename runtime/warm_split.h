// The kernels' warm-up at open, split among threads (docs/architecture.md, "Kernels
// loaded at open"). A CUDA engine runs each distinct convolution configuration once
// before its graph capture or first inference, so that cuDNN's and the driver's
// first-call work (the kernel's load, the plan's set-up) is done by several threads at
// once. Each thread uses a part of the engine's own workspace, so the warm-up takes no
// device memory beyond the engine's. Plain data, no CUDA.
#pragma once

#include <cstdint>
#include <vector>

namespace dlr {

struct WarmItem {
  int step = -1;          // the plan step that runs the configuration
  int64_t workspace = 0;  // bytes of workspace it needs
};

struct WarmSplit {
  // Each thread's part of the workspace, bytes (a multiple of the alignment): thread t
  // uses [t * slice_bytes, (t + 1) * slice_bytes).
  int64_t slice_bytes = 0;
  // Per thread: the items it runs, in order (indices into the items given). Thread 0 is
  // the engine's own (its handle and stream); there is at least one thread.
  std::vector<std::vector<int>> threads;
  // Items whose workspace does not fit a slice: run on thread 0 with the whole workspace
  // once every thread has finished.
  std::vector<int> after;
};

// The items dealt in turn to min(threads, items that fit a slice) threads (at least 1),
// in the order given; slice_bytes = workspace_bytes / that count, rounded down to
// `align` (a power of two). threads < 1 counts as 1.
WarmSplit split_warm_up(const std::vector<WarmItem>& items, int threads, int64_t workspace_bytes, int64_t align = 256);

}  // namespace dlr
