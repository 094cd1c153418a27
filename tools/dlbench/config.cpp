#include "tools/dlbench/config.h"

#include <cstdlib>

#include "tools/common/session_flags.h"
#include "tools/dlbench/stats.h"

namespace dlr::tools {
namespace {

// The configurations of one device and mode (the innermost lists of configs()).
void add_configs(const Args& a, const std::string& device, const std::string& mode, std::vector<Config>* out) {
  const std::string none = "-";
  const bool stream = mode == "stream";
  const auto list = [&](const char* option) { return split(a.session.text(option)); };
  for (const std::string& precision : device == "cpu" ? split("fp32") : list("precision"))
   for (const std::string& format : list("weight_format"))
    for (const std::string& layout : device == "cpu" ? split("auto") : list("layout"))
      for (const std::string& b : list("batch"))
        for (const std::string& slot : list("slot_bytes"))
        for (const std::string& budget : stream ? list("weight_budget") : split(none))
          for (const std::string& pool : stream ? list("weight_pool") : split(none))
            for (const std::string& units : stream ? list("unit_search") : split(none))
              for (const std::string& res : stream ? list("residency") : split(none))
                for (const std::string& from : list("weights_from"))
                  for (const std::string& zero : from == "storage" ? list("zero_copy") : split("auto"))
                   for (const std::string& tail : stream ? list("tail_prefetch") : split("off"))
                    for (const std::string& decode : device == "cpu" ? split("cpu") : list("decode_on_device")) {
                    // slots and resident plans never search their units and keep nothing resident
                    // apart: one variant is enough
                    const bool fixed = pool == "slots" || budget == "all" || budget == "min";  // auto varies
                    if (fixed && units != list("unit_search").front()) continue;
                    if (fixed && res != list("residency").front()) continue;
                    // storage is read by the CPU and by streaming GPU runs (not by preload)
                    if (from == "storage" && mode == "preload") continue;
                    if (from == "storage" && device == "cpu" && zero != list("zero_copy").front()) continue;
                    // storage reads ahead itself: the tail is refused there (one row, off)
                    if (from == "storage" && tail == "on" && list("tail_prefetch").size() > 1) continue;
                    out->push_back(Config{device, mode, precision, layout, std::atoi(b.c_str()), budget, pool,
                                          units, res, from, zero, slot, format, tail, decode});
                  }
}

// The texts of one configuration: its item of every list; the flags that do not apply to
// it (stream-mode ones outside stream mode, storage ones reading from host, zero copy on
// the CPU) at their defaults, as apply_session_flags() must not refuse them here.
SessionFlagTexts config_texts(const Args& a, const Config& c) {
  SessionFlagTexts t = a.session;
  const std::pair<const char*, std::string> items[] = {
      {"device", c.device}, {"precision", c.precision}, {"mode", c.mode == "cpu" ? "preload" : c.mode},
      {"batch", std::to_string(c.batch)}, {"weight_budget", c.budget}, {"weight_pool", c.pool},
      {"unit_search", c.units}, {"residency", c.residency}, {"weights_from", c.from}, {"zero_copy", c.zero},
      {"slot_bytes", c.slot}, {"weight_format", c.format}, {"layout", c.layout}, {"tail_prefetch", c.tail},
      {"decode_on_device", c.decode}};
  for (const auto& [option, text] : items) t.set(option, text);
  reset_inapplicable(&t);
  if (c.device != "cuda") t.reset("zero_copy");
  return t;
}

}  // namespace

std::string Config::name() const {
  std::string stream;
  if (mode == "stream")
    stream = "@" + budget + (pool == "auto" ? "" : ":" + pool) + (units == "search" ? "" : "+" + units) +
             (residency == "greedy" ? "" : "~" + residency) + (tail == "on" ? "+tail" : "");
  if (from == "storage") stream += "<storage" + std::string(zero == "auto" ? "" : zero == "on" ? ":zc" : ":copy");
  return device + "/" + mode + stream + "/" + precision + (format == "fp" ? "" : "/" + format) +
         (layout == "auto" ? "" : "/" + layout) + "/b" +
         std::to_string(batch) + (slot == "0" ? "" : "/slot" + slot) + (decode == "cpu" ? "" : "/decode-gpu");
}

std::vector<Config> configs(const Args& a) {
  std::vector<Config> out;
  for (const std::string& device : split(a.session.text("device")))
    for (const std::string& mode : split(device == "cpu" ? std::string("cpu") : a.session.text("mode")))
      add_configs(a, device, mode, &out);
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
