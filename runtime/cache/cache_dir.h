// The user's cache directory for what dlrun keeps between runs (prepared weight
// files, copy profiles per GPU). One rule for every cache user.
#pragma once

#include <string>

#include "runtime/core/status.h"

namespace dlr {

// $DLR_CACHE_DIR if set and non-empty, else $XDG_CACHE_HOME/dlrun, else
// $HOME/.cache/dlrun. Created (mode 0700, parents as needed) when missing.
// Errors name the directory and the fix (set DLR_CACHE_DIR to a writable place).
Expected<std::string> user_cache_dir();

}  // namespace dlr
