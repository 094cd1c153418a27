#include "tools/dlbench/run.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"
#include "loaders/synthetic_weights.h"
#include "runtime/backend.h"
#include "tools/common/tool_support.h"
#include "tools/dlbench/budget_curve.h"
#include "tools/dlbench/config.h"
#include "tools/dlbench/isolate.h"
#include "tools/dlbench/measure.h"
#include "tools/dlbench/simulate_only.h"
#include "tools/dlbench/startup.h"
#include "tools/dlbench/startup_report.h"
#include "tools/common/session_flags.h"
#include "tools/dlbench/stats.h"
#include "tools/dlbench/table.h"
#include "tools/dlbench/temp_files.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr::tools {
namespace {

// The isolation options that do not combine.
Status check_isolation(const Args& a) {
  if (a.isolate && a.no_isolate) return invalid_argument("--isolate and --no-isolate contradict");
  if ((a.isolate || (a.budget_curve > 0 && !a.no_isolate)) && a.simulate)
    return invalid_argument("--simulate needs the profiled preload run in the same process as the stream rows: use "
                            "it with --no-isolate");
  if (a.no_isolate && a.budget_curve == 0)
    return invalid_argument("--no-isolate applies to --budget-curve (isolation is off without it)");
  return Status();
}

// Options that only a CUDA configuration reads are refused when no device is cuda: the
// shared flags of CUDA or stream mode (session_flags.h), --mode and --precision (the CPU's
// configurations run fp32 preload), and dlbench's own.
Status check_cuda_only(const Args& a) {
  for (const std::string& d : split(a.session.text("device")))
    if (d == "cuda") return Status();
  const std::pair<const char*, bool> cuda_only[] = {{"--mode", a.session.changed("mode")},
                                                    {"--precision", a.session.changed("precision")},
                                                    {"--find", a.find},
                                                    {"--warm-up-at-open", a.warm_up_at_open}};
  for (const auto& [name, set] : cuda_only)
    if (set) return flag_refused(name, FlagApplies::kCuda);
  for (const SessionFlag& r : session_flags())
    if ((r.applies == FlagApplies::kCuda || r.applies == FlagApplies::kCudaStream) && a.session.changed(r.option))
      return flag_refused(flag_name(r, FlagTool::kDlbench), FlagApplies::kCuda);
  return Status();
}

// The --startup report's own process (not its children): it makes no CUDA call, which
// would hold the GPU for its children (startup_report.h).
bool startup_parent(const Args& a) { return a.startup > 0 && a.config_index < 0; }

// dlbench's default device is cuda: without --device, a machine (or a build) with no usable
// GPU is told so up front, with the flag that benchmarks the CPU instead. The --startup
// report's children tell it in its place.
Status check_default_device(const Args& a) {
  if (a.session.changed("device") || startup_parent(a)) return Status();
  int64_t free_bytes = 0, total_bytes = 0;
  const Status st = device_memory_info(DeviceKind::kCUDA, 0, &free_bytes, &total_bytes);
  if (st.ok()) return st;
  return Status(st.code(), "no usable GPU for the default --device cuda (" + st.message() +
                               "): give --device cpu to benchmark the CPU");
}

// Every option checked before any work: bad --units whatever the modes, the CUDA-only
// options, every configuration's session options, then a default device without a GPU.
Status check_before_work(const Args& a) {
  SessionOptions scratch;
  for (const std::string& u : split(a.session.text("unit_search")))
    DLR_RETURN_IF_ERROR(set_session_flag(FlagTool::kDlbench, "unit_search", u, &scratch));
  DLR_RETURN_IF_ERROR(check_cuda_only(a));
  bool cuda = false;
  for (const Config& c : configs(a)) {
    DLR_RETURN_IF_ERROR(config_options(a, c).status());
    cuda = cuda || c.device == "cuda";
  }
  DLR_RETURN_IF_ERROR(check_startup_gpu(a, cuda));
  return check_default_device(a);
}

// --weights, or with --synthetic seeded weights written to a file removed at the end.
Expected<std::string> weights_file(const Args& a, const NetworkDesc& net, TempFiles* temps) {
  if (!a.synthetic) return a.weights;
  const std::string path = "/tmp/dlbench-" + std::to_string(::getpid()) + ".weights";
  temps->paths.push_back(path);
  SyntheticOptions so;
  so.seed = a.seed;
  DLR_RETURN_IF_ERROR(write_synthetic_weights(net, path, so));
  return path;
}

// The largest batch's network inputs, uniform in [0, 1) from --seed.
std::vector<float> bench_input(const Args& a, const NetworkDesc& net) {
  int max_batch = 1;
  for (const std::string& b : split(a.session.text("batch"))) max_batch = std::max(max_batch, std::atoi(b.c_str()));
  std::vector<float> input(size_t(max_batch) * size_t(net.input_shape().count()));
  std::mt19937 rng(uint32_t(a.seed));
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (float& v : input) v = u(rng);
  return input;
}

// --isolate: the copy profile auto is resolved here, once (probed on first use and
// cached), so that no child probes: the probe's own kernels and copies would slow the
// rest of its process, as another session's run does (tools/dlbench/isolate.h).
Status resolve_copy_profile_once(const Args& a, const std::vector<Config>& all) {
#ifdef DLR_HAVE_CUDA
  if (!a.isolate || a.config_index >= 0 || startup_parent(a) || a.session.text("copy_profile") != "auto") return Status();
  for (const Config& c : all)
    if (c.device == "cuda" && c.mode == "stream") return cuda_target(0, "auto").status();
#else
  (void)a;
  (void)all;
#endif
  return Status();
}

nlohmann::json run_json(const Args& a, const NetworkDesc& net) {
  nlohmann::json all;
  all["cfg"] = a.cfg;
  all["weights"] = a.synthetic ? std::string("synthetic seed ") + std::to_string(a.seed) : a.weights;
  all["size"] = net.net.width;
  all["gflops"] = net.total_gflops();
#ifdef DLR_HAVE_CUDA
  if (!startup_parent(a)) all["gpu"] = cuda_device_description(0);
#endif
  all["results"] = nlohmann::json::array();
  return all;
}

// Weight budget auto: the measured slowdown over preload's row of the same run (same
// device, precision, layout and batch; preload is listed before stream).
void add_measured_slowdown(const nlohmann::json& rows, nlohmann::json* r) {
  if (!r->contains("stream") || !(*r)["stream"].contains("auto_preload_predicted_ms")) return;
  for (const auto& p : rows)
    if (p["mode"] == "preload" && p["device"] == (*r)["device"] && p["precision"] == (*r)["precision"] &&
        p["layout"] == (*r)["layout"] && p["batch"] == (*r)["batch"]) {
      (*r)["stream"]["preload_measured_ms"] = p["network"]["median_ms"];
      (*r)["stream"]["measured_slowdown"] =
          (*r)["network"]["median_ms"].get<double>() / p["network"]["median_ms"].get<double>() - 1;
    }
}

// Every configuration (only --config-index's in a child of --isolate), each row printed
// as it comes; a configuration that fails is a line on stderr and the others go on.
int measure_configs(const Args& a, const std::string& weights, const std::vector<Config>& all,
                    const std::vector<float>& input, nlohmann::json* rows) {
  int rc = kExitOk;
  KernelTimes kernel_ms;
  for (size_t k = 0; k < all.size(); ++k) {
    const Config& c = all[k];
    if (a.config_index >= 0 && int(k) != a.config_index) continue;
    auto r = a.isolate && a.config_index < 0
                 ? run_config_in_child(a.argv, int(k), a.synthetic ? weights : std::string())
                 : measure_config(a, weights, c, input, &kernel_ms);
    if (!r.ok()) {
      std::fprintf(stderr, "dlbench: %s: %s\n", c.name().c_str(), r.status().message().c_str());
      rc = kExitError;
      continue;
    }
    add_measured_slowdown(*rows, &*r);
    print_row(*r);
    rows->push_back(*r);
  }
  return rc;
}

// --opencv's row, in the parent only (not in the children of --isolate).
int measure_opencv_row(const Args& a, const std::string& weights, int size, const std::vector<float>& input,
                       nlohmann::json* rows) {
  if (!a.opencv || a.config_index >= 0) return kExitOk;
#ifdef DLR_HAVE_OPENCV
  auto r = measure_opencv(a, weights, size, input);
  if (!r.ok()) {
    std::fprintf(stderr, "dlbench: opencv: %s\n", r.status().message().c_str());
    return kExitError;
  }
  print_row(*r);
  rows->push_back(*r);
  return kExitOk;
#else
  (void)weights;
  (void)size;
  (void)input;
  (void)rows;
  std::fprintf(stderr, "dlbench: --opencv needs a build with OpenCV\n");
  return kExitError;
#endif
}

// The configurations of `a` on `net`: the table, --report's top layers, --json.
int measure_network(const Args& a, const NetworkDesc& net, const std::string& weights) {
  const std::vector<float> input = bench_input(a, net);
  const std::vector<Config> all_configs = configs(a);
  if (a.config_index >= int(all_configs.size()))
    return fail("dlbench", invalid_argument("--config-index " + std::to_string(a.config_index) + ": there are " +
                                            std::to_string(all_configs.size()) + " configurations (0.." +
                                            std::to_string(all_configs.size() - 1) + ")"));
  nlohmann::json all = run_json(a, net);
  const Status profile = resolve_copy_profile_once(a, all_configs);
  if (!profile.ok()) return fail("dlbench", profile);
  if (a.startup > 0 && a.config_index < 0) {
    const int rc = startup_report(a, all_configs, weights, &all);
    if (!a.json.empty() && !write_json(a.json, all)) return fail("dlbench", a.json + ": cannot write");
    return rc;
  }
  print_table_header();
  int rc = measure_configs(a, weights, all_configs, input, &all["results"]);
  if (measure_opencv_row(a, weights, net.net.width, input, &all["results"]) != kExitOk) rc = kExitError;
  if (!a.report.empty()) print_top_layers(all["results"], net);
  if (!a.json.empty() && !write_json(a.json, all)) return fail("dlbench", a.json + ": cannot write");
  return rc;
}

// --simulate-only on the cfg at --size.
int simulate_cfg(const Args& a) {
  auto net = parse_network_cfg(a.cfg, CfgOptions{a.size, a.size});
  if (!net.ok()) return fail("dlbench", net.status());
  return simulate_only(a, *net);
}

}  // namespace

int run_bench(const Args& a_in) {
  Args a = a_in;
  if (a.startup_floor) return startup_floor(a);
  Status st = check_isolation(a);
  if (!st.ok()) return fail("dlbench", st);
  if (a.simulate_only) return simulate_cfg(a);
  if (a.budget_curve > 0) {  // N budgets from the minimum to all, preload in the same run
    st = use_budget_curve(&a);
    if (!st.ok()) return fail("dlbench", st);
  }
  st = check_before_work(a);
  if (!st.ok()) return fail("dlbench", st);
  auto net = parse_network_cfg(a.cfg, CfgOptions{a.size, a.size});
  if (!net.ok()) return fail("dlbench", net.status());
  TempFiles temps;
  const Expected<std::string> weights = weights_file(a, *net, &temps);
  if (!weights.ok()) return fail("dlbench", weights.status());
  return measure_network(a, *net, *weights);
}

}  // namespace dlr::tools
