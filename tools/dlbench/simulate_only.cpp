#include "tools/dlbench/simulate_only.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/compile/compile.h"
#include "runtime/streaming/copy_profile_json.h"
#include "runtime/streaming/lower_bound.h"
#include "tools/common/tool_support.h"
#include "tools/dlbench/budget_curve.h"
#include "tools/common/session_flags.h"
#include "tools/dlbench/stats.h"

namespace dlr::tools {
namespace {

// One precision's simulation: its options, the hand-made target and the kernel times.
struct Simulated {
  std::string precision;
  SessionOptions options;  // stream mode on CUDA at --size
  Target target;
  std::vector<double> ms;  // per step, no-op steps zeroed, scaled by --scale-preload-ms
  std::vector<double> expand_ms;  // the part of ms expanding int8 weights (empty: none given), scaled alike
  std::string used;        // where the kernel times came from
  double preload = 0;      // their sum: the kernels alone
  CompiledModel minimal;   // the plan at the minimal pool
  CompileInputs inputs() const {
    CompileInputs in;
    in.layer_ms = ms;
    in.expand_ms = expand_ms;
    return in;
  }
};

// The kernel times of result `r` of pass 0 (kernel_ms_at_open) or 1 (a profiled run)
// into *ms; false when it has none of that kind.
bool result_layer_ms(const nlohmann::json& r, int pass, const std::string& name, std::vector<double>* ms,
                     std::string* used) {
  if (pass == 0 && r.contains("stream") && r["stream"].contains("kernel_ms_at_open")) {
    *ms = r["stream"]["kernel_ms_at_open"].get<std::vector<double>>();
    *used = name + " (kernel times measured at open)";
    return true;
  }
  if (pass == 1 && r.contains("profile") && r["profile"].contains("layers")) {
    for (const auto& l : r["profile"]["layers"]) ms->push_back(l.at("kernel_ms").get<double>());
    *used = name + " (profiled run, CUDA events inside the graph)";
    return true;
  }
  return false;
}

Expected<nlohmann::json> read_dlbench_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error("--layer-ms-from " + path + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return parse_error("--layer-ms-from " + path + ": not valid JSON: " + printable(e.what()));
  }
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
    return parse_error("--layer-ms-from " + path + ": not dlbench JSON (no 'results' list)");
  return j;
}

// The result of `path` whose kernel times layer_ms_from_json takes (into *ms, *used).
Expected<nlohmann::json> layer_ms_result(const std::string& path, const std::string& precision,
                                         const std::string& config, std::vector<double>* ms, std::string* used) {
  DLR_ASSIGN_OR_RETURN(const nlohmann::json j, read_dlbench_json(path));
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& r : j["results"]) {
      if (!r.is_object() || r.value("precision", std::string()) != precision) continue;
      const std::string name = r.value("config", std::string());
      if (!config.empty() && name.find(config) == std::string::npos) continue;
      ms->clear();
      try {
        if (!result_layer_ms(r, pass, name, ms, used)) continue;
      } catch (const nlohmann::json::exception& e) {
        return parse_error("--layer-ms-from " + path + ": " + name + ": " + printable(e.what()));
      }
      for (double v : *ms)
        if (!std::isfinite(v) || v < 0)
          return parse_error("--layer-ms-from " + path + ": " + name + ": a kernel time is negative or not finite");
      return r;
    }
  }
  return invalid_argument("--layer-ms-from " + path + ": no " + precision + " result" +
                          (config.empty() ? "" : " whose config contains '" + config + "'") +
                          " with kernel_ms_at_open or a profiled run");
}

