// dlrun --cache list|clear: the prepared weight cache (runtime/storage/prepared_cache.h;
// docs/dlrun-io.md, "The prepared weight cache").
#pragma once

#include "tools/dlrun/options.h"

namespace dlr::tools {

// Runs --cache ACTION (list or clear) when given and returns the exit code; -1 when
// --cache was not given (dlrun runs as usual).
int run_cache_command(const Args& a);

}  // namespace dlr::tools
