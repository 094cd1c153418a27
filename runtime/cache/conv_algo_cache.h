// cuDNN convolution algorithm choices kept per GPU and model in the user's cache
// directory (runtime/cache/cache_dir.h), so that a later open of the same model on the same
// GPU creates its convolutions with the stored algorithms instead of asking cuDNN
// (cudnnGetConvolutionForwardAlgorithm_v7 or cudnnFind) for each. Plain C++ (the file
// format and the key): the CUDA engine (runtime/cuda/cuda_engine_convs.cpp) fills and uses it.
//
// File: user_cache_dir()/conv-algos/<model>-<16 hex>.json, the hex an XXH3-64 of
// ConvAlgoKey::text(); inside {"format": 2, "key": <text>, "algos": {<conv>: {"algo":
// <int>, "workspace": <bytes>[, "ms": <time>]}}} where <conv> is CudnnConv::config_key
// (every geometry and configuration field, no device ordinal), <int> a
// cudnnConvolutionFwdAlgo_t value (or the CUDA engine's kAlgo3xTf32 or kAlgo3xTf32Gemm, one
// and two past them: the conv runs as a 3xTF32 conv, chunked or as GEMMs), <bytes> what cudnnGetConvolutionForwardWorkspaceSize
// answered for it and <time> the GPU time per run of the kept algorithm where the open
// measured the candidates (strict fp32, runtime/cuda/algo_choice.cpp; absent: cuDNN's
// choice, not timed). A file whose
// format, key or entries do not check out is ignored (a warning says why) and rewritten
// by the open that chose again; writes are atomic (temporary file, rename). Format 1
// (algorithms without their workspace) is ignored that way too.
//
// The workspace sizes are trusted: an open that takes a stored algorithm with its size
// does not ask cuDNN again, so a warm open makes no cuDNN call for a cached
// convolution (docs/streaming.md section 9). That is safe only because the key holds
// everything the size depends on: the GPU (UUID), the cuDNN library (version), the
// model (the hash of its plan: every conv's geometry, dtypes and layouts), the
// precision (math type), the layout, the policy and the workspace limit. A size is
// still checked against the key's limit (0..limit, else the file is ignored).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "runtime/core/status.h"

namespace dlr {

// What makes stored choices valid: the GPU, the cuDNN library, the model and the
// choice's settings. Two keys with any field different name two files.
struct ConvAlgoKey {
  std::string gpu_uuid;        // 32 hex digits (cudaDeviceProp::uuid)
  int64_t cudnn_version = 0;   // cudnnGetVersion()
  std::string model;           // the compiled model's identity: its name and the XXH3-64 hex of ExecutionPlan::to_text()
  std::string precision;       // precision_name()
  std::string layout;          // layout_name() of the plan (NCHW / NHWC)
  std::string policy;          // "heuristic" or "find"
  int64_t workspace_limit = 0; // bytes
  std::string text() const;    // one canonical line per field
};

struct CompiledModel;
// The key of `model`'s choices on the GPU `gpu_uuid` with cuDNN `cudnn_version`: the
// model's identity is the hash of its execution plan's text (every step's op, shapes,
// layouts and dtypes), as the kernel-times cache uses it; precision, layout, policy
// and workspace limit from the model's engine settings and plan.
ConvAlgoKey conv_algo_key(const CompiledModel& model, const std::string& gpu_uuid, int64_t cudnn_version);

// One convolution's stored choice.
struct ConvAlgoChoice {
  int algo = 0;           // cudnnConvolutionFwdAlgo_t value
  int64_t workspace = 0;  // bytes it needs (cudnnGetConvolutionForwardWorkspaceSize), 0..workspace limit
  double ms = -1;         // GPU time per run measured at open against the other candidates (-1: not timed)
  bool measured() const { return ms >= 0; }
  bool operator==(const ConvAlgoChoice& o) const { return algo == o.algo && workspace == o.workspace && ms == o.ms; }
  bool operator!=(const ConvAlgoChoice& o) const { return !(*this == o); }
};
// conv config key -> its choice.
using ConvAlgoMap = std::map<std::string, ConvAlgoChoice>;

// The JSON text of a cache file.
std::string format_conv_algos(const ConvAlgoKey& key, const ConvAlgoMap& algos);
// Parses a cache file's text. Errors (one line, for the warning that the file is
// ignored): not JSON, another format (format 1 named as such), another key (names the
// differing line), an algorithm outside [0, algo_count), a workspace that is not an
// integer in [0, key.workspace_limit], a time that is not a number >= 0, an empty conv key.
Expected<ConvAlgoMap> parse_conv_algos(const std::string& text, const ConvAlgoKey& key, int algo_count);

// The cache file of `model_name` (cfg file name) and `key`; creates the directory.
Expected<std::string> conv_algos_path(const std::string& model_name, const ConvAlgoKey& key);

enum class ConvAlgoLoad : uint8_t { kAbsent, kLoaded, kIgnored };
struct ConvAlgoLoadResult {
  ConvAlgoLoad state = ConvAlgoLoad::kAbsent;
  ConvAlgoMap algos;   // kLoaded only
  std::string reason;  // kIgnored: why ("<path>: ..."), for the warning
};
// Reads `path`: absent (no file), loaded, or ignored (unreadable or a failed parse).
ConvAlgoLoadResult load_conv_algos(const std::string& path, const ConvAlgoKey& key, int algo_count);
// Writes atomically (temporary file in the same directory, rename). Errors name the file.
Status save_conv_algos(const std::string& path, const ConvAlgoKey& key, const ConvAlgoMap& algos);

}  // namespace dlr