// --profile-from-row: the copy profile of the result whose kernel times the first
// --precision takes (stream.copy_profile, which dlbench writes on stream rows).
Expected<CopyProfile> row_copy_profile(const Args& a) {
  const std::vector<std::string> precisions = split(a.session.text("precision"));
  std::vector<double> ms;
  std::string used;
  DLR_ASSIGN_OR_RETURN(const nlohmann::json r, layer_ms_result(a.layer_ms_from, precisions.empty() ? "" : precisions[0],
                                                               a.layer_ms_config, &ms, &used));
  const std::string name = r.value("config", std::string());
  if (!r.contains("stream") || !r["stream"].is_object() || !r["stream"].contains("copy_profile"))
    return invalid_argument("--profile-from-row: " + a.layer_ms_from + ": " + name +
                            " has no stream.copy_profile (a stream row of dlbench from 2026-12-06 on has it)");
  return copy_profile_from_json(r["stream"]["copy_profile"], a.layer_ms_from + ": " + name + ": stream.copy_profile");
}

Target simulated_target(const CopyProfile& profile, int64_t granularity) {
  Target t;
  t.device = DeviceKind::kCUDA;
  t.name = "simulated (" + profile.name + ")";
  t.map_granularity = granularity;
  t.copy_profile = profile;
  return t;
}

// Steps that reach no GPU (no-op routes) take no time in the simulator: zeroed before
// scaling, so that the kernels that run sum to --scale-preload-ms. Returns the sum
// before scaling.
Expected<double> prepare_layer_ms(const Args& a, const NetworkDesc& net, Simulated* s) {
  SessionOptions oplan = s->options;
  oplan.weight_budget = WeightBudget::min();
  DLR_ASSIGN_OR_RETURN(const CompiledModel plan_only, compile(net, s->target, oplan));
  if (s->ms.size() != plan_only.plan.steps.size())
    return invalid_argument("--layer-ms-from " + a.layer_ms_from + ": " + std::to_string(s->ms.size()) +
                            " kernel times for " + std::to_string(plan_only.plan.steps.size()) + " steps of " + a.cfg);
  for (size_t i = 0; i < s->ms.size(); ++i) {
    const Step& st = plan_only.plan.steps[i];
    if (st.no_op && st.copies.empty()) s->ms[i] = 0;
  }
  double sum = 0;
  for (double v : s->ms) sum += v;
  if (a.scale_preload_ms > 0 && sum > 0) {
    for (double& v : s->ms) v *= a.scale_preload_ms / sum;
    for (double& v : s->expand_ms) v *= a.scale_preload_ms / sum;
  }
  for (double v : s->ms) s->preload += v;
  return sum;
}

// The options of precision `prec`'s rows: every session flag given (one value each),
// CUDA stream mode at --size, the options each row sets (planned_row) at their defaults.
Expected<SessionOptions> simulated_options(const Args& a, const std::string& prec) {
  SessionFlagTexts t = a.session;
  for (const char* per_row : {"weight_budget", "residency", "tail_prefetch", "staging_early"}) t.reset(per_row);
  t.set("device", "cuda");
  t.set("mode", "stream");
  t.set("precision", prec);
  SessionOptions o;
  DLR_RETURN_IF_ERROR(apply_session_flags(t, &o));
  o.width = o.height = a.size;
  return o;
}

// Everything one precision's rows need; prints its "# precision: kernel times" line.
Expected<Simulated> simulated(const Args& a, const NetworkDesc& net, const CopyProfile& profile,
                              const std::string& prec) {
  Simulated s;
  s.precision = prec;
  DLR_ASSIGN_OR_RETURN(s.options, simulated_options(a, prec));
  DLR_ASSIGN_OR_RETURN(s.ms, layer_ms_from_json(a.layer_ms_from, prec, a.layer_ms_config, &s.used, &s.expand_ms));
  s.target = simulated_target(profile, a.granularity);
  DLR_ASSIGN_OR_RETURN(const double sum, prepare_layer_ms(a, net, &s));
  std::printf("# %s, %s weights: kernel times of %s%s: preload (the kernels alone) %.3f ms\n", prec.c_str(),
              weight_format_name(s.options.weight_format), s.used.c_str(),
              a.scale_preload_ms > 0 ? (", scaled from " + std::to_string(sum) + " ms").c_str() : "", s.preload);
  // The smallest pool dlrun can stream through; a budget below it gets the bound
  // alone (what any layer-granular plan of the model could reach, none of dlrun's).
  SessionOptions omin = s.options;
  omin.weight_budget = WeightBudget::min();
  DLR_ASSIGN_OR_RETURN(s.minimal, compile(net, s.target, omin, s.inputs()));
  if (const int n = s.minimal.lower_bound_expanded_steps; n > 0)
    std::printf("# these kernel times count %d int8 expansions on the compute stream, which the CUDA engine runs beside "
                "it: the preload and the bounds below are high by up to their time\n",
                n);
  return s;
}

