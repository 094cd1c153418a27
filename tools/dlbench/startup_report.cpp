#include "tools/dlbench/startup_report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/common/tool_support.h"
#include "tools/dlbench/isolate.h"
#include "tools/dlbench/stats.h"

namespace dlr::tools {
namespace {

// A child's command line: one timed inference after open, no warm-up, no --startup.
ChildArgs one_inference() { return {{"--startup", "--iters", "--warmup"}, {"--iters", "1", "--warmup", "0"}}; }

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

void print_report(const nlohmann::json& report) {
  std::printf("\nstartup over %d fresh processes each (medians; exec to exit as this process timed it)\n",
              report["rounds"].get<int>());
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

}  // namespace

int startup_report(const Args& a, const std::vector<Config>& configs, const std::string& weights, nlohmann::json* all) {
  const std::string own_weights = a.synthetic ? weights : std::string();
  bool cuda = false;
  for (const Config& c : configs) cuda = cuda || c.device == "cuda";
  std::vector<Series> series(configs.size());
  int rc = kExitOk;
  for (size_t k = 0; k < configs.size(); ++k) {  // fills the caches; not counted
    series[k].name = configs[k].name();
    Expected<nlohmann::json> r = run_config_in_child(a.argv, int(k), own_weights, one_inference());
    if (!r.ok()) {
      std::fprintf(stderr, "dlbench: %s: %s\n", series[k].name.c_str(), r.status().message().c_str());
      return kExitError;
    }
  }
  Series floor;
  std::vector<double> floor_open, floor_end;
  for (int round = 0; round < a.startup; ++round) {
    if (cuda) {
      Expected<nlohmann::json> f = run_self_in_child({a.argv[0], "--startup-floor"}, "startup_floor");
      if (!f.ok()) return fail("dlbench", "--startup-floor: " + f.status().message());
      const ChildTimes t = child_times(*f);
      floor.exit_ms.push_back(t.exit_ms);
      floor_open.push_back((*f)["total_ms"].get<double>());
      if (t.end_ms >= 0) floor_end.push_back(t.end_ms);
    }
    for (size_t k = 0; k < configs.size(); ++k) {
      Expected<nlohmann::json> r = run_config_in_child(a.argv, int(k), own_weights, one_inference());
      if (!r.ok()) {
        std::fprintf(stderr, "dlbench: %s: %s\n", series[k].name.c_str(), r.status().message().c_str());
        rc = kExitError;
        continue;
      }
      const ChildTimes t = child_times(*r);
      nlohmann::json su = (*r)["startup"];
      su["process_start_ms"] = t.start_ms;
      su["process_end_ms"] = t.end_ms;
      series[k].exit_ms.push_back(t.exit_ms);
      series[k].runs.push_back({{"exec_to_exit_ms", t.exit_ms}, {"startup", su}});
    }
  }
  nlohmann::json report = {{"rounds", a.startup}, {"configs", nlohmann::json::array()}};
  if (cuda)
    report["floor"] = {{"exec_to_exit", summary(floor.exit_ms)},
                       {"total_ms", median(floor_open)},
                       {"process_end_ms", floor_end.empty() ? -1.0 : median(floor_end)}};
  for (const Series& s : series) {
    nlohmann::json c = config_json(s);
    if (cuda && !s.exit_ms.empty())
      c["above_floor_ms"] = c["exec_to_exit"]["median_ms"].get<double>() - median(floor.exit_ms);
    report["configs"].push_back(c);
  }
  print_report(report);
  (*all)["startup_report"] = report;
  return rc;
}

}  // namespace dlr::tools
