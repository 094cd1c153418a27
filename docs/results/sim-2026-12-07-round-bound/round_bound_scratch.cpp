// Scratch (not built by the project): the round lower bound (runtime/multi/round_bound.h)
// of a Runtime's round robin computed on the VM from kernel times measured on a GPU.
// Usage: round_bound_scratch WEIGHT_BUDGET_BYTES SHARED_ARENA_BYTES GBPS[,GBPS...]
//          CFG:SIZE:KERNEL_JSON ... (in the round's order)
// KERNEL_JSON: a dlbench JSON whose first result has stream.kernel_ms_at_open (fp16,
// stream mode); where it has none (a model whose minimum pool holds every weight
// measures none at open), the fastest inference of its last result (network.min_ms)
// spread evenly over the steps that reach the GPU. Each plan is compiled as that row was (CUDA, fp16, stream, the minimum
// pool: the steps are the same at every budget), rooms as Runtime::round_bound counts them.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/multi/round_bound.h"
#include "runtime/streaming/lower_bound.h"

using namespace dlr;

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  const int64_t budget = std::atoll(argv[1]), arena = std::atoll(argv[2]);
  std::vector<double> rates;
  std::stringstream ss(argv[3]);
  for (std::string r; std::getline(ss, r, ',');) rates.push_back(std::atof(r.c_str()));
  std::vector<ExecutionPlan> plans;
  std::vector<RoundModel> models;
  plans.reserve(size_t(argc));
  for (int i = 4; i < argc; ++i) {
    std::string spec = argv[i];
    const size_t c1 = spec.find(':'), c2 = spec.find(':', c1 + 1);
    const std::string cfg = spec.substr(0, c1), js = spec.substr(c2 + 1);
    const int size = std::atoi(spec.substr(c1 + 1, c2 - c1 - 1).c_str());
    CfgOptions co;
    co.width = co.height = size;
    auto net = parse_network_cfg(cfg, co);
    if (!net.ok()) { std::fprintf(stderr, "%s\n", net.status().to_string().c_str()); return 1; }
    std::ifstream in(js);
    const nlohmann::json j = nlohmann::json::parse(in);
    const nlohmann::json& first = j["results"][0]["stream"];
    const bool measured = first.contains("kernel_ms_at_open");
    std::vector<double> ms;
    if (measured) ms = first["kernel_ms_at_open"].get<std::vector<double>>();
    Target t;
    t.device = DeviceKind::kCUDA;
    t.map_granularity = 2 << 20;
    t.copy_profile = *CopyProfile::builtin("h100");
    SessionOptions o;
    o.device = DeviceKind::kCUDA;
    o.mode = WeightMode::kStream;
    o.precision = Precision::kFP16;
    o.width = o.height = size;
    o.weight_budget = WeightBudget::min();
    if (!measured) {  // the steps first, then the even spread
      auto bare = compile(*net, t, o);
      if (!bare.ok()) { std::fprintf(stderr, "%s\n", bare.status().to_string().c_str()); return 1; }
      int running = 0;
      for (const Step& st : bare->plan.steps) running += !(st.no_op && st.copies.empty());
      const double total = j["results"].back()["network"]["min_ms"].get<double>();
      for (const Step& st : bare->plan.steps) ms.push_back(st.no_op && st.copies.empty() ? 0.0 : total / running);
      std::printf("%s: no kernel times at open; %.3f ms (network.min_ms) spread over %d steps\n", cfg.c_str(), total, running);
    }
    auto cm = compile(*net, t, o, ms);
    if (!cm.ok()) { std::fprintf(stderr, "%s: %s\n", cfg.c_str(), cm.status().to_string().c_str()); return 1; }
    plans.push_back(cm->plan);
    RoundModel rm;
    rm.name = cfg.substr(cfg.rfind('/') + 1) + "@" + std::to_string(size);
    rm.plan = &plans.back();
    rm.layer_ms = ms;
    rm.room = arena_idle_bytes(plans.back());
    for (int64_t& r : rm.room) r += std::max<int64_t>(0, arena - plans.back().arena_bytes);
    std::printf("%s: %zu steps, %.2f MiB of weights, arena %.2f MiB, kernels %.3f ms\n", rm.name.c_str(),
                plans.back().steps.size(), double(plans.back().weight_bytes()) / (1 << 20),
                double(plans.back().arena_bytes) / (1 << 20), [&] { double s = 0; for (double v : ms) s += v; return s; }());
    models.push_back(rm);
  }
  for (double g : rates) {
    auto b = round_lower_bound(models, budget, g);
    if (!b.ok()) { std::fprintf(stderr, "%s\n", b.status().to_string().c_str()); return 1; }
    std::printf("%s\n", b->to_text().c_str());
    // Without idle activation bytes (a plan that stages nothing).
    std::vector<RoundModel> bare = models;
    for (RoundModel& m : bare) m.room.clear();
    auto nb = round_lower_bound(bare, budget, g);
    std::printf("  without staging: %s\n", nb->to_text().c_str());
  }
  return 0;
}