void print_header() {
  std::printf("%-10s %-13s %9s %8s %8s %11s %11s %10s %9s %9s %9s\n", "precision", "budget", "MiB", "weights",
              "saved", "predicted", "vs preload", "bound", "resident", "pool", "residency");
}

// A budget below dlrun's minimal pool: the lower bound alone.
Status bound_only_row(const Args& a, const Simulated& s, const std::string& budget, int64_t want,
                      nlohmann::json* rows) {
  const int64_t total_bytes = s.minimal.plan.weight_bytes();
  const int64_t minimal = s.minimal.stream.device_bytes();
  BoundModel model;
  if (s.options.arena_staging) model.staging_room = arena_idle_bytes(s.minimal.plan);
  const std::vector<std::string> tails = split(a.session.text("tail_prefetch"));
  model.copies_before = s.options.prefetch_next || std::find(tails.begin(), tails.end(), "on") != tails.end();
  DLR_ASSIGN_OR_RETURN(const LatencyBound lb, latency_lower_bound(s.minimal.plan, s.ms, s.target.copy_profile,
                                                                  std::max<int64_t>(want, 1), a.granularity, model));
  const bool feasible = lb.pool_bytes > 0;
  rows->push_back({{"precision", s.precision}, {"weight_format", weight_format_name(s.options.weight_format)},
                   {"budget", budget},
                   {"residency", "bound only"},
                   {"budget_bytes", want},
                   {"total_weight_bytes", total_bytes},
                   {"preload_ms", s.preload},
                   {"predicted_ms", nullptr},
                   {"lower_bound_ms", feasible ? nlohmann::json(lb.ms) : nlohmann::json()},
                   {"kernel_times", s.used},
                   {"notes", {"below dlrun's minimal pool (" + std::to_string(minimal) + " bytes): " +
                              (feasible ? lb.to_text() : "no layer-granular plan exists (a blob larger than the "
                                                         "ring cannot be resident either)")}}});
  std::printf("%-10s %-13s %9.1f %7.1f%% %7.1f%% %12s %10s %10s %s\n", s.precision.c_str(), budget.c_str(), mib(want),
              100.0 * double(want) / double(total_bytes), 100.0 * (1.0 - double(want) / double(total_bytes)), "-",
              "-", feasible ? (std::to_string(lb.ms).substr(0, 8) + " ms").c_str() : "none",
              "(below dlrun's minimal pool: the bound alone)");
  return Status();
}

// The items of one planned row beside its budget (--residency, --tail-prefetch,
// --staging-early).
struct RowItems {
  std::string residency, tail, early;
};

