#include "runtime/cache/kernel_times_cache.h"

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

#include "runtime/cache/cache_dir.h"
#include "runtime/compile/slice_choice.h"
#include "runtime/streaming/copy_profile_json.h"

namespace dlr {
namespace {

// 2: the last layer carries the fixed cost of an inference (launch, output downloads;
// CudaEngine::measure_layer_ms). 3: the downloads of all but the last output layer run
// under the later layers (cuda_engine_outputs.cpp), so that cost is smaller. 4: the part
// of each step's time that expands int8 weights is kept beside (expand_ms). Files of an
// older format are measured again.
constexpr int kFormat = 4;

// Per step, finite and >= 0, one per step.
bool plausible_times(const std::vector<double>& ms, size_t steps) {
  if (ms.size() != steps) return false;
  for (double v : ms)
    if (!(v >= 0 && v < 1e6)) return false;
  return true;
}

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

std::vector<double> load_kernel_times(const CompiledModel& model, std::vector<double>* expand_ms) {
  if (expand_ms != nullptr) expand_ms->clear();
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
    if (!plausible_times(ms, model.plan.steps.size())) return {};
    if (expand_ms != nullptr && j.contains("expand_ms")) {
      std::vector<double> ex = j.at("expand_ms").get<std::vector<double>>();
      if (!ex.empty() && !plausible_times(ex, ms.size())) return {};
      *expand_ms = std::move(ex);
    }
    return ms;
  } catch (const nlohmann::json::exception&) {
    return {};
  }
}

namespace {

// The parsed file of `model` when its key matches (null otherwise).
nlohmann::json read_doc(const CompiledModel& model) {
  const Expected<std::string> path = kernel_times_path(model);
  if (!path.ok()) return nullptr;
  std::ifstream f(*path);
  if (!f) return nullptr;
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    nlohmann::json j = nlohmann::json::parse(ss.str());
    if (!j.is_object() || j.value("format", 0) != kFormat || j.value("key", std::string()) != key_text(model))
      return nullptr;
    return j;
  } catch (const nlohmann::json::exception&) {
    return nullptr;
  }
}

Status write_doc(const std::string& path, const nlohmann::json& j) {
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

}  // namespace

Status save_kernel_times(const CompiledModel& model, const std::vector<double>& layer_ms,
                         const std::vector<double>& expand_ms) {
  DLR_ASSIGN_OR_RETURN(const std::string path, kernel_times_path(model));
  nlohmann::json j = {{"format", kFormat}, {"key", key_text(model)}, {"layer_ms", layer_ms}};
  if (!expand_ms.empty()) j["expand_ms"] = expand_ms;
  return write_doc(path, j);
}

bool load_calibrated_profile(const CompiledModel& model, const CopyProfile& probed, CopyProfile* calibrated) {
  const nlohmann::json j = read_doc(model);
  if (!j.is_object() || !j.contains("copy_calibration")) return false;
  try {
    const nlohmann::json& c = j.at("copy_calibration");
    if (c.at("probed").get<std::string>() != probed.to_json_text()) return false;
    Expected<CopyProfile> p = copy_profile_from_json(c.at("profile"), "kernel-times cache: copy_calibration.profile");
    if (!p.ok()) return false;
    *calibrated = std::move(*p);
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

Status save_calibrated_profile(const CompiledModel& model, const CopyProfile& probed, const CopyProfile& calibrated) {
  DLR_ASSIGN_OR_RETURN(const std::string path, kernel_times_path(model));
  nlohmann::json j = read_doc(model);
  if (!j.is_object() || !j.contains("layer_ms"))
    return invalid_argument(path + ": no kernel times of this model to keep the calibrated copy profile beside");
  j["copy_calibration"] = {{"probed", probed.to_json_text()}, {"profile", copy_profile_to_json(calibrated)}};
  return write_doc(path, j);
}

bool load_slice_axes(const CompiledModel& model, std::map<int, SliceAxis>* axes) {
  const nlohmann::json j = read_doc(model);
  if (!j.is_object() || !j.contains("slice_axes") || !j.at("slice_axes").is_string()) return false;
  Expected<std::map<int, SliceAxis>> a = slice_axes_from_text(j.at("slice_axes").get<std::string>());
  if (!a.ok()) return false;
  *axes = std::move(*a);
  return true;
}

Status save_slice_axes(const CompiledModel& model, const std::map<int, SliceAxis>& axes) {
  DLR_ASSIGN_OR_RETURN(const std::string path, kernel_times_path(model));
  nlohmann::json j = read_doc(model);
  if (!j.is_object() || !j.contains("layer_ms"))
    return invalid_argument(path + ": no kernel times of this model to keep the slicing axes beside");
  j["slice_axes"] = slice_axes_to_text(axes);
  return write_doc(path, j);
}

}  // namespace dlr
