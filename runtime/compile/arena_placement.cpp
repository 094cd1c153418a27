// Arena placement: greedy orders x fit rules, then seeded perturbations (see the header).
#include "runtime/compile/arena_placement.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

namespace dlr {
namespace {

bool overlaps(const Buffer& a, const Buffer& b) { return a.first_step <= b.last_step && b.first_step <= a.last_step; }

// Places buffers in `order`. First fit: the lowest offset that fits; best fit: the
// smallest gap between live-overlapping buffers that fits (else above them all).
// Writes offsets into `offsets`, returns the aligned arena size.
int64_t place_in_order(const std::vector<Buffer>& bs, const std::vector<int>& order, bool best_fit, int64_t alignment,
                       std::vector<int64_t>* offsets) {
  offsets->assign(bs.size(), 0);
  std::vector<int> placed;
  placed.reserve(bs.size());
  std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end) of placed, live-overlapping buffers
  int64_t arena = 0;
  for (int id : order) {
    const Buffer& b = bs[size_t(id)];
    busy.clear();
    for (int q : placed)
      if (overlaps(bs[size_t(q)], b)) busy.emplace_back((*offsets)[size_t(q)], (*offsets)[size_t(q)] + bs[size_t(q)].bytes);
    std::sort(busy.begin(), busy.end());
    int64_t cursor = 0, chosen = -1, chosen_gap = INT64_MAX;
    for (const auto& [begin, end] : busy) {
      if (cursor + b.bytes <= begin) {
        if (!best_fit) {
          chosen = cursor;
          break;
        }
        if (begin - cursor < chosen_gap) {
          chosen_gap = begin - cursor;
          chosen = cursor;
        }
      }
      cursor = std::max(cursor, align_up(end, alignment));
    }
    if (chosen < 0) chosen = cursor;
    (*offsets)[size_t(id)] = chosen;
    arena = std::max(arena, chosen + b.bytes);
    placed.push_back(id);
  }
  return align_up(arena, alignment);
}

// Seeded retries while above the lower bound: at most 200, fewer for large networks so
// that they cost at most ~4e7 buffer pairs in all (a placement compares every pair).
constexpr int kPerturbations = 200;
constexpr double kPerturbationPairs = 4e7;

}  // namespace

int64_t live_lower_bound(const std::vector<Buffer>& buffers, int64_t alignment) {
  // Live bytes change only where a range starts or ends: sweep the events.
  std::vector<std::pair<int, int64_t>> events;  // (step, +bytes at first_step / -bytes after last_step)
  for (const Buffer& b : buffers) {
    events.emplace_back(b.first_step, align_up(b.bytes, alignment));
    events.emplace_back(b.last_step + 1, -align_up(b.bytes, alignment));
  }
  std::sort(events.begin(), events.end());  // at one step, ends (negative) before starts
  int64_t live = 0, peak = 0;
  for (const auto& e : events) {
    live += e.second;
    peak = std::max(peak, live);
  }
  return peak;
}

int64_t place_buffers(std::vector<Buffer>* buffers, int64_t alignment) {
  const std::vector<Buffer>& bs = *buffers;
  const int64_t floor = live_lower_bound(bs, alignment);
  auto span = [&](int i) { return bs[size_t(i)].last_step - bs[size_t(i)].first_step; };
  auto bytes = [&](int i) { return bs[size_t(i)].bytes; };
  // Orders tried in turn (stable sorts of the buffer ids); the first is the planner's
  // historical order (largest first), so an arena is never larger than before.
  const std::vector<std::function<bool(int, int)>> orders = {
      [&](int a, int b) { return bytes(a) > bytes(b); },
      [&](int a, int b) { return bytes(a) != bytes(b) ? bytes(a) > bytes(b) : span(a) > span(b); },
      [&](int a, int b) { return span(a) != span(b) ? span(a) > span(b) : bytes(a) > bytes(b); },
      [&](int a, int b) { return double(bytes(a)) * (span(a) + 1) > double(bytes(b)) * (span(b) + 1); },
      [&](int a, int b) { return bs[size_t(a)].first_step < bs[size_t(b)].first_step; },
  };
  std::vector<int> ids(bs.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<int64_t> offsets, best_offsets;
  std::vector<int> best_order;
  int64_t best = INT64_MAX;
  auto attempt = [&](const std::vector<int>& order) {
    for (bool best_fit : {false, true}) {
      const int64_t arena = place_in_order(bs, order, best_fit, alignment, &offsets);
      if (arena < best) {
        best = arena;
        best_offsets = offsets;
        best_order = order;
      }
      if (best <= floor) return true;
    }
    return false;
  };
  bool done = false;
  for (const auto& less : orders) {
    std::vector<int> order = ids;
    std::stable_sort(order.begin(), order.end(), less);
    if ((done = attempt(order))) break;
  }
  // Perturb the best order: swap a few neighbours (fixed seed: deterministic plans).
  std::mt19937 rng(20261126u);
  const double pairs = double(bs.size()) * double(bs.size());
  const int tries = int(std::min<double>(kPerturbations, kPerturbationPairs / std::max(1.0, pairs)));
  for (int t = 0; !done && t < tries && bs.size() > 1; ++t) {
    std::vector<int> order = best_order;
    for (size_t i = 0; i + 1 < order.size(); ++i)
      if (rng() % 4 == 0) std::swap(order[i], order[i + 1 + rng() % std::min<size_t>(3, order.size() - i - 1)]);
    done = attempt(order);
  }
  for (size_t i = 0; i < buffers->size(); ++i) (*buffers)[i].offset = best_offsets.empty() ? 0 : best_offsets[i];
  return best == INT64_MAX ? 0 : best;
}

}  // namespace dlr
