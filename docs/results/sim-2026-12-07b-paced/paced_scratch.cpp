// Scratch (not built by the project): each model's latency lower bound when it runs
// alone within a Runtime's weight budget and every inference may start with the budget
// (and the arena's idle bytes) already full of its weights, as after a host gap long
// enough for any prefetch: T >= max over b of C_<b + (W_>=b - B - room_b) / bw (prefix
// windows of round_bound.h's argument; W_>=b: each blob a step >= b reads, once).
// Beside it, latency_lower_bound (runtime/streaming/lower_bound.h) with copies_before and
// the same rooms. Usage: paced_scratch WEIGHT_BUDGET SHARED_ARENA GBPS CFG:SIZE:KERNEL_JSON...
// (kernel times and plans as round_scratch of docs/results/sim-2026-12-07-round-bound).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/multi/round_bound.h"
#include "runtime/streaming/lower_bound.h"

using namespace dlr;

namespace {

std::vector<double> kernel_times(const nlohmann::json& j, const ExecutionPlan& p) {
  const nlohmann::json& first = j["results"][0]["stream"];
  if (first.contains("kernel_ms_at_open")) return first["kernel_ms_at_open"].get<std::vector<double>>();
  int running = 0;
  for (const Step& st : p.steps) running += !(st.no_op && st.copies.empty());
  const double total = j["results"].back()["network"]["min_ms"].get<double>();
  std::vector<double> ms;
  for (const Step& st : p.steps) ms.push_back(st.no_op && st.copies.empty() ? 0.0 : total / running);
  return ms;
}

// max over b of C_<b + max(0, W_>=b - B - room_b) / bw, and the b that gives it.
double paced_bound(const ExecutionPlan& p, const std::vector<double>& ms, const std::vector<int64_t>& room,
                   int64_t budget, double gbps, int* at) {
  const size_t n = p.steps.size();
  std::vector<int64_t> after(n + 1, 0);  // W_>=b, each blob once
  std::vector<char> seen(p.weights.size(), 0);
  for (size_t b = n; b-- > 0;) {
    const int w = p.steps[b].weight;
    after[b] = after[b + 1];
    if (w >= 0 && !seen[size_t(w)]) seen[size_t(w)] = 1, after[b] += p.weights[size_t(w)].bytes;
  }
  double best = 0, c = 0;
  for (size_t b = 0; b <= n; ++b) {
    const int64_t r = b < n ? room[b] : 0;
    const double v = c + double(std::max<int64_t>(0, after[b] - budget - r)) / (gbps * 1e6);
    if (v > best) best = v, *at = int(b);
    if (b < n) c += p.steps[b].no_op && p.steps[b].copies.empty() ? 0.0 : std::max(0.0, ms[b]);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  const int64_t budget = std::atoll(argv[1]), arena = std::atoll(argv[2]);
  const double gbps = std::atof(argv[3]);
  for (int i = 4; i < argc; ++i) {
    const std::string spec = argv[i];
    const size_t c1 = spec.find(':'), c2 = spec.find(':', c1 + 1);
    const std::string cfg = spec.substr(0, c1), js = spec.substr(c2 + 1);
    const int size = std::atoi(spec.substr(c1 + 1, c2 - c1 - 1).c_str());
    CfgOptions co;
    co.width = co.height = size;
    auto net = parse_network_cfg(cfg, co);
    if (!net.ok()) return std::fprintf(stderr, "%s\n", net.status().to_string().c_str()), 1;
    std::ifstream in(js);
    const nlohmann::json j = nlohmann::json::parse(in);
    Target t;
    t.device = DeviceKind::kCUDA;
    t.map_granularity = 2 << 20;
    t.copy_profile = *CopyProfile::builtin("h100");
    t.copy_profile.pinned = {BandwidthPoint{1 << 20, gbps}};  // every copy at the given rate
    SessionOptions o;
    o.device = DeviceKind::kCUDA;
    o.mode = WeightMode::kStream;
    o.precision = Precision::kFP16;
    o.width = o.height = size;
    o.weight_budget = WeightBudget::min();
    auto bare = compile(*net, t, o);
    if (!bare.ok()) return std::fprintf(stderr, "%s\n", bare.status().to_string().c_str()), 1;
    const std::vector<double> ms = kernel_times(j, bare->plan);
    auto cm = compile(*net, t, o, ms);
    if (!cm.ok()) return std::fprintf(stderr, "%s\n", cm.status().to_string().c_str()), 1;
    const ExecutionPlan& p = cm->plan;
    const RoundModel rm = runtime_round_model(cfg, p, ms, true, arena);
    double sum = 0;
    for (size_t s = 0; s < ms.size(); ++s) sum += p.steps[s].no_op && p.steps[s].copies.empty() ? 0.0 : ms[s];
    int at = -1;
    const double pb = paced_bound(p, ms, rm.room, budget, gbps, &at);
    BoundModel bm;
    bm.staging_room = rm.room;
    bm.copies_before = true;
    auto lb = latency_lower_bound(p, ms, t.copy_profile, budget, t.map_granularity, bm);
    std::printf("%s@%d: weights %.2f MiB, kernels %.3f ms, room at step 0 %.2f MiB; paced bound %.3f ms (step %d); "
                "latency_lower_bound %s\n",
                cfg.substr(cfg.rfind('/') + 1).c_str(), size, double(p.weight_bytes()) / (1 << 20), sum,
                double(rm.room.empty() ? 0 : rm.room[0]) / (1 << 20), pb, at,
                lb.ok() ? lb->to_text().c_str() : lb.status().to_string().c_str());
  }
  return 0;
}
