// cuDNN graph plans of fused convolutions (kernels/cuda/conv_graph.h) kept per GPU and
// model in the user's cache directory (runtime/cache/cache_dir.h): building them
// compiles kernels at run time (tens to hundreds of ms each), loading cuDNN's serialised
// plan does not. Plain C++ (the file format); the CUDA engine fills and uses it
// (runtime/cuda/cuda_engine_convs.cpp) under the same switch as the algorithm choices.
//
// File: user_cache_dir()/fused-plans/<model>-<16 hex>.json, the hex an XXH3-64 of the key
// text (ConvAlgoKey::text(): GPU UUID, cuDNN version, the model's plan hash, precision,
// layout, policy, workspace limit); inside {"format": 1, "key": <text>, "plans":
// {<FusedConv::key>: <cuDNN's plan JSON text>}}. A file whose format or key does not
// check out is ignored (a warning says why) and rewritten; a plan cuDNN refuses to load
// is built again and replaced. Writes are atomic (temporary file, rename).
#pragma once

#include <map>
#include <string>

#include "runtime/cache/conv_algo_cache.h"
#include "runtime/core/status.h"

namespace dlr {

using FusedPlanMap = std::map<std::string, std::string>;  // FusedConv::key -> plan JSON text

std::string format_fused_plans(const ConvAlgoKey& key, const FusedPlanMap& plans);
// Errors (one line): not JSON, another format, another key, a plan that is not a string.
Expected<FusedPlanMap> parse_fused_plans(const std::string& text, const ConvAlgoKey& key);
// The file of `model_name` and `key`; creates the directory.
Expected<std::string> fused_plans_path(const std::string& model_name, const ConvAlgoKey& key);
// Reads `path`: an absent file gives an empty map; an unreadable or invalid one too, with
// *reason set (for the warning).
FusedPlanMap load_fused_plans(const std::string& path, const ConvAlgoKey& key, std::string* reason);
Status save_fused_plans(const std::string& path, const ConvAlgoKey& key, const FusedPlanMap& plans);

}  // namespace dlr