// The planner's prediction at `budget` with the row's items.
Status planned_row(const NetworkDesc& net, const Simulated& s, const std::string& budget, const RowItems& it,
                   nlohmann::json* rows) {
  const std::string& res = it.residency;
  SessionOptions ob = s.options;
  DLR_RETURN_IF_ERROR(set_session_flag(FlagTool::kDlbench, "weight_budget", budget, &ob));
  DLR_RETURN_IF_ERROR(set_session_flag(FlagTool::kDlbench, "residency", res, &ob));
  DLR_RETURN_IF_ERROR(set_session_flag(FlagTool::kDlbench, "tail_prefetch", it.tail, &ob));
  DLR_RETURN_IF_ERROR(set_session_flag(FlagTool::kDlbench, "staging_early", it.early, &ob));
  auto m = compile(net, s.target, ob, s.inputs());
  if (!m.ok()) return Status(m.status().code(), s.precision + " @" + budget + ": " + m.status().message());
  const StreamPlan& sp = m->stream;
  const double total = double(sp.total_weight_bytes);
  const int64_t device = sp.resident ? sp.total_weight_bytes : sp.device_bytes();
  const double predicted = m->predicted_ms;
  const nlohmann::json row = {{"precision", s.precision}, {"weight_format", weight_format_name(s.options.weight_format)},
                              {"budget", budget},
                              {"residency", res},
                              {"tail_prefetch", ob.tail_prefetch},
                              {"staging_early", ob.staging_early},
                              {"tail_units", sp.tail_units},
                              {"tail_bytes", sp.tail_bytes()},
                              {"budget_bytes", std::max<int64_t>(m->budget_bytes, device)},
                              {"device_weight_bytes", device},
                              {"total_weight_bytes", sp.total_weight_bytes},
                              {"resident_bytes", sp.resident ? sp.total_weight_bytes : sp.resident_bytes},
                              {"pool_bytes", sp.resident ? 0 : sp.pool_bytes},
                              {"streamed_bytes", sp.streamed_bytes()},
                              {"preload_ms", s.preload},
                              {"predicted_ms", predicted},
                              {"lower_bound_ms", m->lower_bound_ms > 0 ? m->lower_bound_ms : s.preload},
                              {"kernel_times", s.used},
                              {"notes", m->notes}};
  rows->push_back(row);
  std::printf("%-10s %-13s %9.1f %7.1f%% %7.1f%% %9.3f ms %+9.1f%% %7.3f ms %9.1f %9.1f %9s\n", s.precision.c_str(),
              budget.c_str(), mib(device), 100.0 * double(device) / total, 100.0 * (1.0 - double(device) / total),
              predicted, 100.0 * (predicted / s.preload - 1.0), row["lower_bound_ms"].get<double>(),
              mib(row["resident_bytes"]), mib(row["pool_bytes"]),
              (res + (sp.tail_units > 0 ? " +tail " + std::to_string(sp.tail_units) : "") +
               (ob.staging_early ? "" : " +late"))
                  .c_str());
  return Status();
}

// The rows of one precision: every budget, every --residency item (one for min and all).
Status simulate_precision(const Args& a, const NetworkDesc& net, const Simulated& s, const std::string& budgets,
                          nlohmann::json* rows) {
  const int64_t total_bytes = s.minimal.plan.weight_bytes();
  for (const std::string& budget : split(budgets)) {
    DLR_ASSIGN_OR_RETURN(const WeightBudget wb, WeightBudget::parse(budget));
    const int64_t want = wb.resolve(total_bytes, s.minimal.stream.device_bytes());
    if (want < s.minimal.stream.device_bytes()) {
      DLR_RETURN_IF_ERROR(bound_only_row(a, s, budget, want, rows));
      continue;
    }
    const std::vector<std::string> residencies = split(a.session.text("residency"));
    for (const std::string& res : residencies) {
      if ((budget == "min" || budget == "all") && res != residencies.front()) continue;
      for (const std::string& tail : split(a.session.text("tail_prefetch")))
        for (const std::string& early : split(a.session.text("staging_early")))
          DLR_RETURN_IF_ERROR(planned_row(net, s, budget, {res, tail, early}, rows));
    }
  }
  return Status();
}

