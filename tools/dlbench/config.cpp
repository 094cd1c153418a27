#include "tools/dlbench/config.h"

#include <cstdlib>
#include <iterator>

#include "tools/common/session_flags.h"
#include "tools/dlbench/stats.h"

namespace dlr::tools {
namespace {

// Where a swept option takes its list from; elsewhere it holds `fixed`.
enum class Applies {
  kAlways,
  kCuda,     // the cuda device (the cpu runs one variant)
  kStream,   // stream mode
  kStorage,  // weights from storage
};

// The dimensions of a device and mode's rows, outermost first (the rows' order).
struct Dimension {
  const char* option;
  Applies applies;
  const char* fixed;  // the item where the option does not apply
};

constexpr Dimension kDimensions[] = {
    {"precision", Applies::kCuda, "fp32"},       {"weight_format", Applies::kAlways, ""},
    {"layout", Applies::kCuda, "auto"},          {"batch", Applies::kAlways, ""},
    {"slot_bytes", Applies::kAlways, ""},        {"weight_budget", Applies::kStream, "-"},
    {"weight_pool", Applies::kStream, "-"},      {"unit_search", Applies::kStream, "-"},
    {"residency", Applies::kStream, "-"},        {"weights_from", Applies::kAlways, ""},
    {"zero_copy", Applies::kStorage, "auto"},    {"tail_prefetch", Applies::kStream, "off"},
    {"decode", Applies::kCuda, "auto"},          {"staging_early", Applies::kStream, "on"},
    {"warm_threads", Applies::kCuda, "4"},       {"cache_hits", Applies::kStorage, "on"},
    {"stage_whole", Applies::kStream, "on"},     {"staging_runs", Applies::kStream, "on"},
    {"expansion_stage", Applies::kStream, "on"},
};

std::vector<std::string> list(const Args& a, const char* option) { return split(a.session.text(option)); }

// The items dimension `d` takes in a row whose outer items `c` holds.
std::vector<std::string> values(const Args& a, const Config& c, const Dimension& d) {
  const bool applies = d.applies == Applies::kAlways || (d.applies == Applies::kCuda && c.device != "cpu") ||
                       (d.applies == Applies::kStream && c.mode == "stream") ||
                       (d.applies == Applies::kStorage && c.item("weights_from") == "storage");
  return applies ? list(a, d.option) : std::vector<std::string>{d.fixed};
}

// Combinations that measure nothing new, or that a session refuses.
bool redundant(const Args& a, const Config& c) {
  const std::string& budget = c.item("weight_budget");
  const std::string& from = c.item("weights_from");
  // slots and resident plans never search their units and keep nothing resident apart:
  // one variant is enough (auto varies)
  const bool fixed = c.item("weight_pool") == "slots" || budget == "all" || budget == "min";
  if (fixed && c.item("unit_search") != list(a, "unit_search").front()) return true;
  if (fixed && c.item("residency") != list(a, "residency").front()) return true;
  // storage is read by the CPU and by streaming GPU runs (not by preload)
  if (from == "storage" && c.mode == "preload") return true;
  if (from == "storage" && c.device == "cpu" && c.item("zero_copy") != list(a, "zero_copy").front()) return true;
  // storage reads ahead itself: the tail is refused there (one row, off)
  return from == "storage" && c.item("tail_prefetch") == "on" && list(a, "tail_prefetch").size() > 1;
}

// Every combination of dimensions [d, end) under the items `c` holds, in order.
void expand(const Args& a, Config c, size_t d, std::vector<Config>* out) {
  if (d == std::size(kDimensions)) {
    c.batch = std::atoi(c.item("batch").c_str());
    if (!redundant(a, c)) out->push_back(std::move(c));
    return;
  }
  for (const std::string& v : values(a, c, kDimensions[d])) {
    c.items[kDimensions[d].option] = v;
    expand(a, c, d + 1, out);
  }
}

// The texts of one configuration: its item of every list; the flags that do not apply to
// it (stream-mode ones outside stream mode, storage ones reading from host, zero copy on
// the CPU) at their defaults, as apply_session_flags() must not refuse them here.
SessionFlagTexts config_texts(const Args& a, const Config& c) {
  SessionFlagTexts t = a.session;
  t.set("device", c.device);
  t.set("mode", c.mode == "cpu" ? "preload" : c.mode);
  for (const auto& [option, text] : c.items) t.set(option, text);
  reset_inapplicable(&t);
  if (c.device != "cuda") t.reset("zero_copy");
  return t;
}

}  // namespace

const std::string& Config::item(const std::string& option) const {
  static const std::string none;
  auto it = items.find(option);
  return it == items.end() ? none : it->second;
}

std::string Config::name() const {
  std::string stream;
  const std::string& pool = item("weight_pool");
  const std::string& units = item("unit_search");
  const std::string& residency = item("residency");
  if (mode == "stream")
    stream = "@" + item("weight_budget") + (pool == "auto" ? "" : ":" + pool) + (units == "search" ? "" : "+" + units) +
             (residency == "greedy" ? "" : "~" + residency) + (item("tail_prefetch") == "on" ? "+tail" : "") +
             (item("staging_early") == "off" ? "+late" : "") + (item("stage_whole") == "off" ? "+sliced" : "") +
             (item("staging_runs") == "off" ? "+alone" : "") + (item("expansion_stage") == "off" ? "+inline" : "");
  const std::string& zero = item("zero_copy");
  if (item("weights_from") == "storage")
    stream += "<storage" + std::string(zero == "auto" ? "" : zero == "on" ? ":zc" : ":copy") +
              (item("cache_hits") == "off" ? "+direct" : "");
  const std::string& format = item("weight_format");
  const std::string& layout = item("layout");
  const std::string& slot = item("slot_bytes");
  return device + "/" + mode + stream + "/" + item("precision") + (format == "fp" ? "" : "/" + format) +
         (layout == "auto" ? "" : "/" + layout) + "/b" + std::to_string(batch) + (slot == "0" ? "" : "/slot" + slot) +
         (item("decode") == "auto" ? "" : "/decode-" + item("decode")) +
         (item("warm_threads") == "4" ? "" : "/warm" + item("warm_threads"));
}

std::vector<Config> configs(const Args& a) {
  std::vector<Config> out;
  for (const std::string& device : split(a.session.text("device")))
    for (const std::string& mode : split(device == "cpu" ? std::string("cpu") : a.session.text("mode"))) {
      Config c;
      c.device = device;
      c.mode = mode;
      expand(a, c, 0, &out);
    }
  return out;
}

Expected<SessionOptions> config_options(const Args& a, const Config& c) {
  SessionOptions opt;
  DLR_RETURN_IF_ERROR(apply_session_flags(config_texts(a, c), &opt));
  opt.width = a.size;
  opt.height = a.size;
  opt.warm_up_at_open = a.warm_up_at_open;
  opt.find_algorithms = a.find;
  opt.profile_layers = false;  // timed runs use the graph; profiling is a separate session (measure.cpp)
  DLR_RETURN_IF_ERROR(validate_options(opt));
  return opt;
}

}  // namespace dlr::tools
