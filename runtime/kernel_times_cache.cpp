#include "runtime/kernel_times_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <nlohmann/json.hpp>

#include "runtime/cache_dir.h"

namespace dlr {
namespace {

constexpr int kFormat = 1;

std::string key_text(const CompiledModel& m) {
  return m.plan.to_text() + "\nprecision " + precision_name(m.engine.precision) + " find " +
         std::to_string(m.engine.find_algorithms) + " workspace " + std::to_string(m.engine.workspace_limit) +
         "\ndevice " + m.target.name;
}

}  // namespace

Expected<std::string> kernel_times_path(const CompiledModel& model) {
  DLR_ASSIGN_OR_RETURN(std::string dir, user_cache_dir());
  dir += "/kernel-times";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return io_error("cache directory " + dir + ": cannot create it: " + std::strerror(errno) +
                    " (set DLR_CACHE_DIR to a writable directory)");
  const std::string key = key_text(model);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size())));
  return dir + "/" + model.model_name + "-" + hex + ".json";
}

std::vector<double> load_kernel_times(const CompiledModel& model) {
  const Expected<std::string> path = kernel_times_path(model);
  if (!path.ok()) return {};
  std::ifstream f(*path);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    const nlohmann::json j = nlohmann::json::parse(ss.str());
    if (j.value("format", 0) != kFormat || j.value("key", std::string()) != key_text(model)) return {};
    std::vector<double> ms = j.at("layer_ms").get<std::vector<double>>();
    if (ms.size() != model.plan.steps.size()) return {};
    for (double v : ms)
      if (!(v >= 0 && v < 1e6)) return {};
    return ms;
  } catch (const nlohmann::json::exception&) {
    return {};
  }
}

Status save_kernel_times(const CompiledModel& model, const std::vector<double>& layer_ms) {
  DLR_ASSIGN_OR_RETURN(const std::string path, kernel_times_path(model));
  const nlohmann::json j = {{"format", kFormat}, {"key", key_text(model)}, {"layer_ms", layer_ms}};
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp);
    f << j.dump() << "\n";
    if (!f) {
      std::remove(tmp.c_str());
      return io_error(tmp + ": cannot write the kernel-times cache");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return io_error(path + ": cannot write the kernel-times cache: " + why);
  }
  return Status();
}

}  // namespace dlr
