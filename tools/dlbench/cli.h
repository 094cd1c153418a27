// dlbench's command line: every flag, in the order --help lists them.
#pragma once

#include <CLI/CLI.hpp>

#include "runtime/core/status.h"
#include "tools/dlbench/args.h"
#include "tools/dlbench/models.h"

namespace dlr::tools {

// Adds the positional cfg and every flag: --models' into *mb and *no_isolate_baselines,
// the others into *a. The pointers must outlive the parse.
void add_options(CLI::App& app, Args* a, ModelsBenchArgs* mb, bool* no_isolate_baselines);

// --models' arguments once parsed: *mb plus the flags it shares with one network (device,
// precision, copy profile, rounds, seed, threads, --json) and the session flags it hands
// to the runtime's models (--slot-size, --slice-by, --stage-whole). Any other session
// flag given is an error naming it.
Expected<ModelsBenchArgs> models_args(const CLI::App& app, const Args& a, const ModelsBenchArgs& mb,
                                      bool no_isolate_baselines);

}  // namespace dlr::tools
