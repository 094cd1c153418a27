// Scratch (not built by the project): the shared-ring split of four models at one weight
// budget, planned with a given copy profile, its predicted round, and the round's bound.
// Usage: split_scratch WEIGHT_BUDGET_BYTES SHARED_ARENA_BYTES PROFILE CFG:SIZE:KERNEL_JSON ...
// PROFILE: a built-in name (h100), or "row:FILE" for stream.copy_profile of FILE's first
// result (the calibrated profile that row planned with). Kernel times as in
// round_bound_scratch.cpp. Objective: the largest slowdown (dlbench --split max-slowdown),
// or with OBJECTIVE=sum the sum of latencies.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/multi/ring_split.h"
#include "runtime/multi/round_bound.h"
#include "runtime/streaming/copy_profile_json.h"

using namespace dlr;

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  const int64_t budget = std::atoll(argv[1]), arena = std::atoll(argv[2]);
  const std::string pname = argv[3];
  CopyProfile prof;
  if (pname.rfind("row:", 0) == 0) {
    std::ifstream in(pname.substr(4));
    const nlohmann::json j = nlohmann::json::parse(in);
    prof = *copy_profile_from_json(j["results"][0]["stream"]["copy_profile"], pname);
  } else {
    prof = *CopyProfile::builtin(pname);
  }
  std::vector<ExecutionPlan> plans;
  plans.reserve(size_t(argc));
  std::vector<RingModel> models;
  std::vector<RoundModel> round;
  for (int i = 4; i < argc; ++i) {
    std::string spec = argv[i];
    const size_t c1 = spec.find(':'), c2 = spec.find(':', c1 + 1);
    const std::string cfg = spec.substr(0, c1), js = spec.substr(c2 + 1);
    const int size = std::atoi(spec.substr(c1 + 1, c2 - c1 - 1).c_str());
    CfgOptions co;
    co.width = co.height = size;
    auto net = parse_network_cfg(cfg, co);
    std::ifstream in(js);
    const nlohmann::json j = nlohmann::json::parse(in);
    Target t;
    t.device = DeviceKind::kCUDA;
    t.map_granularity = 2 << 20;
    t.copy_profile = prof;
    SessionOptions o;
    o.device = DeviceKind::kCUDA;
    o.mode = WeightMode::kStream;
    o.precision = Precision::kFP16;
    o.width = o.height = size;
    o.weight_budget = WeightBudget::min();
    o.prefetch_next = true;
    std::vector<double> ms;
    const nlohmann::json& first = j["results"][0]["stream"];
    if (first.contains("kernel_ms_at_open")) {
      ms = first["kernel_ms_at_open"].get<std::vector<double>>();
    } else {
      auto bare = compile(*net, t, o);
      int running = 0;
      for (const Step& st : bare->plan.steps) running += !(st.no_op && st.copies.empty());
      const double total = j["results"].back()["network"]["min_ms"].get<double>();
      for (const Step& st : bare->plan.steps) ms.push_back(st.no_op && st.copies.empty() ? 0.0 : total / running);
    }
    auto cm = compile(*net, t, o, ms);
    if (!cm.ok()) { std::fprintf(stderr, "%s\n", cm.status().to_string().c_str()); return 1; }
    plans.push_back(cm->plan);
    RingModel m;
    m.name = cfg.substr(cfg.rfind('/') + 1) + "@" + std::to_string(size);
    m.plan = &plans.back();
    m.layer_ms = ms;
    m.target = t;
    m.options = o;
    m.input_bytes = int64_t(plans.back().input_shape.count()) * 4;
    models.push_back(m);
    round.push_back(runtime_round_model(m.name, plans.back(), ms, true, arena));
  }
  // OBJECTIVE=sum in the environment: the weighted sum of latencies instead.
  const char* obj = std::getenv("OBJECTIVE");
  const bool sum_objective = obj != nullptr && std::string(obj) == "sum";
  auto s = split_shared_ring(models, budget, 2 << 20, sum_objective ? SplitObjective::kSum : SplitObjective::kMaxSlowdown);
  if (!s.ok()) { std::fprintf(stderr, "%s\n", s.status().to_string().c_str()); return 1; }
  double sum = 0;
  for (double v : s->predicted_ms) sum += v;
  std::printf("profile %s: predicted round %.3f ms\n%s\n", prof.name.c_str(), sum, s->how.c_str());
  auto b = round_lower_bound(round, budget, prof.peak_gbps());
  std::printf("%s\n", b->to_text().c_str());
  return 0;
}
