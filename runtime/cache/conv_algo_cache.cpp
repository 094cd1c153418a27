#include "runtime/cache/conv_algo_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <nlohmann/json.hpp>

#include "runtime/cache/cache_dir.h"
#include "runtime/compile/compile.h"

namespace dlr {
namespace {

constexpr int kFormat = 2;  // 1: algorithms without their workspace sizes (ignored, rewritten)

// The first line where two key texts differ, for the message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  while (true) {
    const bool ha = bool(std::getline(sa, la)), hb = bool(std::getline(sb, lb));
    if (!ha && !hb) return "";
    if (!ha) la.clear();
    if (!hb) lb.clear();
    if (la != lb) return "'" + la + "' where this open has '" + lb + "'";
  }
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
  nlohmann::json j = {{"format", kFormat}, {"key", key.text()}, {"algos", nlohmann::json::object()}};
  for (const auto& [conv, c] : algos) j["algos"][conv] = {{"algo", c.algo}, {"workspace", c.workspace}};
  return j.dump(1) + "\n";
}

Expected<ConvAlgoMap> parse_conv_algos(const std::string& text, const ConvAlgoKey& key, int algo_count) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return parse_error("not a JSON document");
  }
  if (!j.is_object()) return parse_error("not a JSON object");
  const auto format = j.find("format");
  if (format == j.end() || !format->is_number_integer() || format->get<int64_t>() != kFormat)
    return parse_error("format is not " + std::to_string(kFormat) +
                       (format != j.end() && format->is_number_integer() && format->get<int64_t>() == 1
                            ? " (format 1, from an older dlrun: algorithms without their workspace sizes)"
                            : ""));
  const auto k = j.find("key");
  if (k == j.end() || !k->is_string()) return parse_error("no key");
  const std::string want = key.text();
  if (k->get<std::string>() != want)
    return parse_error("made for another GPU, cuDNN or model: " + first_difference(k->get<std::string>(), want));
  const auto algos = j.find("algos");
  if (algos == j.end() || !algos->is_object()) return parse_error("no algos object");
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
    out[it.key()] = ConvAlgoChoice{int(a), w};
  }
  return out;
}

Expected<std::string> conv_algos_path(const std::string& model_name, const ConvAlgoKey& key) {
  return keyed_cache_file("conv-algos", model_name, key.text());
}

ConvAlgoLoadResult load_conv_algos(const std::string& path, const ConvAlgoKey& key, int algo_count) {
  ConvAlgoLoadResult r;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return r;  // absent
  std::ifstream f(path, std::ios::binary);
  if (!f || !S_ISREG(st.st_mode)) {
    r.state = ConvAlgoLoad::kIgnored;
    r.reason = path + ": cannot be read as a file";
    return r;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  Expected<ConvAlgoMap> parsed = parse_conv_algos(ss.str(), key, algo_count);
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
