#include "tools/dlbench/budget_curve.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/compile/compile.h"
#include "tools/common/session_flags.h"
#include "tools/dlbench/stats.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr::tools {
namespace {

// The minimal pool of `precision` in % of the weights.
Expected<double> minimal_pool_pct(const NetworkDesc& net, const std::string& precision, int64_t granularity) {
  Target t;
  t.device = DeviceKind::kCUDA;
  t.name = "curve budgets";
  t.map_granularity = granularity;
  t.copy_profile = *CopyProfile::builtin("h100");
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.mode = WeightMode::kStream;
  DLR_RETURN_IF_ERROR(set_session_flag(FlagTool::kDlbench, "precision", precision, &o));
  DLR_ASSIGN_OR_RETURN(CompiledModel m, compile(net, t, o));
  const double total = double(m.plan.weight_bytes());
  if (total <= 0) return invalid_argument("--budget-curve: the network has no weights");
  return 100.0 * double(m.stream.device_bytes()) / total;
}

}  // namespace

Expected<std::string> curve_budgets(const NetworkDesc& net, const std::vector<std::string>& precisions,
                                    int64_t granularity, int n) {
  if (n < 2) return invalid_argument("--budget-curve " + std::to_string(n) + ": at least 2 budgets");
  double min_pct = 0;
  for (const std::string& p : precisions) {
    DLR_ASSIGN_OR_RETURN(const double pct, minimal_pool_pct(net, p, granularity));
    min_pct = std::max(min_pct, pct);
  }
  std::string list = "min";
  for (int i = 1; i + 1 < n; ++i) {
    const double pct = std::ceil(10.0 * (min_pct + (100.0 - min_pct) * double(i) / double(n - 1))) / 10.0;
    if (pct >= 100.0) break;
    char buf[32];
    std::snprintf(buf, sizeof buf, ",%.1f%%", pct);
    list += buf;
  }
  return list + ",all";
}

Status use_budget_curve(Args* a) {
#ifdef DLR_HAVE_CUDA
  DLR_ASSIGN_OR_RETURN(const NetworkDesc net, parse_network_cfg(a->cfg, CfgOptions{a->size, a->size}));
  DLR_ASSIGN_OR_RETURN(const Target target, cuda_target(0, ""));
  DLR_ASSIGN_OR_RETURN(const std::string budgets,
                       curve_budgets(net, split(a->session.text("precision")), target.map_granularity,
                                     a->budget_curve));
  // and the budget auto picks (--max-slowdown), measured in the same run
  a->session.set("weight_budget", budgets + ",auto");
  a->session.set("mode", "preload,stream");
  a->session.set("weight_pool", "ring");
  // Every row the first CUDA session of its process (tools/dlbench/isolate.h).
  if (!a->no_isolate) a->isolate = true;
  return Status();
#else
  (void)a;
  return invalid_argument("--budget-curve measures on a GPU: this build has no CUDA backend (--simulate-only "
                          "predicts without one)");
#endif
}

}  // namespace dlr::tools
