// `--copy-profile auto`: the per-GPU cache and the choice between cache, probe and
// the nearest built-in.
#include "runtime/streaming/profile_select.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace dlr {
namespace {

bool is_hex32(const std::string& s) {
  if (s.size() != 32) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string describe(const GpuIdentity& g) {
  return (g.name.empty() ? std::string("this GPU") : g.name) + " (sm_" + std::to_string(g.major) +
         std::to_string(g.minor) + (g.integrated ? ", integrated" : "") + ")";
}

ResolvedProfile builtin_for(const GpuIdentity& gpu, const std::string& why) {
  ResolvedProfile r;
  const std::string name = nearest_builtin_profile(gpu);
  r.profile = *CopyProfile::builtin(name);  // the three names always exist
  r.source = "built-in '" + name + "', the nearest to " + describe(gpu) + " (not measured: " + why + ")";
  return r;
}

}  // namespace

std::string uuid_hex(const char* bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 16; ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::string nearest_builtin_profile(const GpuIdentity& gpu) {
  if (gpu.integrated) return "jetson-xavier";
  if (gpu.major == 9 && gpu.minor == 0) return "h100";
  return "discrete";
}

std::string cached_profile_path(const std::string& cache_dir, const std::string& uuid) {
  if (cache_dir.empty() || !is_hex32(uuid)) return "";
  std::string lower;
  for (char c : uuid) lower += char(std::tolower(static_cast<unsigned char>(c)));
  return cache_dir + "/copy-profile-" + lower + ".json";
}

Status save_cached_profile(const std::string& path, const CopyProfile& profile) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  DLR_RETURN_IF_ERROR(profile.save(tmp));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    return io_error("cannot write copy profile cache '" + path + "': " + err);
  }
  return Status();
}

ResolvedProfile resolve_auto_profile(const GpuIdentity& gpu, const std::string& cache_dir, const ProbeFunction& probe,
                                     const std::string& cache_problem) {
  const std::string path = cached_profile_path(cache_dir, gpu.uuid);
  std::string stale;
  if (!path.empty() && std::ifstream(path).good()) {
    Expected<CopyProfile> cached = CopyProfile::load(path);
    if (cached.ok()) {
      ResolvedProfile r;
      r.profile = std::move(*cached);
      r.source = "measured on this GPU, cached in " + path;
      r.cached = true;
      return r;
    }
    stale = "; the cached profile was unreadable (" + cached.status().message() + ") and is replaced";
  }
  if (!probe) return builtin_for(gpu, "probing is off" + stale);
  double seconds = 0;
  Expected<CopyProfile> probed = probe(&seconds);
  if (!probed.ok()) return builtin_for(gpu, "the probe failed: " + probed.status().message() + stale);
  ResolvedProfile r;
  r.profile = std::move(*probed);
  r.probed = true;
  char took[64];
  std::snprintf(took, sizeof took, "probed on first use in %.2f s", seconds);
  r.source = took;
  if (path.empty()) {
    r.source += !cache_problem.empty() ? ", not cached (" + cache_problem + ")"
                : cache_dir.empty()    ? ", not cached (no cache directory)"
                                       : ", not cached (the GPU has no UUID)";
  } else {
    const Status saved = save_cached_profile(path, r.profile);
    r.source += saved.ok() ? ", cached in " + path : ", not cached (" + saved.message() + ")";
  }
  r.source += stale;
  return r;
}

}  // namespace dlr
