// cuDNN graph plans of fused convolutions (kernels/cuda/conv_graph.h) kept per GPU and
// model in the user's cache directory (runtime/cache/cache_dir.h): building them
// compiles kernels at run time (tens to hundreds of ms each), loading cuDNN's serialised
// plan does not. Plain C++ (the file format); the CUDA engine fills and uses it
// (runtime/cuda/cuda_engine_convs.cpp) under the same switch as the algorithm choices.
//
// File: user_cache_dir()/fused-plans/<model>-<16 hex>.json, the hex an XXH3-64 of the key
// text (fused_plans_key: GPU UUID, cuDNN version, the model's name, precision, layout,
// policy, workspace limit). The model's plan is not in the key: each entry's
// FusedConv::key names the whole configuration, so the preload and the streamed plans of
// a model share one file, and with it one choice per configuration (the same kernels,
// the same bits); inside {"format": 4, "key": <text>, "plans":
// {<FusedConv::key>: {"plan": <cuDNN's plan JSON text, or "" where the graph is not
// used>, "graph_ms": <GPU time per run>, "epilogue_ms": <the same, conv + epilogue
// pass>}}}, the times measured at open (-1: not measured). An empty plan records that
// the graph was measured slower than the conv with its epilogue pass, so later opens
// neither build nor time it. A file whose format or key does not check out is ignored (a
// warning says why) and rewritten; a plan cuDNN refuses to load is built again and
// replaced. Writes are atomic (temporary file, rename).
#pragma once

#include <map>
#include <string>

#include "runtime/cache/conv_algo_cache.h"
#include "runtime/core/status.h"

namespace dlr {

// One fused configuration's plan and the choice made for it.
struct FusedPlanEntry {
  std::string plan;          // cuDNN's plan JSON text; empty: run as conv + epilogue pass
  double graph_ms = -1;      // GPU time per run of the graph, measured at open (-1: not measured)
  double epilogue_ms = -1;   // the same for the conv and its epilogue pass
  bool measured() const { return graph_ms >= 0 && epilogue_ms >= 0; }
  bool operator==(const FusedPlanEntry& o) const {
    return plan == o.plan && graph_ms == o.graph_ms && epilogue_ms == o.epilogue_ms;
  }
  bool operator!=(const FusedPlanEntry& o) const { return !(*this == o); }
};

using FusedPlanMap = std::map<std::string, FusedPlanEntry>;  // FusedConv::key -> entry

// The algorithm cache's key with the model's name alone in place of its plan's identity.
ConvAlgoKey fused_plans_key(const ConvAlgoKey& algos, const std::string& model_name);

std::string format_fused_plans(const ConvAlgoKey& key, const FusedPlanMap& plans);
// Errors (one line): not JSON, another format, another key, an entry without a plan
// string, a time that is not a number, an empty plan without both times.
Expected<FusedPlanMap> parse_fused_plans(const std::string& text, const ConvAlgoKey& key);
// The file of `model_name` and `key`; creates the directory.
Expected<std::string> fused_plans_path(const std::string& model_name, const ConvAlgoKey& key);
// Reads `path`: an absent file gives an empty map; an unreadable or invalid one too, with
// *reason set (for the warning).
FusedPlanMap load_fused_plans(const std::string& path, const ConvAlgoKey& key, std::string* reason);
Status save_fused_plans(const std::string& path, const ConvAlgoKey& key, const FusedPlanMap& plans);

}  // namespace dlr
