// dlbench: latency, throughput and memory of dlrun configurations, several in
// one invocation so that ratios come from the same run. Prints a table on
// stdout and, with --json, writes every number to a file.
// Exit: 0 ok, 1 error, 2 usage error.
#include <cstdio>

#include "runtime/core/log.h"
#include "tools/common/command_line.h"
#include "tools/common/process_exit.h"
#include "tools/common/tool_support.h"
#include "tools/dlbench/cli.h"
#include "tools/dlbench/models.h"
#include "tools/dlbench/run.h"
#include "tools/dlbench/startup.h"
#include "tools/dlbench/stats.h"

namespace {

int tool_main(int argc, char** argv) {
  dlr::tools::note_process_start();
  dlr::init_logging();
  dlr::tools::Args a;
  dlr::tools::ModelsBenchArgs mb;
  bool no_isolate_baselines = false;
  CLI::App app{"dlbench: latency, throughput and memory of dlrun configurations", "dlbench"};
  dlr::tools::add_options(app, &a, &mb, &no_isolate_baselines);
  a.argv.assign(argv, argv + argc);
  if (const int rc = dlr::tools::parse_command_line(app, argc, argv, "dlbench"); rc >= 0) return rc;
  // This thread runs the inferences; the threads the sessions start inherit its placement.
  if (const dlr::Status placed = dlr::tools::apply_thread_flags(a.session); !placed.ok()) {
    std::fprintf(stderr, "dlbench: %s\n", placed.message().c_str());
    return dlr::tools::kExitUsage;
  }
  if (!mb.models.empty()) {
    dlr::Expected<dlr::tools::ModelsBenchArgs> m = dlr::tools::models_args(app, a, mb, no_isolate_baselines);
    if (!m.ok()) {
      std::fprintf(stderr, "dlbench: %s\n", m.status().message().c_str());
      return dlr::tools::kExitUsage;
    }
    return dlr::tools::run_models_bench(*m);
  }
  if (a.hold_gpu) return dlr::tools::hold_gpu();
  if (a.cfg.empty() && !a.startup_floor) {
    std::fprintf(stderr, "dlbench: give a cfg (or --models, or --startup-floor)\n");
    return dlr::tools::kExitUsage;
  }
  if (!a.simulate_only && (!a.layer_ms_from.empty() || !a.layer_ms_config.empty() || a.scale_preload_ms > 0 ||
                           a.profile_from_row)) {
    std::fprintf(stderr, "dlbench: --layer-ms-from, --layer-ms-config, --scale-preload-ms and --profile-from-row go "
                         "with --simulate-only\n");
    return dlr::tools::kExitUsage;
  }
  if (a.weights.empty() && !a.synthetic && !a.simulate_only && !a.startup_floor) {
    std::fprintf(stderr, "dlbench: give --weights FILE or --synthetic\n");
    return dlr::tools::kExitUsage;
  }
  return dlr::tools::run_bench(a);
}

}  // namespace

int main(int argc, char** argv) {
  // Ends here without teardown when a CUDA run in its own process left its session (process_exit.h).
  return dlr::tools::finish_process(dlr::tools::guarded_main("dlbench", [&] { return tool_main(argc, argv); }));
}
