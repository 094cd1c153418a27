#include "tools/dlbench/config.h"

#include <cstdlib>

#include "runtime/streaming/stream_plan.h"
#include "tools/common/tool_support.h"
#include "tools/dlbench/stats.h"

namespace dlr::tools {
namespace {

// The configurations of one device and mode (the innermost lists of configs()).
void add_configs(const Args& a, const std::string& device, const std::string& mode, std::vector<Config>* out) {
  const std::string none = "-";
  const bool stream = mode == "stream";
  for (const std::string& precision : split(device == "cpu" ? std::string("fp32") : a.precisions))
    for (const std::string& layout : split(device == "cpu" ? std::string("auto") : a.layouts))
      for (const std::string& b : split(a.batches))
        for (const std::string& budget : split(stream ? a.budgets : none))
          for (const std::string& pool : split(stream ? a.pools : none))
            for (const std::string& units : split(stream ? a.units : none))
              for (const std::string& res : split(stream ? a.residencies : none))
                for (const std::string& from : split(a.weights_from))
                  for (const std::string& zero : split(from == "storage" ? a.zero_copy : std::string("auto"))) {
                    // slots and resident plans never search their units and keep nothing resident
                    // apart: one variant is enough
                    const bool fixed = pool == "slots" || budget == "all" || budget == "min";  // auto varies
                    if (fixed && units != split(a.units).front()) continue;
                    if (fixed && res != split(a.residencies).front()) continue;
                    // storage is read by the CPU and by streaming GPU runs (not by preload)
                    if (from == "storage" && mode == "preload") continue;
                    if (from == "storage" && device == "cpu" && zero != split(a.zero_copy).front()) continue;
                    out->push_back(Config{device, mode, precision, layout, std::atoi(b.c_str()), budget, pool,
                                          units, res, from, zero});
                  }
}

// The layout of --layout into opt->layout.
Status layout_option(const std::string& layout, SessionOptions* opt) {
  if (layout == "nchw") {
    opt->layout = 0;
  } else if (layout == "nhwc") {
    opt->layout = 1;
  } else if (layout != "auto") {
    return invalid_argument("--layout " + layout + ": expected auto, nchw or nhwc");
  }
  return Status();
}

// The stream-mode options of a configuration into *opt.
Status stream_options(const Args& a, const Config& c, SessionOptions* opt) {
  opt->mode = WeightMode::kStream;
  DLR_ASSIGN_OR_RETURN(opt->weight_budget, WeightBudget::parse(c.budget));
  opt->copy_profile = a.copy_profile;
  if (!parse_pool_layout(c.pool, &opt->weight_pool))
    return invalid_argument("--weight-pool " + c.pool + ": expected auto, ring or slots");
  DLR_RETURN_IF_ERROR(parse_units(c.units, &opt->unit_search, &opt->chunk_bytes));
  if (!parse_residency(c.residency, &opt->residency))
    return invalid_argument("--residency " + c.residency + ": expected greedy, largest-late or none");
  DLR_ASSIGN_OR_RETURN(opt->max_slowdown, parse_percentage(a.max_slowdown, "--max-slowdown"));
  return Status();
}

// The storage options of a configuration into *opt (the defaults where it reads from host).
Status config_storage_options(const Args& a, const Config& c, SessionOptions* opt) {
  if (c.from != "host" && c.from != "storage") return invalid_argument("--weights-from " + c.from + ": expected host or storage");
  const bool storage = c.from == "storage";
  return storage_options(c.from, storage ? a.host_budget : "min", storage && c.device == "cuda" ? c.zero : "auto",
                         storage ? a.read_depth : 8, storage ? a.read_block : "1MiB", storage ? a.reader : "auto",
                         storage ? a.prepared : "", storage ? a.prefetch_reads : "on", opt);
}

}  // namespace

std::string Config::name() const {
  std::string stream;
  if (mode == "stream")
    stream = "@" + budget + (pool == "auto" ? "" : ":" + pool) + (units == "search" ? "" : "+" + units) +
             (residency == "greedy" ? "" : "~" + residency);
  if (from == "storage") stream += "<storage" + std::string(zero == "auto" ? "" : zero == "on" ? ":zc" : ":copy");
  return device + "/" + mode + stream + "/" + precision + (layout == "auto" ? "" : "/" + layout) + "/b" +
         std::to_string(batch);
}

Status parse_units(const std::string& units, bool* search, int64_t* chunk_bytes) {
  *search = units == "search";
  *chunk_bytes = 0;
  const std::string prefix = "chunks:";
  if (units.rfind(prefix, 0) == 0) {
    const Expected<int64_t> bytes = parse_weight_budget(units.substr(prefix.size()), 0, 0);
    if (!bytes.ok() || *bytes <= 0)
      return invalid_argument("--units " + units + ": expected a chunk size after 'chunks:', e.g. chunks:16MiB");
    *chunk_bytes = *bytes;
  } else if (units != "search" && units != "chunks") {
    return invalid_argument("--units " + units + ": expected search, chunks or chunks:SIZE");
  }
  return Status();
}

std::vector<Config> configs(const Args& a) {
  std::vector<Config> out;
  for (const std::string& device : split(a.devices))
    for (const std::string& mode : split(device == "cpu" ? std::string("cpu") : a.modes)) add_configs(a, device, mode, &out);
  return out;
}

Expected<SessionOptions> config_options(const Args& a, const Config& c) {
  SessionOptions opt;
  opt.device = c.device == "cuda" ? DeviceKind::kCUDA : DeviceKind::kCPU;
  if (!parse_precision(c.precision, &opt.precision))
    return invalid_argument("--precision " + c.precision + ": expected fp32, tf32 or fp16");
  opt.batch = c.batch;
  opt.threads = a.threads;
  opt.width = a.size;
  opt.height = a.size;
  opt.cuda_graph = !a.no_graph;
  opt.warm_up_at_open = a.warm_up_at_open;
  opt.calibrate_copies = !a.no_calibrate;
  opt.find_algorithms = a.find;
  opt.cache_kernel_times = a.cache;
  opt.profile_layers = false;  // timed runs use the graph; profiling is a separate session (measure.cpp)
  DLR_RETURN_IF_ERROR(layout_option(c.layout, &opt));
  if (c.device != "cuda" && c.device != "cpu") return invalid_argument("--device " + c.device + ": expected cuda or cpu");
  if (c.mode == "stream") {
    DLR_RETURN_IF_ERROR(stream_options(a, c, &opt));
  } else if (c.mode != "preload" && c.mode != "cpu") {
    return invalid_argument("--mode " + c.mode + ": expected preload or stream");
  }
  DLR_RETURN_IF_ERROR(config_storage_options(a, c, &opt));
  DLR_RETURN_IF_ERROR(validate_options(opt));
  return opt;
}

}  // namespace dlr::tools
