// plan_residency: which blobs stay resident under a device weight budget
// (residency.h has the strategies, docs/streaming.md section 6 the reasoning).
#include "runtime/streaming/residency.h"
#include "runtime/core/units.h"
#include "runtime/streaming/tail_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>

namespace dlr {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string fmt_ms(const char* name, double ms) {
  char buf[64];
  if (std::isfinite(ms) && ms > 0)
    std::snprintf(buf, sizeof(buf), "%s %.3f ms", name, ms);
  else
    std::snprintf(buf, sizeof(buf), "%s -", name);
  return buf;
}

int64_t resident_bytes(const ExecutionPlan& plan, const std::vector<char>& resident) {
  int64_t bytes = 0;
  for (size_t b = 0; b < resident.size(); ++b)
    if (resident[b]) bytes += plan.weights[b].bytes;
  return bytes;
}

// Simulated latency of the plan with `resident`; kInf when it has no plan. Two modes:
//  - ring_bytes == 0 (plan_residency): the budget is options.budget_bytes, the pool what
//    it leaves beside the resident bytes; kInf when the budget cannot hold the resident
//    bytes and the rest's minimal pool.
//  - ring_bytes > 0 (plan_residency_in_ring): the budget is ring_bytes + the resident
//    bytes; kInf for a set above room_bytes (no simulation, not counted) or a plan other
//    than a ring of exactly ring_bytes (the rest's minimal ring above it, or a rest the
//    ring would hold whole).
class Evaluator {
 public:
  Evaluator(const ExecutionPlan& plan, const CopyProfile& profile, const StreamOptions& options,
            const std::vector<double>& layer_ms, const SimOptions& sim, int64_t ring_bytes = 0, int64_t room_bytes = 0)
      : m_plan(plan), m_profile(profile), m_options(options), m_layer_ms(layer_ms), m_sim(sim), m_ring(ring_bytes),
        m_room(room_bytes) {
    m_options.unit_ends.clear();
    m_sim.check = false;
  }
  double operator()(const std::vector<char>& resident, StreamPlan* out = nullptr) {
    StreamOptions o = m_options;
    if (m_ring > 0) {
      const int64_t bytes = resident_bytes(m_plan, resident);
      if (bytes > m_room) return kInf;
      o.budget_bytes = m_ring + bytes;
    }
    ++m_count;
    o.resident = resident;
    Expected<StreamPlan> s = plan_streaming(m_plan, m_profile, o);
    if (!s.ok()) return kInf;
    if (m_ring > 0 && (s->layout != PoolLayout::kRing || s->resident || s->pool_bytes != m_ring)) return kInf;
    const double ms = planned_latency(m_plan, *s, m_profile, m_layer_ms, m_sim);
    if (out) *out = std::move(s).value();
    return ms;
  }
  int count() const { return m_count; }

