#include "runtime/warm_split.h"

#include <algorithm>

namespace dlr {
namespace {

// The slice each of `n` threads gets of `workspace` bytes.
int64_t slice_of(int64_t workspace, int n, int64_t align) { return workspace / n / align * align; }

// How many items fit a slice when `n` threads share the workspace.
int fitting(const std::vector<WarmItem>& items, int64_t slice) {
  return int(std::count_if(items.begin(), items.end(), [&](const WarmItem& w) { return w.workspace <= slice; }));
}

}  // namespace

WarmSplit split_warm_up(const std::vector<WarmItem>& items, int threads, int64_t workspace_bytes, int64_t align) {
  // The most threads (up to the request) for which every thread has an item to run.
  int n = std::max(1, std::min(threads, int(items.size())));
  while (n > 1 && fitting(items, slice_of(workspace_bytes, n, align)) < n) --n;
  WarmSplit s;
  s.slice_bytes = n == 1 ? workspace_bytes : slice_of(workspace_bytes, n, align);
  s.threads.resize(size_t(n));
  int next = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].workspace > s.slice_bytes) {
      s.after.push_back(int(i));
      continue;
    }
    s.threads[size_t(next)].push_back(int(i));
    next = (next + 1) % n;
  }
  return s;
}

}  // namespace dlr
