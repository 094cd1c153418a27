// run_on_threads: one body run for indices 0..n-1 at once, index 0 on the calling thread
// and each other index on a thread of its own (std::thread, unplaced), all joined before
// it returns. For the CUDA engine's loads and first calls at open, which split their items
// over threads that each take a handle of their own.
#pragma once

#include <functional>
#include <vector>

#include "runtime/core/status.h"

namespace dlr {

struct ThreadFan {
  std::vector<Status> status;  // per index: what its body returned (indices not started: ok)
  std::vector<char> started;   // per index: 0 where no thread could be started (its body never ran)
  int ran() const;             // how many bodies ran
};

// Runs body(t) for every t in [0, n) (n >= 1), the helpers started first. A helper that
// cannot be started is left out (started[t] = 0) for the caller to cover; body(0) always
// runs. Blocks until every body has returned.
ThreadFan run_on_threads(int n, const std::function<Status(int)>& body);

}  // namespace dlr