 private:
  const ExecutionPlan& m_plan;
  const CopyProfile& m_profile;
  StreamOptions m_options;
  const std::vector<double>& m_layer_ms;
  SimOptions m_sim;
  int64_t m_ring, m_room;
  int m_count = 0;
};

// Per blob: how long compute stalled before its layer in `sim` (an all-streamed
// simulation), per byte of the blob.
std::vector<double> stall_per_byte(const ExecutionPlan& plan, const SimResult& sim) {
  const size_t n = plan.weights.size();
  std::vector<double> stall(n, 0.0);
  for (size_t b = 0; b < n; ++b) {
    const int l = plan.weights[b].step;
    double prev_end = 0;
    for (int k = l - 1; k >= 0; --k)
      if (sim.layer_end_ms[size_t(k)] > 0) {
        prev_end = sim.layer_end_ms[size_t(k)];
        break;
      }
    stall[b] = std::max(0.0, sim.layer_start_ms[size_t(l)] - prev_end) / double(plan.weights[b].bytes);
  }
  return stall;
}

// The sweep's four fill orders of the blobs: earliest first (the inference starts
// without waiting), latest first (little compute is left after the last copy), largest
// first (kLargestFirst), most stall per byte first.
constexpr size_t kLargestFirst = 2;
std::vector<std::vector<int>> fill_orders(const ExecutionPlan& plan, const std::vector<double>& stall) {
  const size_t n = plan.weights.size();
  std::vector<std::vector<int>> orders(4, std::vector<int>(n));
  for (auto& o : orders) std::iota(o.begin(), o.end(), 0);
  std::reverse(orders[1].begin(), orders[1].end());
  std::stable_sort(orders[2].begin(), orders[2].end(),
                   [&](int a, int b) { return plan.weights[size_t(a)].bytes > plan.weights[size_t(b)].bytes; });
  std::stable_sort(orders[3].begin(), orders[3].end(), [&](int a, int b) { return stall[size_t(a)] > stall[size_t(b)]; });
  return orders;
}

// The blobs of `order` made resident while they fit `room` bytes (each that still fits,
// in turn), at least one blob left streaming; empty when none fits.
std::vector<char> fill_room(const ExecutionPlan& plan, const std::vector<int>& order, int64_t room) {
  const size_t n = plan.weights.size();
  std::vector<char> cand(n, 0);
  int64_t used = 0;
  size_t kept = 0;
  for (int b : order) {
    const int64_t bytes = plan.weights[size_t(b)].bytes;
    if (used + bytes > room || kept + 1 == n) continue;
    cand[size_t(b)] = 1;
    used += bytes;
    ++kept;
  }
  if (kept == 0) cand.clear();
  return cand;
}

// The greedy's set `cur` replaces the best so far when it is predicted no slower.
void keep_greedy(Evaluator& eval, const std::vector<char>& cur, ResidencyResult* r, std::vector<char>* best,
                 double* best_ms, StreamPlan* best_plan) {
  StreamPlan g_plan;
  r->greedy_ms = eval(cur, &g_plan);
  if (r->greedy_ms <= *best_ms) {
    *best = cur;
    *best_ms = r->greedy_ms;
    *best_plan = std::move(g_plan);
    r->chosen = Residency::kGreedy;
  }
}

// Lazy greedy from `cur` (predicted *cur_ms, finite): repeatedly make resident the blob
// whose move saves the most predicted time per byte (eval decides what fits) until no
// move helps, eval has run max_simulations times or one blob is left streaming. A
// max-heap of (gain per byte, blob, version of the resident set the gain was measured on).
void lazy_greedy(const ExecutionPlan& plan, Evaluator& eval, int max_simulations, std::vector<char>* cur,
                 double* cur_ms) {
  const size_t n = plan.weights.size();
  int version = 0;
  using Item = std::tuple<double, int, int>;
  std::priority_queue<Item> heap;
  size_t kept = 0;
  for (size_t b = 0; b < n; ++b) {
    if ((*cur)[b]) {
      ++kept;
      continue;
    }
    heap.push({kInf, int(b), -1});  // unmeasured: look at each once
  }
  while (!heap.empty() && eval.count() < max_simulations && kept + 1 < n) {
    auto [gain, b, ver] = heap.top();
    heap.pop();
    if ((*cur)[size_t(b)]) continue;
    if (ver == version) {
      if (gain <= 0) break;  // the best measured move does not help
      (*cur)[size_t(b)] = 1;
      *cur_ms -= gain * double(plan.weights[size_t(b)].bytes);
      ++version;
      ++kept;
      continue;
    }
    (*cur)[size_t(b)] = 1;
    const double ms = eval(*cur);
    (*cur)[size_t(b)] = 0;
    if (!std::isfinite(ms)) continue;  // does not fit beside the rest's minimal pool (never will: the set only grows)
    const double g = (*cur_ms - ms) / double(plan.weights[size_t(b)].bytes);
    if (g > 0) heap.push({g, b, version});
  }
}

// plan_residency's one line: "<what>: <strategy>: k of n blobs resident (<resident>)
// + <pool>, predicted ... (none, largest-late, greedy; simulations)".
std::string how_line(const char* what, const ResidencyResult& r, const std::string& resident,
                     const std::string& pool) {
  int count = 0;
  for (char c : r.resident) count += c != 0;
  char line[320];
  std::snprintf(line, sizeof(line), "%s: %s: %d of %zu blobs resident (%s) + %s, ", what, residency_name(r.chosen),
                count, r.resident.size(), resident.c_str(), pool.c_str());
  return line + fmt_ms("predicted", r.predicted_ms) + " (" + fmt_ms("none", r.none_ms) + ", " +
         fmt_ms("largest-late", r.largest_late_ms) + ", " + fmt_ms("greedy", r.greedy_ms) + "; " +
         std::to_string(r.simulations) + " simulations)";
}

// The largest blobs resident (later ones first among equal sizes), each kept only if
// the rest still gets its minimal pool within the budget.
std::vector<char> largest_late(const ExecutionPlan& plan, const CopyProfile& profile, const StreamOptions& options) {
  const size_t n = plan.weights.size();
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const int64_t x = plan.weights[size_t(a)].bytes, y = plan.weights[size_t(b)].bytes;
    return x != y ? x > y : a > b;
  });
  std::vector<char> resident(n, 0);
  StreamOptions o = options;
  o.unit_ends.clear();
  size_t kept = 0;
  for (int b : order) {
    if (kept + 1 == n) break;  // at least one blob streams
    resident[size_t(b)] = 1;
    o.resident = resident;
    if (plan_streaming(plan, profile, o).ok()) {
      ++kept;
    } else {
      resident[size_t(b)] = 0;
    }
  }
  return resident;
}

}  // namespace

