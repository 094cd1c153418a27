// The latency lower bound of lower_bound.h: max over layers, min over ring sizes.
#include "runtime/streaming/lower_bound.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

namespace dlr {
namespace {

// The bound for one ring size P (resident budget r = B - P); +inf when a blob larger
// than P cannot be resident within r. bw: bytes per ms.
double bound_at(const std::vector<int64_t>& w, const std::vector<double>& t, const std::vector<int64_t>& room,
                const std::vector<char>& whole, bool copies_before, int64_t pool, int64_t resident_budget, double bw, int* binding) {
  const size_t n = w.size();
  // Blobs larger than the ring cannot stream through it: they are resident, unless the
  // plan stages them whole (WeightBlob::arena_offset) and the idle bytes while their
  // layer runs hold them.
  std::vector<double> s(n);  // streamable bytes per layer
  double forced = 0;
  for (size_t i = 0; i < n; ++i) {
    if (w[i] > pool && !(whole[i] && w[i] <= pool + room[i])) {
      forced += double(w[i]);
      s[i] = 0;
    } else {
      s[i] = double(w[i]);
    }
  }
  const double r = double(resident_budget) - forced;
  if (r < 0) return std::numeric_limits<double>::infinity();
  std::vector<double> pre_s(n + 1, 0), pre_t(n + 1, 0);  // sums over [0, i)
  for (size_t i = 0; i < n; ++i) {
    pre_s[i + 1] = pre_s[i] + s[i];
    pre_t[i + 1] = pre_t[i] + t[i];
  }
  const double total_s = pre_s[n], total_t = pre_t[n];
  // The kernels that follow the last copy: at least those from the last layer with a
  // streamable blob on (the last streamed blob's reader is that layer or earlier).
  double c_tail = 0;
  for (size_t i = n; i-- > 0;)
    if (s[i] > 0) {
      c_tail = total_t - pre_t[i];
      break;
    }
  double best = total_t;
  *binding = -1;
  for (size_t k = 0; k < n; ++k) {
    const double b = std::min(s[k], r);  // resident bytes of layer k's own blob help both terms: first
    const double rem = r - b;
    const double x1 = pre_s[k + 1] - b;        // streamed bytes that must land before layer k starts
    const double x2 = total_s - pre_s[k] - b;  // streamed bytes of layers >= k
    const double c1 = pre_t[k], c2 = total_t - pre_t[k + 1];  // kernels before and after layer k
    const double before = pre_s[k], after = total_s - pre_s[k + 1];  // bytes resident placement can still reduce
    // Up to a ring of bytes may have landed before the inference (prefetched, or copied
    // under the previous inference's tail): the rest is copied under the kernels before k.
    const double before_inference = copies_before ? double(pool) : 0.0;
    const double a_need = std::max(0.0, x1 - before_inference - c1 * bw);
    const double held = double(pool) + double(room[k]);  // the ring and the idle bytes while layer k runs
    const double c_need = x2 <= held ? 0.0 : std::max(0.0, x2 - held - (c2 - c_tail) * bw);
    const double a_use = std::min(a_need, before), c_use = std::min(c_need, after);
    const double excess = (a_need - a_use) + (c_need - c_use) + std::max(0.0, a_use + c_use - rem);
    const double v = total_t + excess / bw;  // c1 + t_k + c2 + what copies add
    if (v > best) {
      best = v;
      *binding = int(k);
    }
  }
  return best;
}

// The pool-aware bound: every blob streamed in execution order through a pool of
// `pool` + room[m] bytes while step m runs, taken as a fluid (a byte's space is taken
// when it is copied and given back when its reader ends; copies at bw, back to back; a
// step starts when its blob has landed and the step before has ended), everything as
// early as it can be. While step m runs, the bytes copied so far less those of steps
// before m fit pool + room[m]; copies made then are held through every later step up to
// their reader, so the copy limit while m runs is min over m' >= m of
// (W_<m' + pool + room[m']). That limit grows with m, so greedy is optimal here: a
// schedule ahead in copies is ahead in steps and faces a limit no lower. +inf when a
// blob exceeds its step's pool.
double fluid_pool_ms(const std::vector<int64_t>& w, const std::vector<double>& t, const std::vector<int64_t>& room,
                     int64_t pool, double bw) {
  const size_t n = w.size();
  std::vector<double> limit(n + 1, std::numeric_limits<double>::infinity());  // suffix minima, per running step
  double before = 0;  // W_<m
  std::vector<double> w_before(n);
  for (size_t m = 0; m < n; ++m) {
    if (w[m] > pool + room[m]) return std::numeric_limits<double>::infinity();
    w_before[m] = before;
    before += double(w[m]);
  }
  for (size_t m = n; m-- > 0;) limit[m] = std::min(limit[m + 1], w_before[m] + double(pool) + double(room[m]));
  std::vector<double> end(n, 0.0);
  double copied = 0, copy_t = 0, prev_end = 0, need = 0;
  size_t ended = 0;  // steps whose end is <= copy_t, in order (ends grow with the index)
  for (size_t j = 0; j < n; ++j) {
    need += double(w[j]);
    while (copied < need) {
      while (ended < j && end[ended] <= copy_t) ++ended;
      if (limit[ended] <= copied) {  // the pool is full until the running step ends
        copy_t = end[ended];
        continue;
      }
      const double to = std::min(need, limit[ended]);
      copy_t += (to - copied) / bw;
      copied = to;
    }
    const double start = std::max(prev_end, w[j] > 0 ? copy_t : 0.0);
    end[j] = prev_end = start + t[j];
  }
  return prev_end;
}

// The union of [offset, offset + bytes) over `spans`, in bytes.
int64_t union_bytes(std::vector<std::pair<int64_t, int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  int64_t covered = 0, reach = std::numeric_limits<int64_t>::min();
  for (const auto& [lo, hi] : spans) {
    if (hi <= reach) continue;
    covered += hi - std::max(lo, reach);
    reach = hi;
  }
  return covered;
}

}  // namespace

std::vector<int64_t> arena_idle_bytes(const ExecutionPlan& plan) {
  std::vector<int64_t> idle(plan.steps.size(), 0);
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    std::vector<std::pair<int64_t, int64_t>> live;
    for (const Buffer& b : plan.buffers)
      if (b.first_step <= int(k) && int(k) <= b.last_step && b.bytes > 0) live.emplace_back(b.offset, b.offset + b.bytes);
    idle[k] = std::max<int64_t>(0, plan.arena_bytes - union_bytes(std::move(live)));
  }
  return idle;
}

