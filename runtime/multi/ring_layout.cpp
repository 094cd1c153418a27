#include "runtime/multi/ring_layout.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "runtime/core/status.h"

namespace dlr {

std::vector<int64_t> ring_starts(const std::vector<int64_t>& stream, const std::vector<int64_t>& prefetch,
                                 int64_t ring) {
  DLR_ASSERT(ring > 0 && stream.size() == prefetch.size());
  const size_t n = stream.size();
  std::vector<int64_t> starts(n, 0);
  if (n == 0) return starts;
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    DLR_ASSERT(stream[i] >= 0 && prefetch[i] >= 0 && prefetch[i] <= ring);
    total = (total + stream[i]) % ring;
  }
  int64_t left = (ring - total) % ring;  // G: the gap the cycle needs
  // gap[i]: after stream i, before stream (i + 1) % n.
  std::vector<int64_t> gap(n, 0);
  constexpr int64_t kFree = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> slack(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t next_prefetch = prefetch[(i + 1) % n];
    slack[i] = next_prefetch == 0 ? kFree : std::max<int64_t>(0, ring - std::min(stream[i], ring) - next_prefetch);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  // Largest slack first (ties: the later pair, so that a round of one model or of equal
  // pairs keeps its gap at the wrap, as before).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return slack[a] != slack[b] ? slack[a] > slack[b] : a > b;
  });
  for (size_t i : order) {
    if (left == 0) break;
    const int64_t take = std::min(left, slack[i]);
    gap[i] += take;
    left -= take;
  }
  if (left > 0) {  // no slack holds it: after the stream whose successor prefetches least
    size_t best = n - 1;
    for (size_t i = 0; i < n; ++i)
      if (prefetch[(i + 1) % n] < prefetch[(best + 1) % n]) best = i;
    gap[best] += left;
  }
  for (size_t i = 1; i < n; ++i) starts[i] = (starts[i - 1] + stream[i - 1] + gap[i - 1]) % ring;
  return starts;
}

}  // namespace dlr
