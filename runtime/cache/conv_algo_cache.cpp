#include "runtime/cache/conv_algo_cache.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <nlohmann/json.hpp>

#include "runtime/cache/cache_dir.h"
#include "runtime/cache/keyed_document_json.h"
#include "runtime/compile/compile.h"

namespace dlr {
namespace {

constexpr int kFormat = 2;  // 1: algorithms without their workspace sizes (ignored, rewritten)

KeyedDocument document(const ConvAlgoKey& key) {
  return KeyedDocument{kFormat, key.text(), "algos", " (format 1, from an older dlrun: algorithms without their workspace sizes)"};
}

}  // namespace

std::string ConvAlgoKey::text() const {
  return "gpu " + gpu_uuid + "\ncudnn " + std::to_string(cudnn_version) + "\nmodel " + model + "\nprecision " +
         precision + "\nlayout " + layout + "\npolicy " + policy + "\nworkspace " + std::to_string(workspace_limit);
}

ConvAlgoKey conv_algo_key(const CompiledModel& model, const std::string& gpu_uuid, int64_t cudnn_version) {
  ConvAlgoKey k;
  k.gpu_uuid = gpu_uuid;
  k.cudnn_version = cudnn_version;
  const std::string plan = model.plan.to_text();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(XXH3_64bits(plan.data(), plan.size())));
  k.model = model.model_name + " " + hex;
  k.precision = precision_name(model.engine.precision);
  k.layout = layout_name(model.plan.options.layout);
  k.policy = model.engine.find_algorithms ? "find" : "heuristic";
  k.workspace_limit = model.engine.workspace_limit;
  return k;
}

std::string format_conv_algos(const ConvAlgoKey& key, const ConvAlgoMap& algos) {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [conv, c] : algos) {
    entries[conv] = {{"algo", c.algo}, {"workspace", c.workspace}};
    if (c.measured()) entries[conv]["ms"] = c.ms;
  }
  return format_keyed_document(document(key), std::move(entries));
}

Expected<ConvAlgoMap> parse_conv_algos(const std::string& text, const ConvAlgoKey& key, int algo_count) {
  DLR_ASSIGN_OR_RETURN(const nlohmann::json algos_object, parse_keyed_document(text, document(key)));
  const nlohmann::json* algos = &algos_object;
  ConvAlgoMap out;
  for (auto it = algos->begin(); it != algos->end(); ++it) {
    if (it.key().empty()) return parse_error("an empty convolution key");
    const std::string conv = "convolution '" + it.key() + "': ";
    if (!it.value().is_object()) return parse_error(conv + "not an object {\"algo\", \"workspace\"}");
    const auto algo = it.value().find("algo");
    if (algo == it.value().end() || !algo->is_number_integer())
      return parse_error(conv + "algorithm is not an integer");
    const int64_t a = algo->get<int64_t>();
    if (a < 0 || a >= algo_count)
      return parse_error(conv + "algorithm " + std::to_string(a) + " outside 0.." + std::to_string(algo_count - 1));
    const auto ws = it.value().find("workspace");
    if (ws == it.value().end() || !ws->is_number_integer())
      return parse_error(conv + "workspace is not an integer");
    // nlohmann keeps a non-negative integer unsigned: one beyond int64 would wrap when read as int64.
    if (ws->is_number_unsigned() && ws->get<uint64_t>() > uint64_t(INT64_MAX))
      return parse_error(conv + "workspace outside 0.." + std::to_string(key.workspace_limit));
    const int64_t w = ws->get<int64_t>();
    if (w < 0 || w > key.workspace_limit)
      return parse_error(conv + "workspace " + std::to_string(w) + " bytes outside 0.." +
                         std::to_string(key.workspace_limit) + " (the workspace limit)");
    double ms = -1;
    if (const auto t = it.value().find("ms"); t != it.value().end()) {
      if (!t->is_number() || !(t->get<double>() >= 0) || !std::isfinite(t->get<double>()))
        return parse_error(conv + "time is not a number of ms >= 0");
      ms = t->get<double>();
    }
    out[it.key()] = ConvAlgoChoice{int(a), w, ms};
  }
  return out;
}

Expected<std::string> conv_algos_path(const std::string& model_name, const ConvAlgoKey& key) {
  return keyed_cache_file("conv-algos", model_name, key.text());
}

ConvAlgoLoadResult load_conv_algos(const std::string& path, const ConvAlgoKey& key, int algo_count) {
  ConvAlgoLoadResult r;
  std::string text;
  switch (read_cache_file(path, &text, &r.reason)) {
    case CacheRead::kAbsent:
      return r;
    case CacheRead::kUnreadable:
      r.state = ConvAlgoLoad::kIgnored;
      return r;
    case CacheRead::kRead:
      break;
  }
  Expected<ConvAlgoMap> parsed = parse_conv_algos(text, key, algo_count);
  if (!parsed.ok()) {
    r.state = ConvAlgoLoad::kIgnored;
    r.reason = path + ": " + parsed.status().message();
    return r;
  }
  r.state = ConvAlgoLoad::kLoaded;
  r.algos = std::move(parsed).value();
  return r;
}

Status save_conv_algos(const std::string& path, const ConvAlgoKey& key, const ConvAlgoMap& algos) {
  return write_file_atomic(path, format_conv_algos(key, algos), "the conv-algorithm cache");
}

}  // namespace dlr