std::string LatencyBound::to_text() const {
  char buf[512];
  if (pool_bytes == 0) {
    std::snprintf(buf, sizeof buf, "lower bound: %.3f ms (%s: the kernels alone)", ms,
                  budget_bytes >= total_bytes ? "every weight resident" : "no ring fits this budget");
  } else {
    std::snprintf(buf, sizeof buf,
                  "lower bound: %.3f ms = %.3f x the kernels' %.3f ms: no resident set or schedule within %.2f MiB, %s, "
                  "is predicted faster (best case: a %.2f MiB ring, >= %.2f MiB copied at %.1f GB/s%s)",
                  ms, compute_ms > 0 ? ms / compute_ms : 0.0, compute_ms, double(budget_bytes) / (1 << 20),
                  staging ? "blobs staged in idle activation bytes or not" : "every streamed byte through the ring",
                  double(pool_bytes) / (1 << 20), double(min_streamed_bytes) / (1 << 20), peak_gbps,
                  binding_layer >= 0 ? (", binding at layer " + std::to_string(binding_layer)).c_str() : "");
  }
  std::string text = buf;
  if (pool_aware) text += "; binding: the pool-aware bound (every layer's copies through the budget as a fluid pool)";
  return text + expansions_note(expanded_steps);
}

std::string expansions_note(int n) {
  if (n <= 0) return std::string();
  return "; the kernel times count " + std::to_string(n) +
         " int8 expansions on the compute stream, which the CUDA engine runs beside it: high by up to their time";
}

