#include "runtime/cache/fused_plan_cache.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "runtime/cache/cache_dir.h"
#include "runtime/cache/keyed_document_json.h"

namespace dlr {
namespace {
constexpr int kFormat = 4;  // 2: epilogue times of the pass before activate_f16; 3: keys without the data type

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

KeyedDocument document(const ConvAlgoKey& key) {
  return KeyedDocument{kFormat, key.text(), "plans", " (from an older dlrun: its keys or epilogue times are not this one's)"};
}

}  // namespace

ConvAlgoKey fused_plans_key(const ConvAlgoKey& algos, const std::string& model_name) {
  ConvAlgoKey k = algos;
  k.model = model_name;
  return k;
}

std::string format_fused_plans(const ConvAlgoKey& key, const FusedPlanMap& plans) {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [conv, e] : plans)
    entries[conv] = {{"plan", e.plan}, {"graph_ms", e.graph_ms}, {"epilogue_ms", e.epilogue_ms}};
  return format_keyed_document(document(key), std::move(entries));
}

Expected<FusedPlanMap> parse_fused_plans(const std::string& text, const ConvAlgoKey& key) {
  DLR_ASSIGN_OR_RETURN(const nlohmann::json plans_object, parse_keyed_document(text, document(key)));
  const nlohmann::json* plans = &plans_object;
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
  std::string text;
  if (read_cache_file(path, &text, reason) != CacheRead::kRead) return {};
  Expected<FusedPlanMap> parsed = parse_fused_plans(text, key);
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
