#include "runtime/cache/fused_plan_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/cache/cache_dir.h"

namespace dlr {
namespace {
constexpr int kFormat = 2;

// One entry of "plans"; errors name the convolution.
Expected<FusedPlanEntry> parse_entry(const std::string& conv, const nlohmann::json& j) {
  const std::string where = "convolution '" + conv + "': ";
  if (conv.empty() || !j.is_object()) return parse_error(where + "the entry is not an object");
  const auto plan = j.find("plan");
  if (plan == j.end() || !plan->is_string()) return parse_error(where + "no plan string");
  FusedPlanEntry e;
  e.plan = plan->get<std::string>();
  for (auto [name, dst] : {std::pair<const char*, double*>{"graph_ms", &e.graph_ms}, {"epilogue_ms", &e.epilogue_ms}}) {
    const auto v = j.find(name);
    if (v == j.end()) continue;
    if (!v->is_number() || !(v->get<double>() >= -1)) return parse_error(where + name + " is not a time");
    *dst = v->get<double>();
  }
  if (e.plan.empty() && !e.measured()) return parse_error(where + "an empty plan without both measured times");
  return e;
}
}  // namespace

ConvAlgoKey fused_plans_key(const ConvAlgoKey& algos, const std::string& model_name) {
  ConvAlgoKey k = algos;
  k.model = model_name;
  return k;
}

std::string format_fused_plans(const ConvAlgoKey& key, const FusedPlanMap& plans) {
  nlohmann::json j = {{"format", kFormat}, {"key", key.text()}, {"plans", nlohmann::json::object()}};
  for (const auto& [conv, e] : plans)
    j["plans"][conv] = {{"plan", e.plan}, {"graph_ms", e.graph_ms}, {"epilogue_ms", e.epilogue_ms}};
  return j.dump(1) + "\n";
}

Expected<FusedPlanMap> parse_fused_plans(const std::string& text, const ConvAlgoKey& key) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return parse_error("not a JSON document");
  }
  if (!j.is_object()) return parse_error("not a JSON object");
  const auto format = j.find("format");
  if (format == j.end() || !format->is_number_integer() || format->get<int64_t>() != kFormat)
    return parse_error("format is not " + std::to_string(kFormat));
  const auto k = j.find("key");
  if (k == j.end() || !k->is_string()) return parse_error("no key");
  if (k->get<std::string>() != key.text()) return parse_error("made for another GPU, cuDNN or model");
  const auto plans = j.find("plans");
  if (plans == j.end() || !plans->is_object()) return parse_error("no plans object");
  FusedPlanMap out;
  for (auto it = plans->begin(); it != plans->end(); ++it) {
    DLR_ASSIGN_OR_RETURN(out[it.key()], parse_entry(it.key(), it.value()));
  }
  return out;
}

Expected<std::string> fused_plans_path(const std::string& model_name, const ConvAlgoKey& key) {
  return keyed_cache_file("fused-plans", model_name, key.text());
}

FusedPlanMap load_fused_plans(const std::string& path, const ConvAlgoKey& key, std::string* reason) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return {};
  std::ifstream f(path, std::ios::binary);
  if (!f || !S_ISREG(st.st_mode)) {
    *reason = path + ": cannot be read as a file";
    return {};
  }
  std::stringstream ss;
  ss << f.rdbuf();
  Expected<FusedPlanMap> parsed = parse_fused_plans(ss.str(), key);
  if (!parsed.ok()) {
    *reason = path + ": " + parsed.status().message();
    return {};
  }
  return std::move(parsed).value();
}

Status save_fused_plans(const std::string& path, const ConvAlgoKey& key, const FusedPlanMap& plans) {
  return write_file_atomic(path, format_fused_plans(key, plans), "the fused-plan cache");
}

}  // namespace dlr
