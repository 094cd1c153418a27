#include "tools/dlbench/startup_report.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/common/tool_support.h"
#include "tools/dlbench/held_gpu.h"
#include "tools/dlbench/isolate.h"
#include "tools/dlbench/stats.h"

namespace dlr::tools {
namespace {

// A child's command line: one timed inference after open, no warm-up, no --startup.
ChildArgs one_inference() {
  return {{"--startup", "--startup-gpu", "--iters", "--warmup"}, {"--iters", "1", "--warmup", "0"}};
}

// A startup value of a child's row by its path ("engine.weights_ms"), or -1.
double field(const nlohmann::json& su, const std::string& path) {
  const nlohmann::json* j = &su;
  size_t at = 0;
  while (at <= path.size()) {
    const size_t dot = path.find('.', at);
    const std::string key = path.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
    if (!j->contains(key)) return -1;
    j = &(*j)[key];
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  return j->is_number() ? j->get<double>() : -1;
}

// The parts reported per configuration (medians over the rounds).
const char* const kParts[] = {"process_start_ms", "process_end_ms", "process_age_at_first_result_ms", "open_ms", "parse_ms", "compile_ms",
                              "prepared_ms", "engine.weights_ms", "engine.weights_prepare_ms",
                              "engine.conv_setup_ms", "kernel_times_ms", "finalize_ms", "kernels_warm_ms", "graph_ms",
                              "first_inference_ms", "context_wait_ms"};

// One child's times, ms, from its process_clock (isolate.h): spawn to exit as this process
// saw it; its own start (spawn to its main) and end (its JSON written to that exit), -1
// where the child did not say.
struct ChildTimes {
  double exit_ms = 0, start_ms = -1, end_ms = -1;
};

ChildTimes child_times(const nlohmann::json& result) {
  const nlohmann::json& c = result["process_clock"];
  ChildTimes t;
  t.exit_ms = c["reaped_ms"].get<double>() - c["spawn_ms"].get<double>();
  if (c.value("main_ms", -1.0) >= 0) t.start_ms = c["main_ms"].get<double>() - c["spawn_ms"].get<double>();
  if (c.contains("written_ms")) t.end_ms = c["reaped_ms"].get<double>() - c["written_ms"].get<double>();
  return t;
}

struct Series {
  std::string name;
  std::vector<double> exit_ms;  // spawn to exit, as this process saw it
  std::vector<nlohmann::json> runs;
};

nlohmann::json summary(const std::vector<double>& v) {
  const Stats s = stats_of(v);
  double mx = 0;
  for (double x : v) mx = std::max(mx, x);
  return {{"median_ms", s.median}, {"min_ms", s.min}, {"max_ms", mx}};
}

nlohmann::json config_json(const Series& s) {
  nlohmann::json parts;
  for (const char* p : kParts) {
    std::vector<double> v;
    for (const nlohmann::json& r : s.runs) {
      const double x = field(r["startup"], p);
      if (x >= 0) v.push_back(x);
    }
    if (!v.empty()) parts[p] = median(v);
  }
  return {{"config", s.name}, {"exec_to_exit", summary(s.exit_ms)}, {"median_parts", parts}, {"runs", s.runs}};
}

// What each --startup-gpu condition means, for the report's heading.
const char* condition_text(const std::string& gpu) {
  return gpu == "held" ? "the GPU held by another process (dlbench --hold-gpu)"
                       : "no other process holding the GPU";
}

void print_report(const nlohmann::json& report, int rounds) {
  std::printf("\nstartup over %d fresh processes each, %s (medians; exec to exit as this process timed it)\n", rounds,
              condition_text(report["gpu"].get<std::string>()));
  if (report.contains("floor"))
    std::printf("  %-34s exec to exit %7.1f ms (min %.1f, max %.1f); its open %.1f ms, its teardown %.1f ms\n",
                "floor (--startup-floor)", report["floor"]["exec_to_exit"]["median_ms"].get<double>(),
                report["floor"]["exec_to_exit"]["min_ms"].get<double>(),
                report["floor"]["exec_to_exit"]["max_ms"].get<double>(), report["floor"]["total_ms"].get<double>(),
                report["floor"]["process_end_ms"].get<double>());
  for (const nlohmann::json& c : report["configs"]) {
    const nlohmann::json& p = c["median_parts"];
    auto part = [&](const char* k) { return p.contains(k) ? p[k].get<double>() : -1.0; };
    std::printf("  %-34s exec to exit %7.1f ms (min %.1f, max %.1f)", c["config"].get<std::string>().c_str(),
                c["exec_to_exit"]["median_ms"].get<double>(), c["exec_to_exit"]["min_ms"].get<double>(),
                c["exec_to_exit"]["max_ms"].get<double>());
    if (c.contains("above_floor_ms")) std::printf(", floor + %.1f ms", c["above_floor_ms"].get<double>());
    std::printf("\n    first result at %.0f ms of age; open %.1f = parse %.1f, compile %.1f, prepared file %.1f, weights "
                "%.1f (preparing %.1f), convolutions %.1f, kernel times %.1f, finalize %.1f (kernels warmed %.1f, graph %.1f); "
                "first inference %.1f\n",
                part("process_age_at_first_result_ms"), part("open_ms"), part("parse_ms"), part("compile_ms"),
                part("prepared_ms"), part("engine.weights_ms"), part("engine.weights_prepare_ms"),
                part("engine.conv_setup_ms"), part("kernel_times_ms"), part("finalize_ms"), part("kernels_warm_ms"), part("graph_ms"),
                part("first_inference_ms"));
    if (part("process_end_ms") >= 0)
      std::printf("    process: spawn to main %.1f ms; its last output to its exit (the teardown) %.1f ms\n",
                  part("process_start_ms"), part("process_end_ms"));
  }
}

// One --startup-gpu condition's runs: the floor's and every configuration's.
struct Condition {
  std::string gpu;  // "idle" or "held"
  Series floor;
  std::vector<double> floor_open, floor_end;
  std::string gpu_name;  // the floor's GPU, as it printed it
  std::vector<Series> series;
};

// One round of `c`: a floor process on a CUDA device, then each configuration's. A
// configuration that fails is said on stderr and sets *failed; a floor that fails ends
// the report (the error).
Status run_round(const Args& a, const std::vector<Config>& configs, const std::string& own_weights, bool cuda,
                 Condition* c, bool* failed) {
  if (cuda) {
    Expected<nlohmann::json> f = run_self_in_child({a.argv[0], "--startup-floor"}, "startup_floor");
    if (!f.ok()) return Status(f.status().code(), "--startup-floor: " + f.status().message());
    const ChildTimes t = child_times(*f);
    c->floor.exit_ms.push_back(t.exit_ms);
    c->floor_open.push_back((*f)["total_ms"].get<double>());
    if (t.end_ms >= 0) c->floor_end.push_back(t.end_ms);
    c->gpu_name = f->value("gpu", std::string());
  }
  for (size_t k = 0; k < configs.size(); ++k) {
    Expected<nlohmann::json> r = run_config_in_child(a.argv, int(k), own_weights, one_inference());
    if (!r.ok()) {
      std::fprintf(stderr, "dlbench: %s: %s\n", c->series[k].name.c_str(), r.status().message().c_str());
      *failed = true;
      continue;
    }
    const ChildTimes t = child_times(*r);
    nlohmann::json su = (*r)["startup"];
    su["process_start_ms"] = t.start_ms;
    su["process_end_ms"] = t.end_ms;
    c->series[k].exit_ms.push_back(t.exit_ms);
    c->series[k].runs.push_back({{"exec_to_exit_ms", t.exit_ms}, {"startup", su}});
  }
  return Status();
}

nlohmann::json condition_json(const Condition& c, bool cuda) {
  nlohmann::json report = {{"gpu", c.gpu}, {"configs", nlohmann::json::array()}};
  if (cuda)
    report["floor"] = {{"exec_to_exit", summary(c.floor.exit_ms)},
                       {"total_ms", median(c.floor_open)},
                       {"process_end_ms", c.floor_end.empty() ? -1.0 : median(c.floor_end)}};
  for (const Series& s : c.series) {
    nlohmann::json j = config_json(s);
    if (cuda && !s.exit_ms.empty())
      j["above_floor_ms"] = j["exec_to_exit"]["median_ms"].get<double>() - median(c.floor.exit_ms);
    report["configs"].push_back(j);
  }
  return report;
}

}  // namespace

std::vector<std::string> startup_gpu_conditions(const std::string& list) {
  std::vector<std::string> out;
  for (const char* gpu : {"idle", "held"})
    for (const std::string& g : split(list))
      if (g == gpu) {
        out.push_back(gpu);
        break;
      }
  return out;
}

Status check_startup_gpu(const Args& a, bool cuda) {
  const std::vector<std::string> given = split(a.startup_gpu);
  if (a.startup == 0 && a.startup_gpu != "idle") return invalid_argument("--startup-gpu applies to --startup N");
  for (const std::string& g : given)
    if (g != "idle" && g != "held")
      return invalid_argument("--startup-gpu: '" + g + "' is not idle or held");
  if (given.empty() || startup_gpu_conditions(a.startup_gpu).size() != given.size())
    return invalid_argument("--startup-gpu: give idle, held or idle,held, each once");
  if (!cuda && a.startup_gpu != "idle") return invalid_argument("--startup-gpu " + a.startup_gpu + ": needs --device cuda");
  return Status();
}

int startup_report(const Args& a, const std::vector<Config>& configs, const std::string& weights, nlohmann::json* all) {
  const std::string own_weights = a.synthetic ? weights : std::string();
  bool cuda = false;
  for (const Config& c : configs) cuda = cuda || c.device == "cuda";
  std::vector<Condition> conditions;
  for (const std::string& gpu : startup_gpu_conditions(a.startup_gpu)) {
    conditions.push_back({gpu, {}, {}, {}, {}, std::vector<Series>(configs.size())});
    for (size_t k = 0; k < configs.size(); ++k) conditions.back().series[k].name = configs[k].name();
  }
  for (size_t k = 0; k < configs.size(); ++k) {  // fills the caches; not counted
    Expected<nlohmann::json> r = run_config_in_child(a.argv, int(k), own_weights, one_inference());
    if (!r.ok()) {
      std::fprintf(stderr, "dlbench: %s: %s\n", configs[k].name().c_str(), r.status().message().c_str());
      return kExitError;
    }
  }
  bool failed = false;
  for (int round = 0; round < a.startup; ++round) {
    for (Condition& c : conditions) {
      std::unique_ptr<HeldGpu> held;
      if (c.gpu == "held") {
        Expected<std::unique_ptr<HeldGpu>> h = HeldGpu::start();
        if (!h.ok()) return fail("dlbench", h.status());
        held = std::move(*h);
      }
      const Status st = run_round(a, configs, own_weights, cuda, &c, &failed);
      if (!st.ok()) return fail("dlbench", st);
    }
  }
  nlohmann::json report = {{"rounds", a.startup}, {"conditions", nlohmann::json::array()}};
  for (const Condition& c : conditions) {
    report["conditions"].push_back(condition_json(c, cuda));
    print_report(report["conditions"].back(), a.startup);
    if (!c.gpu_name.empty()) (*all)["gpu"] = c.gpu_name;
  }
  (*all)["startup_report"] = report;
  return failed ? kExitError : kExitOk;
}

}  // namespace dlr::tools
