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

// user_cache_dir()/<subdir>/<model_name>-<16 hex>.json, the hex an XXH3-64 of key_text;
// creates the subdirectory. The file of one model's choices kept per GPU (conv-algos,
// fused-plans).
Expected<std::string> keyed_cache_file(const std::string& subdir, const std::string& model_name,
                                       const std::string& key_text);

// Writes `text` to `path` atomically (a temporary file beside it, then rename); errors
// name the file and `what` ("the conv-algorithm cache").
Status write_file_atomic(const std::string& path, const std::string& text, const std::string& what);

}  // namespace dlr
