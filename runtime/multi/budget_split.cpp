#include "runtime/multi/budget_split.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "runtime/streaming/residency.h"

namespace dlr {
namespace {

std::string fmt_line(const char* f, const std::string& name, double mib, double ms, double w) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), f, name.c_str(), mib, ms, w);
  return buf;
}

}  // namespace

Expected<BudgetSplit> split_budget(const std::vector<ModelCurve>& models, int64_t weight_budget, int64_t quantum,
                                   SplitObjective objective) {
  if (quantum <= 0) return invalid_argument("split_budget: quantum must be > 0");
  if (models.empty()) return BudgetSplit{};
  int64_t smallest = 0;
  for (const ModelCurve& m : models) {
    if (m.budget_bytes.empty() || m.budget_bytes.size() != m.predicted_ms.size())
      return invalid_argument("split_budget: model " + m.name + " has no curve");
    if (!(m.weight > 0)) return invalid_argument("split_budget: model " + m.name + " needs a weight > 0");
    for (size_t i = 0; i < m.budget_bytes.size(); ++i)
      if (m.budget_bytes[i] <= 0 || (i > 0 && m.budget_bytes[i] <= m.budget_bytes[i - 1]))
        return invalid_argument("split_budget: model " + m.name + ": budgets must be positive and increasing");
    smallest += m.budget_bytes[0];
  }
  if (smallest > weight_budget) {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "the weight budget %.2f MiB is below the %.2f MiB the models need at least",
                  double(weight_budget) / 1048576.0, double(smallest) / 1048576.0);
    return out_of_memory(buf);
  }
  if (objective == SplitObjective::kMaxSlowdown) {
    // The smallest slowdown s every model can meet at once: each model keeps only the
    // candidates within s of its all-resident latency (the last point), the least s whose
    // smallest such candidates fit; then the sum objective over those candidates.
    std::vector<double> levels;
    for (const ModelCurve& m : models)
      for (double ms : m.predicted_ms) levels.push_back(ms / m.baseline());
    std::sort(levels.begin(), levels.end());
    for (double level : levels) {
      std::vector<ModelCurve> kept = models;
      int64_t need = 0;
      bool ok = true;
      for (ModelCurve& m : kept) {
        const double all = m.baseline();
        size_t first = 0;
        while (first < m.predicted_ms.size() && m.predicted_ms[first] / all > level + 1e-12) ++first;
        if (first == m.predicted_ms.size()) {
          ok = false;
          break;
        }
        m.budget_bytes.erase(m.budget_bytes.begin(), m.budget_bytes.begin() + long(first));
        m.predicted_ms.erase(m.predicted_ms.begin(), m.predicted_ms.begin() + long(first));
        need += (m.budget_bytes[0] + quantum - 1) / quantum * quantum;
      }
      if (!ok || need > weight_budget) continue;
      Expected<BudgetSplit> r = split_budget(kept, weight_budget, quantum, SplitObjective::kSum);
      if (!r.ok()) continue;
      for (size_t i = 0; i < models.size(); ++i)  // choices index the full curves
        r->choice[i] += int(models[i].budget_bytes.size() - kept[i].budget_bytes.size());
      char buf[96];
      std::snprintf(buf, sizeof(buf), "\nthe largest predicted slowdown: %.3f x (minimised first)", level);
      r->how += buf;
      return r;
    }
    // Unreachable when the smallest candidates fit (the largest level keeps them all).
  }
  // Capacity in quanta; candidates cost ceil(bytes / quantum) quanta, so every choice
  // the search accepts fits in bytes too.
  auto quanta = [&](int64_t b) { return (b + quantum - 1) / quantum; };
  int64_t max_sum = 0;
  for (const ModelCurve& m : models) max_sum += quanta(m.budget_bytes.back());
  const int64_t cap = std::min(weight_budget / quantum, max_sum);
  const size_t n = models.size(), w = size_t(cap) + 1;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[i][c]: the least cost of models [0, i) within c quanta; pick[i][c]: model i-1's choice.
  std::vector<std::vector<double>> best(n + 1, std::vector<double>(w, kInf));
  std::vector<std::vector<int>> pick(n + 1, std::vector<int>(w, -1));
  std::fill(best[0].begin(), best[0].end(), 0.0);
  for (size_t i = 0; i < n; ++i) {
    const ModelCurve& m = models[i];
    for (size_t c = 0; c < w; ++c) {
      for (size_t k = 0; k < m.budget_bytes.size(); ++k) {
        const int64_t q = quanta(m.budget_bytes[k]);
        if (q > int64_t(c) || best[i][c - size_t(q)] == kInf) continue;
        const double v = best[i][c - size_t(q)] + m.weight * m.predicted_ms[k];
        // Ties go to the smaller budget (candidates are increasing): strict improvement only.
        if (v < best[i + 1][c] - 1e-12) {
          best[i + 1][c] = v;
          pick[i + 1][c] = int(k);
        }
      }
    }
  }
  // The least cost, then the fewest quanta reaching it.
  size_t c = 0;
  for (size_t k = 0; k < w; ++k)
    if (best[n][k] < best[n][c] - 1e-12) c = k;
  if (best[n][c] == kInf) return out_of_memory("split_budget: no split fits the weight budget");
  BudgetSplit r;
  r.cost = best[n][c];
  r.choice.assign(n, 0);
  r.bytes.assign(n, 0);
  for (size_t i = n; i > 0; --i) {
    const int k = pick[i][c];
    r.choice[i - 1] = k;
    r.bytes[i - 1] = models[i - 1].budget_bytes[size_t(k)];
    c -= size_t(quanta(r.bytes[i - 1]));
  }
  for (size_t i = 0; i < n; ++i) {
    r.total_bytes += r.bytes[i];
    const ModelCurve& m = models[i];
    const size_t k = size_t(r.choice[i]);
    if (!r.how.empty()) r.how += "\n";
    r.how += fmt_line("%s: %.2f MiB of weights, predicted %.3f ms (weight %g)", m.name,
                      double(r.bytes[i]) / 1048576.0, m.predicted_ms[k], m.weight);
    const double all = m.predicted_ms.back();
    if (k + 1 < m.budget_bytes.size() && all > 0) {
      char buf[96];
      std::snprintf(buf, sizeof(buf), ", %.2f x its all-resident %.3f ms", m.predicted_ms[k] / all, all);
      r.how += buf;
    }
  }
  return r;
}