Expected<ResidencyResult> plan_residency(const ExecutionPlan& plan, const CopyProfile& profile,
                                         const StreamOptions& options, const std::vector<double>& layer_ms,
                                         const ResidencyOptions& residency) {
  if (layer_ms.size() != plan.steps.size())
    return invalid_argument("residency: " + std::to_string(layer_ms.size()) + " layer times for " +
                            std::to_string(plan.steps.size()) + " layers");
  const size_t n = plan.weights.size();
  StreamOptions base = options;
  base.resident.clear();
  base.unit_ends.clear();
  ResidencyResult r;
  r.resident.assign(n, 0);
  Evaluator eval(plan, profile, base, layer_ms, residency.sim);
  // The all-streamed plan: its errors (budget below the minimum, ...) are the caller's.
  DLR_ASSIGN_OR_RETURN(r.plan, plan_streaming(plan, profile, base));
  const bool ring = r.plan.layout == PoolLayout::kRing && !r.plan.resident;
  r.none_ms = r.predicted_ms = r.plan.resident ? 0.0 : eval(r.resident);
  r.chosen = Residency::kNone;
  if (!ring || residency.strategy == Residency::kNone || n < 2) {
    r.simulations = eval.count();
    r.how = "residency: none (" + std::string(!ring ? "no ring pool" : "not asked") + "), " + fmt_ms("predicted", r.none_ms);
    return r;
  }

  // The baseline heuristic.
  const std::vector<char> ll = largest_late(plan, profile, base);
  StreamPlan ll_plan;
  r.largest_late_ms = eval(ll, &ll_plan);
  std::vector<char> best = r.resident;
  double best_ms = r.none_ms;
  StreamPlan best_plan = r.plan;
  if (r.largest_late_ms < best_ms) {
    best = ll;
    best_ms = r.largest_late_ms;
    best_plan = ll_plan;
    r.chosen = Residency::kLargestLate;
  }

  if (residency.strategy == Residency::kGreedy) {
    // 1. A sweep: pool sizes from the streamed set's minimum up to the budget, and for
    //    each the rest of the budget filled with resident blobs in four orders (earliest
    //    first: the inference starts without waiting; latest first: little compute is
    //    left after the last copy; largest first; most stall per byte in the
    //    all-streamed simulation first). Each candidate is simulated.
    const int64_t budget = r.plan.pool_bytes;  // all-streamed: the budget in whole mapping units
    const int64_t gran = std::max<int64_t>(base.ring_granularity, 256);
    SimOptions quiet = residency.sim;
    quiet.check = false;
    const std::vector<std::vector<int>> orders =
        fill_orders(plan, stall_per_byte(plan, simulate(plan, r.plan, profile, layer_ms, quiet)));
    constexpr int kPoolSteps = 16;
    const int64_t lo = r.plan.minimal_pool_bytes > 0 ? r.plan.minimal_pool_bytes : gran;
    // Below the all-streamed minimum too: with its largest blobs resident, the rest
    // needs a smaller ring.
    std::vector<int64_t> pools = {lo / 2 / gran * gran, lo * 3 / 4 / gran * gran};
    for (int i = 0; i <= kPoolSteps; ++i) pools.push_back((lo + (budget - lo) * i / kPoolSteps) / gran * gran);
    std::sort(pools.begin(), pools.end());
    pools.erase(std::unique(pools.begin(), pools.end()), pools.end());
    pools.erase(std::remove_if(pools.begin(), pools.end(), [&](int64_t p) { return p < gran; }), pools.end());
    std::vector<char> cur = best;
    double cur_ms = best_ms;
    for (int64_t pool : pools) {
      const int64_t room = options.budget_bytes - pool;  // for resident blobs
      if (room <= 0) continue;
      for (const std::vector<int>& order : orders) {
        std::vector<char> cand = fill_room(plan, order, room);
        if (cand.empty()) continue;
        const double ms = eval(cand);
        if (ms < cur_ms) {
          cur_ms = ms;
          cur = std::move(cand);
        }
      }
    }
    // 2. Lazy greedy from the best of the sweep (the pool shrinking to what the budget
    //    leaves).
    lazy_greedy(plan, eval, residency.max_simulations, &cur, &cur_ms);
    keep_greedy(eval, cur, &r, &best, &best_ms, &best_plan);
  }
  r.resident = std::move(best);
  r.plan = std::move(best_plan);
  r.predicted_ms = best_ms;
  r.simulations = eval.count();
  r.how = how_line("residency", r, mib_text(r.plan.resident_bytes), mib_text(r.plan.pool_bytes) + " pool");
  return r;
}

