// dlbench --isolate: each configuration measured in a process of its own; also each
// model's preload baseline of dlbench --models (models.h).
//
// Why: where a CUDA session after the first of a process runs slower (the H100 of
// 2026-11-26; docs/streaming.md section 6, "Position in the process"), rows measured one
// after another in one process favour the first. In a process of its own every
// configuration is the first CUDA session.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/status.h"

namespace dlr::tools {

// What a child's command line drops (flags with a value, e.g. "--iters") and adds.
struct ChildArgs {
  std::vector<std::string> strip;
  std::vector<std::string> add;
};

// Runs this executable again (/proc/self/exe) with `args` (argv[0] first; argv[0] is
// only a name) plus --json FILE (a file of its own, removed after) and waits for it. The
// child's stdout is discarded, its stderr is this process's. Returns the object `key`
// of the child's JSON, or the only element of the array `key`; an error says how the child ended (killed by a
// signal, its exit code; the caller names what the child measured). An object gets
// "process_clock": {"spawn_ms", "reaped_ms"} (steady_clock_ms before the spawn and when
// waitpid returned) with the child's own "main_ms" and "written_ms" where its JSON had
// them (stats.h). One child at a time (not thread-safe).
Expected<nlohmann::json> run_self_in_child(const std::vector<std::string>& args, const std::string& key);

// Runs this executable again (/proc/self/exe) with `argv` (the parent's own command
// line, argv[0] first) less --isolate, --no-isolate and --json, plus --config-index
// `index` and a JSON file of its own; `synthetic_weights`, when not empty, replaces
// --synthetic with --weights FILE (the parent's seeded file: no second write). The
// child's stdout is discarded (the parent prints its row), its stderr is this
// process's; `more` drops and adds flags. Returns the child's only result row; an
// error says how the child ended (the caller names the configuration).
Expected<nlohmann::json> run_config_in_child(const std::vector<std::string>& argv, int index,
                                             const std::string& synthetic_weights, const ChildArgs& more = {});

}  // namespace dlr::tools