// The checks before any work, the copy profile, and the budgets: --weight-budget's, else
// the curve (--budget-curve N, default 16).
Status simulation_inputs(const Args& a, const NetworkDesc& net, CopyProfile* profile, std::string* budgets) {
  if (a.layer_ms_from.empty()) return invalid_argument("--simulate-only needs --layer-ms-from FILE");
  if (split(a.session.text("weight_format")).size() != 1)
    return invalid_argument("--simulate-only takes one --weight-format, not a list");
  const std::string copy_profile = a.session.text("copy_profile");
  if (a.profile_from_row) {
    if (a.session.changed("copy_profile"))
      return invalid_argument("--profile-from-row takes the row's copy profile: give it or --copy-profile, not both");
    DLR_ASSIGN_OR_RETURN(*profile, row_copy_profile(a));
  } else if (copy_profile == "auto") {
    return invalid_argument("--simulate-only needs a named --copy-profile (a built-in or a JSON file) or "
                            "--profile-from-row: auto is measured on a GPU");
  } else {
    DLR_ASSIGN_OR_RETURN(*profile, CopyProfile::resolve(copy_profile));
  }
  *budgets = a.session.text("weight_budget");
  if (!a.session.changed("weight_budget") || a.budget_curve > 0) {
    DLR_ASSIGN_OR_RETURN(*budgets, curve_budgets(net, split(a.session.text("precision")), a.granularity,
                                                 a.budget_curve > 0 ? a.budget_curve : 16));
  }
  return Status();
}

Status run_simulation(const Args& a, const NetworkDesc& net) {
  CopyProfile profile;
  std::string budgets;
  DLR_RETURN_IF_ERROR(simulation_inputs(a, net, &profile, &budgets));
  nlohmann::json all;
  all["mode"] = "simulate-only";
  all["cfg"] = a.cfg;
  all["size"] = net.net.width;
  all["copy_profile"] = profile.name;
  all["layer_ms_from"] = a.layer_ms_from;
  all["scale_preload_ms"] = a.scale_preload_ms;
  all["granularity"] = a.granularity;
  all["rows"] = nlohmann::json::array();
  print_header();
  for (const std::string& prec : split(a.session.text("precision"))) {
    DLR_ASSIGN_OR_RETURN(const Simulated s, simulated(a, net, profile, prec));
    DLR_RETURN_IF_ERROR(simulate_precision(a, net, s, budgets, &all["rows"]));
  }
  if (!a.json.empty() && !write_json(a.json, all)) return io_error(a.json + ": cannot write");
  return Status();
}

}  // namespace

Expected<std::vector<double>> layer_ms_from_json(const std::string& path, const std::string& precision,
                                                 const std::string& config, std::string* used,
                                                 std::vector<double>* expand_ms) {
  std::vector<double> ms;
  DLR_ASSIGN_OR_RETURN(const nlohmann::json r, layer_ms_result(path, precision, config, &ms, used));
  if (expand_ms == nullptr) return ms;
  expand_ms->clear();
  if (!r.contains("stream") || !r["stream"].contains("expand_ms_at_open") || used->find("at open") == std::string::npos)
    return ms;
  try {
    *expand_ms = r["stream"]["expand_ms_at_open"].get<std::vector<double>>();
  } catch (const nlohmann::json::exception& e) {
    return parse_error("--layer-ms-from " + path + ": stream.expand_ms_at_open: " + printable(e.what()));
  }
  if (expand_ms->size() != ms.size())
    return parse_error("--layer-ms-from " + path + ": " + std::to_string(expand_ms->size()) + " expansion times for " +
                       std::to_string(ms.size()) + " kernel times");
  for (double v : *expand_ms)
    if (!std::isfinite(v) || v < 0)
      return parse_error("--layer-ms-from " + path + ": an expansion time is negative or not finite");
  *used += ", with the int8 expansions' part";
  return ms;
}

int simulate_only(const Args& a, const NetworkDesc& net) {
  const Status st = run_simulation(a, net);
  return st.ok() ? kExitOk : fail("dlbench", st);
}

}  // namespace dlr::tools