Expected<ResidencyResult> plan_residency_in_ring(const ExecutionPlan& plan, const CopyProfile& profile,
                                                 const StreamOptions& options, int64_t ring_bytes, int64_t room_bytes,
                                                 const std::vector<double>& layer_ms,
                                                 const ResidencyOptions& residency) {
  if (layer_ms.size() != plan.steps.size())
    return invalid_argument("residency in a shared ring: " + std::to_string(layer_ms.size()) + " layer times for " +
                            std::to_string(plan.steps.size()) + " layers");
  const int64_t gran = options.ring_granularity;
  if (gran <= 0)
    return invalid_argument("residency in a shared ring: the ring needs a mapping granularity (CUDA virtual memory "
                            "management)");
  if (ring_bytes <= 0 || ring_bytes % gran != 0)
    return invalid_argument("residency in a shared ring: a ring of " + std::to_string(ring_bytes) +
                            " bytes is not a positive multiple of the " + mib_text(gran) + " mapping granularity");
  const int64_t total = plan.weight_bytes();
  if (room_bytes < 0 || room_bytes >= total)
    return invalid_argument("residency in a shared ring: a room of " + mib_text(room_bytes) + " for " + mib_text(total) +
                            " of weights (every blob resident is plain residency, not planned here)");
  const size_t n = plan.weights.size();
  auto none_fits = [&](const std::string& why) {
    return out_of_memory("residency in a shared ring: no resident set within a room of " + mib_text(room_bytes) +
                         " lets the rest stream through a ring of " + mib_text(ring_bytes) + " (" + why + ")");
  };
  // Without never_resident the streamed rest must exceed the ring (a rest the ring holds
  // whole is planned resident, which a shared ring cannot keep); with it, any rest streams.
  const int64_t room = std::min(room_bytes, options.never_resident ? total - 1 : total - ring_bytes - 1);
  if (room < 0) return none_fits("the model's " + mib_text(total) + " of weights fit in the ring");
  StreamOptions base = options;
  base.resident.clear();
  base.unit_ends.clear();
  base.layout = PoolLayout::kRing;
  base.budget_bytes = ring_bytes;
  Evaluator eval(plan, profile, base, layer_ms, residency.sim, ring_bytes, room);
  ResidencyResult r;
  r.resident.assign(n, 0);
  r.chosen = Residency::kNone;
  std::vector<char> best = r.resident;
  StreamPlan best_plan;
  double best_ms = eval(best, &best_plan);
  if (std::isfinite(best_ms)) r.none_ms = best_ms;

  if (residency.strategy != Residency::kNone && n >= 2) {
    // The stall order from the all-streamed simulation at this ring, or at the minimal
    // ring where this one is below it.
    SimOptions quiet = residency.sim;
    quiet.check = false;
    std::vector<double> stall(n, 0.0);
    if (std::isfinite(best_ms)) {
      stall = stall_per_byte(plan, simulate(plan, best_plan, profile, layer_ms, quiet));
    } else {
      StreamOptions minimal = base;
      minimal.budget_bytes = 0;
      Expected<StreamPlan> m = plan_streaming(plan, profile, minimal);
      if (m.ok() && !m->resident) stall = stall_per_byte(plan, simulate(plan, *m, profile, layer_ms, quiet));
    }
    // 1. The room filled in the sweep's four orders (the ring is fixed: no pool sweep).
    const std::vector<std::vector<int>> orders = fill_orders(plan, stall);
    std::vector<char> cur = best;
    double cur_ms = best_ms;
    for (size_t k = 0; k < orders.size(); ++k) {
      if (residency.strategy == Residency::kLargestLate && k != kLargestFirst) continue;
      std::vector<char> cand = fill_room(plan, orders[k], room);
      if (cand.empty()) continue;
      StreamPlan p;
      const double ms = eval(cand, &p);
      if (k == kLargestFirst && std::isfinite(ms)) {
        r.largest_late_ms = ms;
        if (ms < best_ms) {
          best = cand;
          best_ms = ms;
          best_plan = std::move(p);
          r.chosen = Residency::kLargestLate;
        }
      }
      if (ms < cur_ms) {
        cur_ms = ms;
        cur = std::move(cand);
      }
    }
    // 2. Lazy greedy from the best fill: tops up what the room has left.
    if (residency.strategy == Residency::kGreedy && std::isfinite(cur_ms)) {
      lazy_greedy(plan, eval, residency.max_simulations, &cur, &cur_ms);
      keep_greedy(eval, cur, &r, &best, &best_ms, &best_plan);
    }
  }
  r.simulations = eval.count();
  if (!std::isfinite(best_ms)) {
    int64_t largest = 0;
    for (const WeightBlob& w : plan.weights) largest = std::max(largest, w.bytes);
    return none_fits("largest blob " + mib_text(largest));
  }
  r.resident = std::move(best);
  r.plan = std::move(best_plan);
  r.predicted_ms = best_ms;
  r.how = how_line("residency in a shared ring", r, mib_text(r.plan.resident_bytes) + " of a " + mib_text(room_bytes) + " room",
                   mib_text(ring_bytes) + " ring");
  return r;
}

}  // namespace dlr