Expected<LatencyBound> latency_lower_bound(const ExecutionPlan& plan, const std::vector<double>& layer_ms,
                                           const CopyProfile& profile, int64_t budget_bytes, int64_t granularity,
                                           const BoundModel& model) {
  const std::vector<int64_t>& staging_room = model.staging_room;
  if (layer_ms.size() != plan.steps.size())
    return invalid_argument("lower bound: " + std::to_string(layer_ms.size()) + " kernel times for " +
                            std::to_string(plan.steps.size()) + " steps");
  if (budget_bytes <= 0) return invalid_argument("lower bound: the budget must be > 0 bytes");
  if (granularity <= 0) return invalid_argument("lower bound: the ring granularity must be > 0 bytes");
  if (!staging_room.empty() && staging_room.size() != plan.steps.size())
    return invalid_argument("lower bound: " + std::to_string(staging_room.size()) + " staging rooms for " +
                            std::to_string(plan.steps.size()) + " steps");
  for (int64_t r : staging_room)
    if (r < 0) return invalid_argument("lower bound: a staging room of " + std::to_string(r) + " bytes");
  if (!model.expand_ms.empty() && model.expand_ms.size() != plan.steps.size())
    return invalid_argument("lower bound: " + std::to_string(model.expand_ms.size()) + " expansion times for " +
                            std::to_string(plan.steps.size()) + " steps");
  const std::vector<int64_t> room = staging_room.empty() ? std::vector<int64_t>(plan.steps.size(), 0) : staging_room;
  const double peak = profile.peak_gbps();
  if (!(peak > 0)) return invalid_argument("lower bound: copy profile '" + profile.name + "' has no bandwidth");
  const size_t n = plan.steps.size();
  std::vector<int64_t> w(n, 0);
  std::vector<char> whole(n, 0);  // the step's blob is staged whole
  std::vector<double> t(n, 0);
  const bool apart = model.expand_ms.size() == n;
  int64_t total = 0;
  double compute = 0;
  for (size_t i = 0; i < n; ++i) {
    const int b = plan.steps[i].weight;
    if (b >= 0) w[i] = plan.weights[size_t(b)].bytes;
    if (b >= 0) whole[i] = plan.weights[size_t(b)].arena_offset >= 0;
    total += w[i];
    // A no-op step (a route without copies) reaches no GPU: no time, as in simulate().
    const Step& st = plan.steps[i];
    t[i] = st.no_op && st.copies.empty() ? 0.0 : std::max(0.0, layer_ms[i] - (apart ? model.expand_ms[i] : 0.0));
    compute += t[i];
  }
  LatencyBound lb;
  lb.compute_ms = compute;
  lb.peak_gbps = peak;
  lb.budget_bytes = budget_bytes;
  lb.total_bytes = total;
  lb.staging = std::any_of(room.begin(), room.end(), [](int64_t r) { return r > 0; });
  lb.expanded_steps = apart ? 0 : plan.expanded_steps();
  lb.ms = compute;
  if (budget_bytes >= total) return lb;  // everything resident: the kernels alone
  const double bw = peak * 1e6;          // bytes per ms
  double best = std::numeric_limits<double>::infinity();
  for (int64_t pool = granularity; pool <= budget_bytes; pool += granularity) {
    int binding = -1;
    const double v = bound_at(w, t, room, whole, model.copies_before, pool, budget_bytes - pool, bw, &binding);
    if (v < best) {
      best = v;
      lb.pool_bytes = pool;
      lb.binding_layer = binding;
      lb.min_streamed_bytes = std::max<int64_t>(0, total - (budget_bytes - pool));
    }
  }
  // No ring fits (the budget is below one granule or every ring leaves a blob that
  // fits neither): no streamed plan exists; report the kernels' sum (still a bound).
  if (best < std::numeric_limits<double>::infinity()) lb.ms = std::max(compute, best);
  // The pool-aware bound (lower_bound.h): a plan keeping r bytes resident and p bytes
  // prefetched before the inference (r + p <= B) becomes a fluid schedule through a pool
  // of B by copying those bytes first, which takes (r + p) / bw: T >= fluid(B) - B / bw.
  const double fluid = fluid_pool_ms(w, t, room, budget_bytes, bw) - double(budget_bytes) / bw;
  if (fluid < std::numeric_limits<double>::infinity() && fluid > lb.ms) {
    lb.ms = fluid;
    lb.pool_aware = true;
  }
  return lb;
}

}  // namespace dlr
