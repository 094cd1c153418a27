// dlbench on one network (every mode but --models): --startup-floor, --simulate-only,
// or the configurations measured one after another (each in a process of its own with
// --isolate), printed as a table and written to --json.
#pragma once

#include "tools/dlbench/args.h"

namespace dlr::tools {

// Returns the exit code: 0 ok, 1 error (also when one configuration failed).
int run_bench(const Args& a);

}  // namespace dlr::tools
