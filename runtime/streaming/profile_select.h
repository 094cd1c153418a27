// `--copy-profile auto` (the default): the copy profile of the GPU in use, measured
// on it. The first open on a GPU probes its copy engine briefly and caches the
// profile per GPU (by UUID) in the user's cache directory (runtime/cache/cache_dir.h);
// later opens read the cache. Where probing is impossible the nearest built-in
// profile is used, and the caller logs which and why. The CUDA side (identity of
// the device, the probe itself) is in runtime/cuda/cuda_target.cpp; this file is the
// plain-C++ logic, testable without a GPU.
#pragma once

#include <functional>
#include <string>

#include "runtime/core/status.h"
#include "runtime/streaming/copy_profile.h"

namespace dlr {

// What selection needs to know of a GPU (cudaDeviceProp).
struct GpuIdentity {
  std::string uuid;         // 32 lowercase hex digits (cudaDeviceProp::uuid); "" if unknown
  std::string name;         // "NVIDIA H100 80GB HBM3"
  bool integrated = false;  // shares memory with the host (Jetson)
  int major = 0, minor = 0;  // compute capability
};

// The 16 bytes at `bytes` (a UUID) as 32 lowercase hex digits.
std::string uuid_hex(const char* bytes);

// The built-in profile nearest to a GPU: integrated -> "jetson-xavier", sm_90
// (Hopper: H100/H200, PCIe Gen5) -> "h100", anything else -> "discrete" (a
// conservative PCIe Gen4 card). Never "h100" for a non-Hopper GPU.
std::string nearest_builtin_profile(const GpuIdentity& gpu);

// <cache_dir>/copy-profile-<uuid>.json. Empty when the uuid is not 32 hex digits
// (nothing is cached for such a device).
std::string cached_profile_path(const std::string& cache_dir, const std::string& uuid);

// Writes the profile to `path` atomically (a temporary file in the same directory,
// then rename), so a concurrent reader sees the old file, the new one or none.
Status save_cached_profile(const std::string& path, const CopyProfile& profile);

// The profile `auto` resolves to and where it came from (one line for the log and
// for --print-plan): "cached in PATH", "probed in 0.41 s on first use, cached in
// PATH", or "built-in 'discrete', the nearest to ... (no probe: REASON)".
struct ResolvedProfile {
  CopyProfile profile;
  std::string source;
  bool probed = false;  // a probe ran in this call
  bool cached = false;  // read from the cache
};

// Probes the GPU (briefly); returns the profile and sets *seconds to the probe's wall time.
using ProbeFunction = std::function<Expected<CopyProfile>(double* seconds)>;

// The rule of `auto`: (1) a readable, valid cached profile for gpu.uuid in
// `cache_dir` (a corrupt one is probed again and replaced); (2) else `probe`, whose
// result is saved there (a failed save is reported in `source`, the profile still
// used); (3) else (no probe function, the probe failed, or no uuid) the nearest
// built-in. `cache_dir` empty: no cache (probe every time, unless `probe` is null).
// Never fails: a built-in always exists.
ResolvedProfile resolve_auto_profile(const GpuIdentity& gpu, const std::string& cache_dir, const ProbeFunction& probe,
                                     const std::string& cache_problem = "");

}  // namespace dlr
