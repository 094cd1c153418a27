// plan_residency: which blobs stay resident under a device weight budget
// (residency.h has the strategies, docs/streaming.md section 4 the reasoning).
#include "runtime/streaming/residency.h"

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

// Simulated latency of the plan with `resident` under the budget; kInf when the
// budget cannot hold the resident bytes and the rest's minimal pool.
class Evaluator {
 public:
  Evaluator(const ExecutionPlan& plan, const CopyProfile& profile, const StreamOptions& options,
            const std::vector<double>& layer_ms, const SimOptions& sim)
      : m_plan(plan), m_profile(profile), m_options(options), m_layer_ms(layer_ms), m_sim(sim) {
    m_options.unit_ends.clear();
    m_sim.check = false;
  }
  double operator()(const std::vector<char>& resident, StreamPlan* out = nullptr) {
    ++m_count;
    StreamOptions o = m_options;
    o.resident = resident;
    Expected<StreamPlan> s = plan_streaming(m_plan, m_profile, o);
    if (!s.ok()) return kInf;
    const double ms = simulate(m_plan, *s, m_profile, m_layer_ms, m_sim).latency_ms;
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
  int m_count = 0;
};

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
    const SimResult none_sim = simulate(plan, r.plan, profile, layer_ms, quiet);
    std::vector<double> stall(n, 0.0);
    for (size_t b = 0; b < n; ++b) {
      const int l = plan.weights[b].layer;
      double prev_end = 0;
      for (int k = l - 1; k >= 0; --k)
        if (none_sim.layer_end_ms[size_t(k)] > 0) {
          prev_end = none_sim.layer_end_ms[size_t(k)];
          break;
        }
      stall[b] = std::max(0.0, none_sim.layer_start_ms[size_t(l)] - prev_end) / double(plan.weights[b].bytes);
    }
    std::vector<std::vector<int>> orders(4, std::vector<int>(n));
    for (auto& o : orders) std::iota(o.begin(), o.end(), 0);
    std::reverse(orders[1].begin(), orders[1].end());
    std::stable_sort(orders[2].begin(), orders[2].end(),
                     [&](int a, int b) { return plan.weights[size_t(a)].bytes > plan.weights[size_t(b)].bytes; });
    std::stable_sort(orders[3].begin(), orders[3].end(),
                     [&](int a, int b) { return stall[size_t(a)] > stall[size_t(b)]; });
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
        if (kept == 0) continue;
        const double ms = eval(cand);
        if (ms < cur_ms) {
          cur_ms = ms;
          cur = std::move(cand);
        }
      }
    }
    // 2. Lazy greedy from the best of the sweep: repeatedly make resident the blob whose
    //    move saves the most predicted time per byte (the pool shrinking to what the
    //    budget leaves) until no move helps. A max-heap of (gain per byte, blob,
    //    version of the resident set the gain was measured on).
    int version = 0;
    using Item = std::tuple<double, int, int>;
    std::priority_queue<Item> heap;
    size_t kept = 0;
    for (size_t b = 0; b < n; ++b) {
      if (cur[b]) {
        ++kept;
        continue;
      }
      heap.push({kInf, int(b), -1});  // unmeasured: look at each once
    }
    while (!heap.empty() && eval.count() < residency.max_simulations && kept + 1 < n) {
      auto [gain, b, ver] = heap.top();
      heap.pop();
      if (cur[size_t(b)]) continue;
      if (ver == version) {
        if (gain <= 0) break;  // the best measured move does not help
        cur[size_t(b)] = 1;
        cur_ms -= gain * double(plan.weights[size_t(b)].bytes);
        ++version;
        ++kept;
        continue;
      }
      cur[size_t(b)] = 1;
      const double ms = eval(cur);
      cur[size_t(b)] = 0;
      if (!std::isfinite(ms)) continue;  // does not fit beside the rest's minimal pool (never will: the set only grows)
      const double g = (cur_ms - ms) / double(plan.weights[size_t(b)].bytes);
      if (g > 0) heap.push({g, b, version});
    }
    StreamPlan g_plan;
    r.greedy_ms = eval(cur, &g_plan);
    if (r.greedy_ms <= best_ms) {
      best = cur;
      best_ms = r.greedy_ms;
      best_plan = std::move(g_plan);
      r.chosen = Residency::kGreedy;
    }
  }
  r.resident = std::move(best);
  r.plan = std::move(best_plan);
  r.predicted_ms = best_ms;
  r.simulations = eval.count();
  int count = 0;
  for (char c : r.resident) count += c != 0;
  char line[256];
  std::snprintf(line, sizeof(line), "residency: %s: %d of %zu blobs resident (%.2f MiB) + %.2f MiB pool, ",
                residency_name(r.chosen), count, n, double(r.plan.resident_bytes) / 1048576.0,
                double(r.plan.pool_bytes) / 1048576.0);
  r.how = line + fmt_ms("predicted", r.predicted_ms) + " (" + fmt_ms("none", r.none_ms) + ", " +
          fmt_ms("largest-late", r.largest_late_ms) + ", " + fmt_ms("greedy", r.greedy_ms) + "; " +
          std::to_string(r.simulations) + " simulations)";
  return r;
}

}  // namespace dlr
