// Scratch (not built by the project): a Runtime's round computed on the VM from kernel
// times measured on a GPU.
// Usage: round_scratch bound WEIGHT_BUDGET_BYTES SHARED_ARENA_BYTES GBPS[,GBPS...] MODEL...
//        round_scratch split WEIGHT_BUDGET_BYTES SHARED_ARENA_BYTES PROFILE MODEL...
// MODEL: CFG:SIZE:KERNEL_JSON, in the round's order. KERNEL_JSON: a dlbench JSON whose
// first result has stream.kernel_ms_at_open (fp16, stream mode); where it has none (a
// model whose minimum pool holds every weight measures none at open), the fastest
// inference of its last result (network.min_ms) spread evenly over the steps that reach
// the GPU. Each plan is compiled as that row was (CUDA, fp16, stream, the minimum pool:
// the steps are the same at every budget); rooms as Runtime::round_bound counts them.
// bound: round_lower_bound at each rate, with and without the idle activation bytes.
// split: split_shared_ring planned with PROFILE (a built-in name such as h100, or
// "row:FILE" for stream.copy_profile of FILE's first result), the largest slowdown
// (dlbench --split max-slowdown) or with OBJECTIVE=sum in the environment the sum of
// latencies; its predicted round and the bound at the profile's peak. LEAD_MS in the
// environment (forty-second session): every model's prefetch_lead_ms, as dlbench
// --prefetch-lead gives it for paced frames. ARENA_ALL: each model's plan may stage
// weights anywhere in the shared arena (its arena_bytes raised to the shared arena's), a
// what-if: no dlrun plan stages beyond its own arena.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/multi/ring_split.h"
#include "runtime/multi/round_bound.h"
#include "runtime/streaming/copy_profile_json.h"

using namespace dlr;

namespace {

struct Loaded {
  std::vector<ExecutionPlan> plans;  // reserved: the models point into it
  std::vector<RingModel> ring;
  std::vector<RoundModel> round;
};

// The kernel times of `j`'s first result, or the even spread of its last result's fastest
// inference over the steps of `net` that reach the GPU.
std::vector<double> kernel_times(const nlohmann::json& j, const NetworkDesc& net, const Target& t,
                                 const SessionOptions& o, const std::string& cfg) {
  const nlohmann::json& first = j["results"][0]["stream"];
  if (first.contains("kernel_ms_at_open")) return first["kernel_ms_at_open"].get<std::vector<double>>();
  auto bare = compile(net, t, o);
  int running = 0;
  for (const Step& st : bare->plan.steps) running += !(st.no_op && st.copies.empty());
  const double total = j["results"].back()["network"]["min_ms"].get<double>();
  std::vector<double> ms;
  for (const Step& st : bare->plan.steps) ms.push_back(st.no_op && st.copies.empty() ? 0.0 : total / running);
  std::printf("%s: no kernel times at open; %.3f ms (network.min_ms) spread over %d steps\n", cfg.c_str(), total, running);
  return ms;
}

bool load(int argc, char** argv, int first, int64_t arena, const CopyProfile& prof, Loaded* l) {
  l->plans.reserve(size_t(argc));
  for (int i = first; i < argc; ++i) {
    const std::string spec = argv[i];
    const size_t c1 = spec.find(':'), c2 = spec.find(':', c1 + 1);
    const std::string cfg = spec.substr(0, c1), js = spec.substr(c2 + 1);
    const int size = std::atoi(spec.substr(c1 + 1, c2 - c1 - 1).c_str());
    CfgOptions co;
    co.width = co.height = size;
    auto net = parse_network_cfg(cfg, co);
    if (!net.ok()) { std::fprintf(stderr, "%s\n", net.status().to_string().c_str()); return false; }
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
    if (const char* lead = std::getenv("LEAD_MS")) o.prefetch_lead_ms = std::atof(lead);
    const std::vector<double> ms = kernel_times(j, *net, t, o, cfg);
    auto cm = compile(*net, t, o, ms);
    if (!cm.ok()) { std::fprintf(stderr, "%s: %s\n", cfg.c_str(), cm.status().to_string().c_str()); return false; }
    l->plans.push_back(cm->plan);
    if (std::getenv("ARENA_ALL")) l->plans.back().arena_bytes = std::max(l->plans.back().arena_bytes, arena);
    const ExecutionPlan& p = l->plans.back();
    RingModel m;
    m.name = cfg.substr(cfg.rfind('/') + 1) + "@" + std::to_string(size);
    m.plan = &p;
    m.layer_ms = ms;
    m.target = t;
    m.options = o;
    m.input_bytes = int64_t(p.input_shape.count()) * 4;
    l->ring.push_back(m);
    l->round.push_back(runtime_round_model(m.name, p, ms, true, arena));
    double sum = 0;
    for (double v : ms) sum += v;
    std::printf("%s: %zu steps, %.2f MiB of weights, arena %.2f MiB, kernels %.3f ms\n", m.name.c_str(), p.steps.size(),
                double(p.weight_bytes()) / (1 << 20), double(p.arena_bytes) / (1 << 20), sum);
  }
  return true;
}

int bounds(int64_t budget, const std::string& rates, const Loaded& l) {
  std::stringstream ss(rates);
  for (std::string r; std::getline(ss, r, ',');) {
    auto b = round_lower_bound(l.round, budget, std::atof(r.c_str()));
    if (!b.ok()) { std::fprintf(stderr, "%s\n", b.status().to_string().c_str()); return 1; }
    std::printf("%s\n", b->to_text().c_str());
    std::vector<RoundModel> bare = l.round;  // a plan that stages nothing
    for (RoundModel& m : bare) m.room.clear();
    std::printf("  without staging: %s\n", round_lower_bound(bare, budget, std::atof(r.c_str()))->to_text().c_str());
  }
  return 0;
}

int split(int64_t budget, const CopyProfile& prof, const Loaded& l) {
  const char* obj = std::getenv("OBJECTIVE");
  const bool sum_objective = obj != nullptr && std::string(obj) == "sum";
  auto s = split_shared_ring(l.ring, budget, 2 << 20, sum_objective ? SplitObjective::kSum : SplitObjective::kMaxSlowdown);
  if (!s.ok()) { std::fprintf(stderr, "%s\n", s.status().to_string().c_str()); return 1; }
  double sum = 0;
  for (double v : s->predicted_ms) sum += v;
  std::printf("profile %s: predicted round %.3f ms\n%s\n", prof.name.c_str(), sum, s->how.c_str());
  std::printf("%s\n", round_lower_bound(l.round, budget, prof.peak_gbps())->to_text().c_str());
  return 0;
}

CopyProfile profile(const std::string& name) {
  if (name.rfind("row:", 0) != 0) return *CopyProfile::builtin(name);
  std::ifstream in(name.substr(4));
  const nlohmann::json j = nlohmann::json::parse(in);
  return *copy_profile_from_json(j["results"][0]["stream"]["copy_profile"], name);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) return 2;
  const std::string mode = argv[1];
  const int64_t budget = std::atoll(argv[2]), arena = std::atoll(argv[3]);
  const CopyProfile prof = mode == "split" ? profile(argv[4]) : *CopyProfile::builtin("h100");
  Loaded l;
  if (!load(argc, argv, 5, arena, prof, &l)) return 1;
  return mode == "split" ? split(budget, prof, l) : bounds(budget, argv[4], l);
}