Expected<ModelCurve> model_curve(const std::string& name, const ExecutionPlan& plan, const CopyProfile& profile,
                                 const std::vector<double>& layer_ms, int64_t granularity, int points,
                                 const SimOptions& sim) {
  if (points < 2) return invalid_argument("model_curve: at least 2 points");
  ModelCurve c;
  c.name = name;
  const int64_t total = plan.weight_bytes();
  StreamOptions so;
  so.layout = PoolLayout::kRing;  // a Runtime's models stream through rings (their own, prefetchable)
  so.ring_granularity = granularity;
  SimOptions quiet = sim;
  quiet.check = false;
  // All resident: no copies at all (the preload latency).
  so.budget_bytes = total;
  DLR_ASSIGN_OR_RETURN(StreamPlan all, plan_streaming(plan, profile, so));
  const double all_ms = simulate(plan, all, profile, layer_ms, quiet).latency_ms;
  so.budget_bytes = 0;
  DLR_ASSIGN_OR_RETURN(StreamPlan minimal, plan_streaming(plan, profile, so));
  const int64_t lo = minimal.pool_bytes;
  const int64_t g = std::max<int64_t>(granularity, 256);
  ResidencyOptions ro;
  ro.sim = sim;
  for (int i = 0; i < points - 1 && lo < total; ++i) {
    int64_t b = lo + (total - lo) * i / (points - 1);
    if (i > 0) b = b / g * g;
    if (b >= total) break;
    if (!c.budget_bytes.empty() && b <= c.budget_bytes.back()) continue;
    so.budget_bytes = b;
    so.resident.clear();
    DLR_ASSIGN_OR_RETURN(ResidencyResult r, plan_residency(plan, profile, so, layer_ms, ro));
    c.budget_bytes.push_back(b);
    c.predicted_ms.push_back(r.predicted_ms);
  }
  c.budget_bytes.push_back(total);
  c.predicted_ms.push_back(all_ms);
  return c;
}

}  // namespace dlr
