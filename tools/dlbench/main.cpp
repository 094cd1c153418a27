// dlbench: latency, throughput and memory of dlrun configurations, several in
// one invocation so that ratios come from the same run. Prints a table on
// stdout and, with --json, writes every number to a file.
// Exit: 0 ok, 1 error, 2 usage error.
#include <CLI/CLI.hpp>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "loaders/synthetic_weights.h"
#include "tools/dlbench/isolate.h"
#include "tools/dlbench/models.h"
#include "runtime/streaming/lower_bound.h"
#include "runtime/streaming/simulator.h"
#include "runtime/storage/block_reader.h"
#include "tools/common/progress.h"
#include "tools/common/report.h"
#include "runtime/core/log.h"
#include "runtime/compile/compile.h"
#include "runtime/cpu/cpu_threads.h"
#include "runtime/session.h"
#include "tools/common/tool_support.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif
#ifdef DLR_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#endif

namespace {

using namespace dlr;
using namespace dlr::tools;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string cfg;
  std::string weights;
  bool synthetic = false;
  uint64_t seed = 1;
  int size = 0;
  int threads = 0;  // --threads (0: auto)
  std::string batches = "1";
  std::string precisions = "fp32";
  std::string modes = "preload";
  std::string devices = "cuda";
  int iters = 50;
  int warmup = 10;
  std::string json;
  bool opencv = false;
  std::string report;
  bool no_graph = false;
  bool warm_up_at_open = false;
  bool no_calibrate = false;  // stream mode: plan with the copy profile as probed (no calibration at open)
  bool find = false;
  std::string layouts = "auto";
  std::string budgets = "min";
  std::string copy_profile = "auto";
  std::string pools = "auto";
  std::string units = "search";
  std::string residencies = "greedy";
  std::string max_slowdown = "5%";
  bool simulate = false;
  // weights from storage
  std::string weights_from = "host";  // comma-separated: host, storage
  std::string zero_copy = "auto";     // comma-separated: auto, on, off
  std::string host_budget = "min";
  int read_depth = 8;
  std::string read_block = "1MiB";
  std::string reader = "auto";
  std::string prefetch_reads = "on";
  std::string prepared;
  bool cold = false;  // drop the prepared file from the page cache before each configuration
  bool cache = false;          // --cache: keep/reuse kernel times and cuDNN algorithm choices (as dlrun does)
  bool startup_floor = false;  // --startup-floor: time the smallest CUDA open, alone in this process
  // --budget-curve N: N budgets from the minimal pool to all the weights (preload in the same run).
  int budget_curve = 0;
  // --isolate: every configuration in a process of its own (tools/dlbench/isolate.h);
  // on by default with --budget-curve, off with --no-isolate.
  bool isolate = false;
  bool no_isolate = false;
  int config_index = -1;          // --config-index K (the child of --isolate): measure configuration K only
  std::vector<std::string> argv;  // the command line, for the children of --isolate
  // --simulate-only: no GPU; the planner's predictions and the lower bound over a
  // budget curve from kernel times in a dlbench JSON file.
  bool simulate_only = false;
  std::string layer_ms_from;
  std::string layer_ms_config;
  double scale_preload_ms = 0;
  int64_t granularity = int64_t(2) << 20;
};

struct Stats {
  double median = 0, min = 0, p90 = 0, mean = 0;
};

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  s.p90 = v[std::min(v.size() - 1, size_t(0.9 * double(v.size() - 1) + 0.5))];
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  return s;
}

nlohmann::json stats_json(const Stats& s) {
  return {{"median_ms", s.median}, {"min_ms", s.min}, {"p90_ms", s.p90}, {"mean_ms", s.mean}};
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

double mib(int64_t b) { return double(b) / (1024.0 * 1024.0); }

struct Config {
  std::string device, mode, precision, layout;
  int batch = 1;
  std::string budget;  // stream mode
  std::string pool;    // stream mode
  std::string units;   // stream mode: search or chunks
  std::string residency;  // stream mode: greedy, largest-late, none
  std::string from = "host";   // host or storage
  std::string zero = "auto";   // storage: zero copy auto, on, off
  std::string name() const {
    std::string stream;
    if (mode == "stream")
      stream = "@" + budget + (pool == "auto" ? "" : ":" + pool) + (units == "search" ? "" : "+" + units) +
               (residency == "greedy" ? "" : "~" + residency);
    if (from == "storage") stream += "<storage" + std::string(zero == "auto" ? "" : zero == "on" ? ":zc" : ":copy");
    return device + "/" + mode + stream + "/" + precision + (layout == "auto" ? "" : "/" + layout) + "/b" +
           std::to_string(batch);
  }
};

// One --units item: "search", "chunks" (the profile's size) or "chunks:SIZE".
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

// Every combination of the comma-separated lists, in command-line order (stream-mode
// lists only for stream mode, one units variant for slots and 'all', the cpu device runs fp32 only).
std::vector<Config> configs(const Args& a) {
  std::vector<Config> out;
  const std::string none = "-";
  for (const std::string& device : split(a.devices))
    for (const std::string& mode : split(device == "cpu" ? std::string("cpu") : a.modes)) {
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
                        out.push_back(Config{device, mode, precision, layout, std::atoi(b.c_str()), budget, pool,
                                             units, res, from, zero});
                      }
    }
  return out;
}

// Per-layer kernel times of a profiled run (for the simulator), keyed by precision/batch/layout.
std::map<std::string, std::vector<double>> g_kernel_ms;

// The session options of one configuration, parsed and validated (no file or device
// work): run() checks every configuration with it before it reads the cfg.
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
  opt.profile_layers = false;  // timed runs use the graph; profiling is a separate session below
  if (c.layout == "nchw") {
    opt.layout = 0;
  } else if (c.layout == "nhwc") {
    opt.layout = 1;
  } else if (c.layout != "auto") {
    return invalid_argument("--layout " + c.layout + ": expected auto, nchw or nhwc");
  }
  if (c.device != "cuda" && c.device != "cpu") return invalid_argument("--device " + c.device + ": expected cuda or cpu");
  if (c.mode == "stream") {
    opt.mode = WeightMode::kStream;
    DLR_ASSIGN_OR_RETURN(opt.weight_budget, WeightBudget::parse(c.budget));
    opt.copy_profile = a.copy_profile;
    if (!parse_pool_layout(c.pool, &opt.weight_pool))
      return invalid_argument("--weight-pool " + c.pool + ": expected auto, ring or slots");
    DLR_RETURN_IF_ERROR(parse_units(c.units, &opt.unit_search, &opt.chunk_bytes));
    if (!parse_residency(c.residency, &opt.residency))
      return invalid_argument("--residency " + c.residency + ": expected greedy, largest-late or none");
    DLR_ASSIGN_OR_RETURN(opt.max_slowdown, parse_percentage(a.max_slowdown, "--max-slowdown"));
  } else if (c.mode != "preload" && c.mode != "cpu") {
    return invalid_argument("--mode " + c.mode + ": expected preload or stream");
  }
  if (c.from != "host" && c.from != "storage") return invalid_argument("--weights-from " + c.from + ": expected host or storage");
  const bool storage = c.from == "storage";
  DLR_RETURN_IF_ERROR(storage_options(c.from, storage ? a.host_budget : "min",
                                      storage && c.device == "cuda" ? c.zero : "auto", storage ? a.read_depth : 8,
                                      storage ? a.read_block : "1MiB", storage ? a.reader : "auto",
                                      storage ? a.prepared : "", storage ? a.prefetch_reads : "on", &opt));
  DLR_RETURN_IF_ERROR(validate_options(opt));
  return opt;
}

// Milliseconds since this process started (the kernel's start time, in clock ticks:
// 10 ms resolution), or -1 when /proc cannot tell.
double process_age_ms() {
  std::ifstream f("/proc/self/stat");
  std::string stat;
  if (!std::getline(f, stat)) return -1;
  const size_t paren = stat.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22; ++i) {  // field 22: starttime
    if (!(rest >> field)) return -1;
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  timespec now{};
  if (ticks <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1;
  const double start_ms = 1000.0 * std::strtod(field.c_str(), nullptr) / double(ticks);
  return 1000.0 * double(now.tv_sec) + double(now.tv_nsec) / 1e6 - start_ms;
}

// The parts of an open (Session::open_timing) as JSON; first_inference_ms: the first
// set_input + run after open.
nlohmann::json startup_json(const OpenTiming& t, double first_inference_ms) {
  const EngineOpenTiming& e = t.engine;
  return {{"open_ms", t.open_ms},
          {"context_ms", t.context_ms},
          {"context_cudnn_ms", t.context_cudnn_ms},
          {"context_prime_ms", t.context_prime_ms},
          {"context_wait_ms", t.context_wait_ms},
          {"parse_ms", t.parse_ms},
          {"target_ms", t.target_ms},
          {"compile_ms", t.compile_ms},
          {"prepared_ms", t.prepared_ms},
          {"engine_ms", t.engine_ms},
          {"engine",
           {{"device_ms", e.device_ms},
            {"cudnn_handle_ms", e.cudnn_handle_ms},
            {"weights_ms", e.weights_ms},
            {"buffers_ms", e.buffers_ms},
            {"conv_setup_ms", e.conv_setup_ms},
            {"conv_descriptors_ms", e.conv_descriptors_ms},
            {"conv_query_ms", e.conv_query_ms},
            {"conv_workspace_ms", e.conv_workspace_ms},
            {"conv_first_ms", e.conv_first_ms},
            {"algo_cache_ms", e.algo_cache_ms},
            {"convs", e.convs},
            {"convs_cached", e.convs_cached},
            {"convs_workspace_cached", e.convs_workspace_cached},
            {"convs_queried", e.convs_queried},
            {"algo_cache", e.algo_cache},
            {"algo_cache_path", e.algo_cache_path}}},
          {"kernel_times_ms", t.kernel_times_ms},
          {"warmup_ms", t.engine.warmup_ms},
          {"warmup_run", t.engine.warmup_run},
          {"warmup_eager", t.engine.warmup_eager},
          {"graph_ms", t.engine.graph_ms},
          {"finalize_ms", t.finalize_ms},
          {"first_inference_ms", first_inference_ms},
          {"open_to_first_result_ms", t.open_ms + first_inference_ms}};
}

Expected<nlohmann::json> bench_config(const Args& a, const std::string& weights, const Config& c,
                                      const std::vector<float>& input) {
  DLR_ASSIGN_OR_RETURN(const SessionOptions opt, config_options(a, c));

  int64_t free_before = 0, total = 0, free_after = 0;
#ifdef DLR_HAVE_CUDA
  if (opt.device == DeviceKind::kCUDA) DLR_RETURN_IF_ERROR(cuda_memory_info(opt.cuda_device, &free_before, &total));
#endif
  const auto t_open = Clock::now();
  const HostMemory host_before = host_memory();
  DLR_ASSIGN_OR_RETURN(auto session, Session::open(a.cfg, weights, opt));
  const double open_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_open).count();
  // Storage: the prepared file's page-cache bytes before the timed inferences (after a
  // --cold drop), to report how many the direct reads leave behind.
  const std::string prepared = session->prepared_path();
  if (!prepared.empty() && a.cold) DLR_RETURN_IF_ERROR(drop_page_cache(prepared));
  int64_t cache_before = 0;
  if (!prepared.empty()) {
    DLR_ASSIGN_OR_RETURN(cache_before, page_cache_bytes(prepared));
  }
#ifdef DLR_HAVE_CUDA
  if (opt.device == DeviceKind::kCUDA) DLR_RETURN_IF_ERROR(cuda_memory_info(opt.cuda_device, &free_after, &total));
#endif
  Engine& e = session->engine();
  const CpuThreadScope threads(opt.threads);  // the engine is driven directly, not through Session::detect
  // The first inference after open, timed alone (the startup report): one more warm-up.
  const auto t_first = Clock::now();
  DLR_RETURN_IF_ERROR(e.set_input(input.data(), c.batch));
  DLR_RETURN_IF_ERROR(e.run());
  const double first_inference_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_first).count();
  const double age_at_first_result = process_age_ms();
  for (int i = 0; i < a.warmup; ++i) {
    DLR_RETURN_IF_ERROR(e.set_input(input.data(), c.batch));
    DLR_RETURN_IF_ERROR(e.run());
  }
  std::vector<double> net, e2e, upload;
  for (int i = 0; i < a.iters; ++i) {
    const auto t0 = Clock::now();
    DLR_RETURN_IF_ERROR(e.set_input(input.data(), c.batch));
    DLR_RETURN_IF_ERROR(e.run());
    e2e.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    const RunTiming t = e.last_run_timing();
    net.push_back(t.network_ms);
    upload.push_back(t.upload_ms);
  }
  const Stats sn = stats_of(net), se = stats_of(e2e), su = stats_of(upload);
  const MemoryReport m = e.memory();
  const HostMemory host_after = host_memory();
  int64_t cache_after = 0;
  if (!prepared.empty()) {
    DLR_ASSIGN_OR_RETURN(cache_after, page_cache_bytes(prepared));
  }
  const NetworkDesc& nd = session->network();
  nlohmann::json j;
  j["config"] = c.name();
  j["device"] = c.device;
  j["mode"] = c.mode;
  j["precision"] = c.precision;
  j["layout"] = layout_name(session->plan().options.layout);
  j["batch"] = c.batch;
  j["size"] = nd.net.width;
  j["iters"] = a.iters;
  j["warmup"] = a.warmup;
  j["open_ms"] = open_ms;
  j["startup"] = startup_json(session->open_timing(), first_inference_ms);
  j["startup"]["process_age_at_first_result_ms"] = age_at_first_result;  // meaningful for the first configuration
  j["network"] = stats_json(sn);
  j["end_to_end"] = stats_json(se);
  j["upload"] = stats_json(su);
  j["throughput_ips"] = sn.median > 0 ? 1000.0 * c.batch / sn.median : 0.0;
  j["gflops"] = nd.total_gflops();
  j["memory"] = {{"weights", m.weights},
                 {"activations", m.activations},
                 {"workspace", m.workspace},
                 {"other", m.other},
                 {"activations_naive", session->plan().naive_bytes},
                 {"device_delta_after_open", free_before - free_after},
                 {"host_weights", m.host_weights},
                 {"host_rss_before_open", host_before.rss},
                 {"host_rss_after", host_after.rss},
                 {"host_rss_peak", host_after.hwm}};
  if (!prepared.empty()) {
    const ReadPlan& rp = session->model().reads;
    j["storage"] = {{"prepared_file", prepared},
                    {"two_stage", rp.two_stage},
                    {"read_bytes_per_inference", rp.read_bytes()},
                    {"reads_per_inference", rp.units.size()},
                    {"largest_read", rp.largest_unit()},
                    {"staging_bytes", rp.staging_bytes},
                    {"queue_depth", rp.queue_depth},
                    {"block_bytes", rp.block_bytes},
                    {"page_cache_before", cache_before},
                    {"page_cache_after", cache_after},
                    {"page_cache_growth", cache_after - cache_before},
                    {"inferences", a.warmup + a.iters},
                    {"prefetch_reads", opt.prefetch_reads && rp.two_stage && c.device == "cpu"},
                    {"cold", a.cold}};
    if (sn.median > 0)
      j["storage"]["read_gbps_at_median"] = double(rp.read_bytes()) / (sn.median * 1e6);
    // The floor the disk sets: the bytes read at the profile's O_DIRECT bandwidth for this
    // block size and depth (the target of issue 15 is 1.15 x max(preload, this, the copy floor)).
    const StorageProfile disk = session->model().target.copy_profile.storage_or_default();
    const double gbps = disk.direct_gbps(std::min<int64_t>(rp.block_bytes, std::max<int64_t>(rp.largest_unit(), 1)),
                                         rp.queue_depth);
    j["storage"]["disk_gbps"] = gbps;
    j["storage"]["disk_device"] = disk.device;
    j["storage"]["read_floor_ms"] = gbps > 0 ? double(rp.read_bytes()) / (gbps * 1e6) : 0.0;
  }
  if (const StreamPlan* sp = session->model().streaming ? &session->model().stream : nullptr) {
    const CompiledModel& cm = session->model();
    // As resolved at open (auto: this GPU's), calibrated in an inference unless --no-calibrate.
    const CopyProfile& profile = cm.target.copy_profile;
    const CopyProfile& probed = cm.target.copy_calibrated() ? cm.target.probed_copy_profile : profile;
    const double copy_floor_ms = double(sp->streamed_bytes()) / (probed.peak_gbps() * 1e6);  // the probed peak
    j["stream"] = {{"pool_bytes", sp->pool_bytes},
                   {"pool_layout", sp->resident ? "resident" : pool_layout_name(sp->layout)},
                   {"slot_bytes", sp->slot_bytes},
                   {"slots", sp->slots},
                   {"resident", sp->resident},
                   {"streamed_bytes", sp->streamed_bytes()},
                   {"copies_per_inference", sp->resident ? 0 : sp->units.size()},
                   {"total_weight_bytes", sp->total_weight_bytes},
                   {"profile", profile.name},
                   {"profile_source", cm.target.copy_profile_source},
                   {"profile_peak_gbps", profile.peak_gbps()},
                   // Which profile the prediction used: "calibrated" (in an inference at open) or "probed".
                   {"profile_kind", cm.target.copy_calibrated() ? "calibrated" : "probed"},
                   {"probed_profile", probed.name},
                   {"probed_peak_gbps", probed.peak_gbps()},
                   {"profile_gbps_at_4mib", double(4 << 20) / (profile.copy_ms(4 << 20) * 1e6)},
                   {"probed_gbps_at_4mib", double(4 << 20) / (probed.copy_ms(4 << 20) * 1e6)},
                   {"copy_floor_ms", copy_floor_ms},
                   {"units", sp->units_searched ? "search" : "chunks"},
                   {"residency", residency_name(opt.residency)},
                   {"resident_bytes", sp->resident_bytes},
                   {"device_weight_bytes", sp->device_bytes()},
                   {"budget_bytes", session->model().budget_bytes},
                   {"predicted_ms", session->model().predicted_ms},
                   {"lower_bound_ms", cm.lower_bound_ms},
                   {"lower_bound_calibrated_ms", cm.lower_bound_calibrated_ms}};
    if (cm.options->weight_budget.kind == WeightBudget::Kind::kAuto && cm.auto_preload_ms > 0) {
      // The budget auto picked, and its predicted slowdown over preload's prediction (the
      // measured slowdown is added once preload's row of the same run is known).
      j["stream"]["auto_budget_pct"] = 100.0 * double(cm.budget_bytes) / double(sp->total_weight_bytes);
      j["stream"]["auto_preload_predicted_ms"] = cm.auto_preload_ms;
      j["stream"]["predicted_slowdown"] = cm.predicted_ms / cm.auto_preload_ms - 1;
      j["stream"]["max_slowdown"] = cm.options->max_slowdown;
    }
    for (const std::string& note : session->model().notes)
      if (note.rfind("residency: ", 0) == 0) j["stream"]["residency_note"] = note;
      else if (note.rfind("budget auto: ", 0) == 0) j["stream"]["auto_budget_note"] = note;
    if (sp->searched_ms > 0) {
      j["stream"]["search_predicted_ms"] = sp->searched_ms;
      j["stream"]["chunks_predicted_ms"] = sp->chunks_ms;
      j["stream"]["kernel_ms_at_open"] = sp->search_layer_ms;
      j["stream"]["unit_ends"] = sp->unit_ends();
    }
    const std::string key = c.precision + "/" + c.layout + "/" + std::to_string(c.batch);
    if (a.simulate && g_kernel_ms.count(key)) {
      const SimResult sim = simulate(session->plan(), *sp, profile, g_kernel_ms[key]);
      j["stream"]["simulated_ms"] = sim.latency_ms;
      j["stream"]["simulated_stall_ms"] = sim.stall_ms;
      j["stream"]["simulated_violations"] = sim.violations.size();
    }
  }
  if (!a.report.empty() || a.simulate) {
    // One extra profiled session (CUDA events per layer, recorded inside the graph): where the time goes.
    SessionOptions popt = opt;
    popt.profile_layers = true;
    DLR_ASSIGN_OR_RETURN(auto prof, Session::open(a.cfg, weights, popt));
    Engine& pe = prof->engine();
    for (int i = 0; i < 3; ++i) {
      DLR_RETURN_IF_ERROR(pe.set_input(input.data(), c.batch));
      DLR_RETURN_IF_ERROR(pe.run());
    }
    j["profile"] = tools::layer_report_json(nd, pe);
    j["profile"]["network_ms_with_events"] = pe.last_run_ms();
    if (c.mode != "stream") {
      std::vector<double> k;
      for (const LayerTiming& t : pe.layer_timings()) k.push_back(std::max(0.0, t.ms()));
      g_kernel_ms[c.precision + "/" + c.layout + "/" + std::to_string(c.batch)] = k;
    }
  }
  return j;
}

#ifdef DLR_HAVE_OPENCV
Expected<nlohmann::json> bench_opencv(const Args& a, const std::string& weights, int size,
                                      const std::vector<float>& input) {
  cv::dnn::Net net;
  try {
    net = cv::dnn::readNetFromDarknet(a.cfg, weights);
  } catch (const cv::Exception& ex) {
    return Status(StatusCode::kInternal, std::string("OpenCV could not read the network: ") + ex.what());
  }
  net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  const int dims[4] = {1, 3, size, size};
  cv::Mat blob(4, dims, CV_32F, const_cast<float*>(input.data()));
  const std::vector<std::string> outs = net.getUnconnectedOutLayersNames();
  std::vector<cv::Mat> results;
  std::vector<double> times;
  for (int i = 0; i < a.warmup + a.iters; ++i) {
    const auto t0 = Clock::now();
    net.setInput(blob);
    net.forward(results, outs);
    if (i >= a.warmup) times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const Stats s = stats_of(times);
  nlohmann::json j;
  j["config"] = "opencv-dnn/cpu/fp32/b1";
  j["device"] = "cpu";
  j["mode"] = "opencv";
  j["precision"] = "fp32";
  j["batch"] = 1;
  j["size"] = size;
  j["iters"] = a.iters;
  j["network"] = stats_json(s);
  j["end_to_end"] = stats_json(s);
  j["opencv_version"] = CV_VERSION;
  j["opencv_threads"] = cv::getNumThreads();
  return j;
}
#endif

// --budget-curve: `n` budgets from the minimal pool to all the weights, as dlbench
// --weight-budget items: "min", n - 2 percentages evenly spaced above the minimum
// (one decimal), "all". The minimum is the largest minimal pool (in % of the weights)
// over `precisions`, found by compiling for a hand-made target with the device's
// mapping granularity (the pool does not depend on the copy profile).
Expected<std::string> curve_budgets(const NetworkDesc& net, const std::vector<std::string>& precisions,
                                    int64_t granularity, int n) {
  if (n < 2) return invalid_argument("--budget-curve " + std::to_string(n) + ": at least 2 budgets");
  double min_pct = 0;
  for (const std::string& p : precisions) {
    Target t;
    t.device = DeviceKind::kCUDA;
    t.name = "curve budgets";
    t.map_granularity = granularity;
    t.copy_profile = *CopyProfile::builtin("h100");
    SessionOptions o;
    o.device = DeviceKind::kCUDA;
    o.mode = WeightMode::kStream;
    if (!parse_precision(p, &o.precision)) return invalid_argument("--precision " + p + ": expected fp32, tf32 or fp16");
    DLR_ASSIGN_OR_RETURN(CompiledModel m, compile(net, t, o));
    const double total = double(m.plan.weight_bytes());
    if (total <= 0) return invalid_argument("--budget-curve: the network has no weights");
    min_pct = std::max(min_pct, 100.0 * double(m.stream.device_bytes()) / total);
  }
  std::string list = "min";
  for (int i = 1; i + 1 < n; ++i) {
    const double pct = std::ceil(10.0 * (min_pct + (100.0 - min_pct) * double(i) / double(n - 1))) / 10.0;
    if (pct >= 100.0) break;
    char buf[32];
    std::snprintf(buf, sizeof buf, ",%.1f%%", pct);
    list += buf;
  }
  return list + ",all";
}

// Per-step kernel times from a dlbench JSON file: the first result of `precision`
// (whose config contains `config` when given) with stream.kernel_ms_at_open (measured
// at open, event cost removed), else with a profiled run's per-layer kernel_ms.
Expected<std::vector<double>> layer_ms_from_json(const std::string& path, const std::string& precision,
                                                 const std::string& config, std::string* used) {
  std::ifstream in(path);
  if (!in) return io_error("--layer-ms-from " + path + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return parse_error("--layer-ms-from " + path + ": not valid JSON: " + printable(e.what()));
  }
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
    return parse_error("--layer-ms-from " + path + ": not dlbench JSON (no 'results' list)");
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& r : j["results"]) {
      if (!r.is_object() || r.value("precision", std::string()) != precision) continue;
      const std::string name = r.value("config", std::string());
      if (!config.empty() && name.find(config) == std::string::npos) continue;
      std::vector<double> ms;
      try {
        if (pass == 0 && r.contains("stream") && r["stream"].contains("kernel_ms_at_open")) {
          ms = r["stream"]["kernel_ms_at_open"].get<std::vector<double>>();
          *used = name + " (kernel times measured at open)";
        } else if (pass == 1 && r.contains("profile") && r["profile"].contains("layers")) {
          for (const auto& l : r["profile"]["layers"]) ms.push_back(l.at("kernel_ms").get<double>());
          *used = name + " (profiled run, CUDA events inside the graph)";
        } else {
          continue;
        }
      } catch (const nlohmann::json::exception& e) {
        return parse_error("--layer-ms-from " + path + ": " + name + ": " + printable(e.what()));
      }
      for (double& v : ms)
        if (!std::isfinite(v) || v < 0) return parse_error("--layer-ms-from " + path + ": " + name + ": a kernel time is negative or not finite");
      return ms;
    }
  }
  return invalid_argument("--layer-ms-from " + path + ": no " + precision + " result" +
                          (config.empty() ? "" : " whose config contains '" + config + "'") +
                          " with kernel_ms_at_open or a profiled run");
}

// --simulate-only: the residency planner's prediction and the lower bound at every
// budget of the curve, from measured kernel times (optionally scaled) and a named
// copy profile. No GPU: the target is written by hand.
int simulate_only(const Args& a, const NetworkDesc& net) {
  if (a.layer_ms_from.empty()) return fail("dlbench", invalid_argument("--simulate-only needs --layer-ms-from FILE"));
  if (a.copy_profile == "auto")
    return fail("dlbench", invalid_argument("--simulate-only needs a named --copy-profile (a built-in or a JSON "
                                            "file): auto is measured on a GPU"));
  auto profile = CopyProfile::resolve(a.copy_profile);
  if (!profile.ok()) return fail("dlbench", profile.status());
  const std::vector<std::string> precisions = split(a.precisions);
  // --weight-budget given: those budgets; else the curve (--budget-curve N, default 16).
  Expected<std::string> budgets = a.budgets;
  if (a.budgets == Args().budgets || a.budget_curve > 0)
    budgets = curve_budgets(net, precisions, a.granularity, a.budget_curve > 0 ? a.budget_curve : 16);
  if (!budgets.ok()) return fail("dlbench", budgets.status());
  nlohmann::json all;
  all["mode"] = "simulate-only";
  all["cfg"] = a.cfg;
  all["size"] = net.net.width;
  all["copy_profile"] = profile->name;
  all["layer_ms_from"] = a.layer_ms_from;
  all["scale_preload_ms"] = a.scale_preload_ms;
  all["granularity"] = a.granularity;
  all["rows"] = nlohmann::json::array();
  std::printf("%-10s %-13s %9s %8s %8s %11s %11s %10s %9s %9s %9s\n", "precision", "budget", "MiB", "weights",
              "saved", "predicted", "vs preload", "bound", "resident", "pool", "residency");
  for (const std::string& prec : precisions) {
    SessionOptions o;
    o.device = DeviceKind::kCUDA;
    o.mode = WeightMode::kStream;
    if (!parse_precision(prec, &o.precision))
      return fail("dlbench", invalid_argument("--precision " + prec + ": expected fp32, tf32 or fp16"));
    o.width = o.height = a.size;
    std::string used;
    auto ms = layer_ms_from_json(a.layer_ms_from, prec, a.layer_ms_config, &used);
    if (!ms.ok()) return fail("dlbench", ms.status());
    Target t;
    t.device = DeviceKind::kCUDA;
    t.name = "simulated (" + profile->name + ")";
    t.map_granularity = a.granularity;
    t.copy_profile = *profile;
    // Steps that reach no GPU (no-op routes) take no time in the simulator: zero them
    // before scaling, so that the kernels that run sum to --scale-preload-ms.
    SessionOptions oplan = o;
    oplan.weight_budget = WeightBudget::min();
    auto plan_only = compile(net, t, oplan);
    if (!plan_only.ok()) return fail("dlbench", plan_only.status());
    if (ms->size() != plan_only->plan.steps.size())
      return fail("dlbench", invalid_argument("--layer-ms-from " + a.layer_ms_from + ": " + std::to_string(ms->size()) +
                                              " kernel times for " + std::to_string(plan_only->plan.steps.size()) +
                                              " steps of " + a.cfg));
    for (size_t i = 0; i < ms->size(); ++i) {
      const Step& st = plan_only->plan.steps[i];
      if (st.no_op && st.copies.empty()) (*ms)[i] = 0;
    }
    double sum = 0;
    for (double v : *ms) sum += v;
    if (a.scale_preload_ms > 0 && sum > 0)
      for (double& v : *ms) v *= a.scale_preload_ms / sum;
    double preload = 0;
    for (double v : *ms) preload += v;
    std::printf("# %s: kernel times of %s%s: preload (the kernels alone) %.3f ms\n", prec.c_str(), used.c_str(),
                a.scale_preload_ms > 0 ? (", scaled from " + std::to_string(sum) + " ms").c_str() : "", preload);
    // The smallest pool dlrun can stream through; a budget below it gets the bound
    // alone (what any layer-granular plan of the model could reach, none of dlrun's).
    SessionOptions omin = o;
    omin.weight_budget = WeightBudget::min();
    auto mmin = compile(net, t, omin, *ms);
    if (!mmin.ok()) return fail("dlbench", mmin.status());
    const int64_t total_bytes = mmin->plan.weight_bytes();
    for (const std::string& budget : split(*budgets)) {
      auto wb0 = WeightBudget::parse(budget);
      if (!wb0.ok()) return fail("dlbench", wb0.status());
      const int64_t want = wb0->resolve(total_bytes, mmin->stream.device_bytes());
      if (want < mmin->stream.device_bytes()) {
        auto lb = latency_lower_bound(mmin->plan, *ms, *profile, std::max<int64_t>(want, 1), a.granularity);
        if (!lb.ok()) return fail("dlbench", lb.status());
        const bool feasible = lb->pool_bytes > 0;
        all["rows"].push_back({{"precision", prec},
                               {"budget", budget},
                               {"residency", "bound only"},
                               {"budget_bytes", want},
                               {"total_weight_bytes", total_bytes},
                               {"preload_ms", preload},
                               {"predicted_ms", nullptr},
                               {"lower_bound_ms", feasible ? nlohmann::json(lb->ms) : nlohmann::json()},
                               {"kernel_times", used},
                               {"notes", {"below dlrun's minimal pool (" + std::to_string(mmin->stream.device_bytes()) +
                                          " bytes): " + (feasible ? lb->to_text() : "no layer-granular plan exists "
                                                                                    "(a blob larger than the ring "
                                                                                    "cannot be resident either)")}}});
        std::printf("%-10s %-13s %9.1f %7.1f%% %7.1f%% %12s %10s %10s %s\n", prec.c_str(), budget.c_str(), mib(want),
                    100.0 * double(want) / double(total_bytes), 100.0 * (1.0 - double(want) / double(total_bytes)),
                    "-", "-", feasible ? (std::to_string(lb->ms).substr(0, 8) + " ms").c_str() : "none",
                    "(below dlrun's minimal pool: the bound alone)");
        continue;
      }
      for (const std::string& res : split(a.residencies)) {
        if ((budget == "min" || budget == "all") && res != split(a.residencies).front()) continue;
        SessionOptions ob = o;
        auto wb = WeightBudget::parse(budget);
        if (!wb.ok()) return fail("dlbench", wb.status());
        ob.weight_budget = *wb;
        if (!parse_residency(res, &ob.residency))
          return fail("dlbench", invalid_argument("--residency " + res + ": expected greedy, largest-late or none"));
        auto m = compile(net, t, ob, *ms);
        if (!m.ok()) {
          std::fprintf(stderr, "dlbench: %s @%s: %s\n", prec.c_str(), budget.c_str(), m.status().message().c_str());
          return kExitError;
        }
        const StreamPlan& sp = m->stream;
        const double total = double(sp.total_weight_bytes);
        const int64_t device = sp.resident ? sp.total_weight_bytes : sp.device_bytes();
        const double predicted = m->predicted_ms;
        nlohmann::json row = {{"precision", prec},
                              {"budget", budget},
                              {"residency", res},
                              {"budget_bytes", std::max<int64_t>(m->budget_bytes, device)},
                              {"device_weight_bytes", device},
                              {"total_weight_bytes", sp.total_weight_bytes},
                              {"resident_bytes", sp.resident ? sp.total_weight_bytes : sp.resident_bytes},
                              {"pool_bytes", sp.resident ? 0 : sp.pool_bytes},
                              {"streamed_bytes", sp.streamed_bytes()},
                              {"preload_ms", preload},
                              {"predicted_ms", predicted},
                              {"lower_bound_ms", m->lower_bound_ms > 0 ? m->lower_bound_ms : preload},
                              {"kernel_times", used},
                              {"notes", m->notes}};
        all["rows"].push_back(row);
        std::printf("%-10s %-13s %9.1f %7.1f%% %7.1f%% %9.3f ms %+9.1f%% %7.3f ms %9.1f %9.1f %9s\n", prec.c_str(),
                    budget.c_str(), mib(device), 100.0 * double(device) / total,
                    100.0 * (1.0 - double(device) / total), predicted, 100.0 * (predicted / preload - 1.0),
                    row["lower_bound_ms"].get<double>(), mib(row["resident_bytes"]), mib(row["pool_bytes"]),
                    res.c_str());
      }
    }
  }
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << all.dump(2) << "\n";
    if (!f) return fail("dlbench", a.json + ": cannot write");
  }
  return kExitOk;
}

// --startup-floor: the smallest CUDA open on this GPU (measure_startup_floor), as this
// process's first CUDA work; printed and written to --json.
int startup_floor(const Args& a) {
#ifdef DLR_HAVE_CUDA
  const double age_before = process_age_ms();
  auto f = measure_startup_floor(0);
  if (!f.ok()) return fail("dlbench", f.status());
  const double age_after = process_age_ms();
  std::printf("startup floor (%s): %.1f ms = CUDA context %.1f + cuDNN handle %.1f + buffers %.1f + one 1x1 fp16 "
              "convolution: create %.1f (query %.1f, %s), first run %.1f, second run %.2f; process age %.0f ms "
              "before, %.0f ms after\n",
              cuda_device_description(0).c_str(), f->total_ms, f->context_ms, f->cudnn_handle_ms, f->buffers_ms,
              f->conv_create_ms, f->conv_query_ms, f->conv_algo.c_str(), f->first_run_ms, f->second_run_ms, age_before,
              age_after);
  if (!a.json.empty()) {
    const nlohmann::json j = {{"gpu", cuda_device_description(0)},
                              {"startup_floor",
                               {{"total_ms", f->total_ms},
                                {"context_ms", f->context_ms},
                                {"cudnn_handle_ms", f->cudnn_handle_ms},
                                {"buffers_ms", f->buffers_ms},
                                {"conv_create_ms", f->conv_create_ms},
                                {"conv_query_ms", f->conv_query_ms},
                                {"conv_algo", f->conv_algo},
                                {"first_run_ms", f->first_run_ms},
                                {"second_run_ms", f->second_run_ms},
                                {"process_age_before_ms", age_before},
                                {"process_age_after_ms", age_after}}}};
    std::ofstream out(a.json);
    out << j.dump(2) << "\n";
    if (!out) return fail("dlbench", a.json + ": cannot write");
  }
  return kExitOk;
#else
  (void)a;
  return fail("dlbench", "--startup-floor measures a CUDA open: this build has no CUDA backend");
#endif
}

int run(const Args& a_in) {
  Args a = a_in;
  if (a.startup_floor) return startup_floor(a);
  if (a.isolate && a.no_isolate) return fail("dlbench", invalid_argument("--isolate and --no-isolate contradict"));
  if ((a.isolate || (a.budget_curve > 0 && !a.no_isolate)) && a.simulate)
    return fail("dlbench", invalid_argument("--simulate needs the profiled preload run in the same process as the "
                                            "stream rows: use it with --no-isolate"));
  if (a.no_isolate && a.budget_curve == 0)
    return fail("dlbench", invalid_argument("--no-isolate applies to --budget-curve (isolation is off without it)"));
  if (a.simulate_only) {
    auto net = parse_network_cfg(a.cfg, CfgOptions{a.size, a.size});
    if (!net.ok()) return fail("dlbench", net.status());
    return simulate_only(a, *net);
  }
  if (a.budget_curve > 0) {  // N budgets from the minimum to all, preload in the same run
#ifdef DLR_HAVE_CUDA
    auto net = parse_network_cfg(a.cfg, CfgOptions{a.size, a.size});
    if (!net.ok()) return fail("dlbench", net.status());
    auto target = cuda_target(0, "");
    if (!target.ok()) return fail("dlbench", target.status());
    auto budgets = curve_budgets(*net, split(a.precisions), target->map_granularity, a.budget_curve);
    if (!budgets.ok()) return fail("dlbench", budgets.status());
    a.budgets = *budgets + ",auto";  // and the budget auto picks (--max-slowdown), measured in the same run
    a.modes = "preload,stream";
    a.pools = "ring";
    // Every row the first CUDA session of its process (tools/dlbench/isolate.h).
    if (!a.no_isolate) a.isolate = true;
#else
    return fail("dlbench", "--budget-curve measures on a GPU: this build has no CUDA backend (--simulate-only "
                           "predicts without one)");
#endif
  }
  for (const std::string& u : split(a.units)) {  // bad --units fail before any work, whatever the modes
    bool search = false;
    int64_t chunk = 0;
    const Status st = parse_units(u, &search, &chunk);
    if (!st.ok()) return fail("dlbench", st);
  }
  // Options that only a CUDA configuration reads are refused when no device is cuda.
  bool any_cuda = false;
  for (const std::string& d : split(a.devices)) any_cuda = any_cuda || d == "cuda";
  if (!any_cuda) {
    const Args defaults;
    const std::pair<const char*, bool> cuda_only[] = {
        {"--mode", a.modes != defaults.modes},          {"--precision", a.precisions != defaults.precisions},
        {"--layout", a.layouts != defaults.layouts},    {"--weight-budget", a.budgets != defaults.budgets},
        {"--weight-pool", a.pools != defaults.pools},   {"--units", a.units != defaults.units},
        {"--residency", a.residencies != defaults.residencies},
        {"--max-slowdown", a.max_slowdown != defaults.max_slowdown},
        {"--copy-profile", a.copy_profile != defaults.copy_profile},
        {"--no-graph", a.no_graph},                     {"--find", a.find},
        {"--no-calibrate", a.no_calibrate},             {"--warm-up-at-open", a.warm_up_at_open}};
    for (const auto& [name, set] : cuda_only)
      if (set) return fail("dlbench", invalid_argument(std::string(name) + " applies to --device cuda only"));
  }
  for (const Config& c : configs(a)) {  // every configuration's options fail before any work
    const auto o = config_options(a, c);
    if (!o.ok()) return fail("dlbench", o.status());
  }
  auto net = parse_network_cfg(a.cfg, CfgOptions{a.size, a.size});
  if (!net.ok()) return fail("dlbench", net.status());
  std::string weights = a.weights;
  if (a.synthetic) {
    weights = "/tmp/dlbench-" + std::to_string(::getpid()) + ".weights";
    SyntheticOptions so;
    so.seed = a.seed;
    const Status st = write_synthetic_weights(*net, weights, so);
    if (!st.ok()) return fail("dlbench", st);
  }
  const int size = net->net.width;
  int max_batch = 1;
  for (const std::string& b : split(a.batches)) max_batch = std::max(max_batch, std::atoi(b.c_str()));
  std::vector<float> input(size_t(max_batch) * size_t(net->input_shape().count()));
  std::mt19937 rng(uint32_t(a.seed));
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (float& v : input) v = u(rng);

  const std::vector<Config> all_configs = configs(a);
  if (a.config_index >= int(all_configs.size()))
    return fail("dlbench", invalid_argument("--config-index " + std::to_string(a.config_index) + ": there are " +
                                            std::to_string(all_configs.size()) + " configurations (0.." +
                                            std::to_string(all_configs.size() - 1) + ")"));
  nlohmann::json all;
  all["cfg"] = a.cfg;
  all["weights"] = a.synthetic ? std::string("synthetic seed ") + std::to_string(a.seed) : a.weights;
  all["size"] = size;
  all["gflops"] = net->total_gflops();
#ifdef DLR_HAVE_CUDA
  all["gpu"] = cuda_device_description(0);
  // --isolate: the copy profile auto is resolved here, once (probed on first use and
  // cached), so that no child probes: the probe's own kernels and copies leave the rest
  // of a process ~5 % slower, like another session's run (tools/dlbench/isolate.h).
  if (a.isolate && a.config_index < 0 && a.copy_profile == "auto") {
    bool any_stream = false;
    for (const Config& c : all_configs) any_stream = any_stream || (c.device == "cuda" && c.mode == "stream");
    if (any_stream) {
      const Expected<Target> t = cuda_target(0, "auto");
      if (!t.ok()) return fail("dlbench", t.status());
    }
  }
#endif
  all["results"] = nlohmann::json::array();
  std::printf("%-28s %10s %10s %10s %10s %9s %9s %9s %9s\n", "config", "median_ms", "min_ms", "p90_ms", "e2e_ms",
              "img/s", "w_MiB", "act_MiB", "ws_MiB");
  int rc = kExitOk;
  auto print_row = [&](const nlohmann::json& j) {
    const double med = j["network"]["median_ms"];
    const int batch = j["batch"];
    std::printf("%-28s %10.3f %10.3f %10.3f %10.3f %9.1f", j["config"].get<std::string>().c_str(), med,
                j["network"]["min_ms"].get<double>(), j["network"]["p90_ms"].get<double>(),
                j["end_to_end"]["median_ms"].get<double>(), med > 0 ? 1000.0 * batch / med : 0.0);
    if (j.contains("memory"))
      std::printf(" %9.1f %9.1f %9.1f", mib(j["memory"]["weights"]), mib(j["memory"]["activations"]),
                  mib(j["memory"]["workspace"]));
    if (j.contains("stream")) {
      const auto& st = j["stream"];
      std::printf("  streamed %.1f MiB, resident %.1f MiB, copy floor %.3f ms", mib(st["streamed_bytes"]),
                  mib(st["resident_bytes"]), st["copy_floor_ms"].get<double>());
      if (st["predicted_ms"].get<double>() > 0) std::printf(", predicted %.3f ms", st["predicted_ms"].get<double>());
      if (st["lower_bound_ms"].get<double>() > 0) std::printf(", bound %.3f ms", st["lower_bound_ms"].get<double>());
      if (st.value("lower_bound_calibrated_ms", 0.0) > 0)
        std::printf(" (calibrated %.3f ms)", st["lower_bound_calibrated_ms"].get<double>());
      if (st.contains("profile_kind"))
        std::printf(", %s profile %.1f GB/s at 4 MiB", st["profile_kind"].get<std::string>().c_str(),
                    st["profile_gbps_at_4mib"].get<double>());
      if (st.contains("auto_budget_note"))
        std::printf(", auto budget %.1f MiB (%.1f %%)", mib(st["budget_bytes"]),
                    100.0 * st["budget_bytes"].get<double>() / st["total_weight_bytes"].get<double>());
      if (st.contains("measured_slowdown"))
        std::printf(", slowdown predicted %+.1f %% measured %+.1f %% (max %.1f %%)",
                    100.0 * st["predicted_slowdown"].get<double>(), 100.0 * st["measured_slowdown"].get<double>(),
                    100.0 * st["max_slowdown"].get<double>());
      if (st.contains("simulated_ms")) std::printf(", simulated %.3f ms", st["simulated_ms"].get<double>());
    }
    if (j.contains("storage")) {
      const auto& sg = j["storage"];
      std::printf("  read %.1f MiB/inference (%.2f GB/s; disk floor %.3f ms at %.2f GB/s), staging %.1f MiB, page cache "
                  "+%.1f MiB, RSS peak %.0f MiB",
                  mib(sg["read_bytes_per_inference"]), sg.value("read_gbps_at_median", 0.0),
                  sg.value("read_floor_ms", 0.0), sg.value("disk_gbps", 0.0), mib(sg["staging_bytes"]),
                  mib(sg["page_cache_growth"]), mib(j["memory"]["host_rss_peak"]));
    }
    if (j.contains("startup")) {
      const auto& su = j["startup"];
      const auto& en = su["engine"];
      std::printf("\n  startup: open %.1f ms + first inference %.1f ms = %.1f ms (process age at the first result "
                  "%.0f ms); parse %.1f, target %.1f, compile %.1f, prepared file %.1f, engine %.1f [device %.1f, "
                  "cuDNN handle %.1f, weights %.1f, buffers %.1f, convolutions %.1f: %d convs, first %.1f, descriptors "
                  "%.1f, query %.1f (%d queried), cached workspace %.1f (%d cached, %d with their size), algorithm cache "
                  "%s], kernel times %.1f, warm-up %.1f%s, graph %.1f; CUDA context %.1f + cuDNN handle %.1f + priming "
                  "%.1f on the helper thread, waited %.1f",
                  su["open_ms"].get<double>(), su["first_inference_ms"].get<double>(),
                  su["open_to_first_result_ms"].get<double>(), su["process_age_at_first_result_ms"].get<double>(),
                  su["parse_ms"].get<double>(), su["target_ms"].get<double>(), su["compile_ms"].get<double>(),
                  su["prepared_ms"].get<double>(), su["engine_ms"].get<double>(), en["device_ms"].get<double>(),
                  en["cudnn_handle_ms"].get<double>(), en["weights_ms"].get<double>(), en["buffers_ms"].get<double>(),
                  en["conv_setup_ms"].get<double>(), en["convs"].get<int>(), en["conv_first_ms"].get<double>(),
                  en["conv_descriptors_ms"].get<double>(), en["conv_query_ms"].get<double>(),
                  en["convs_queried"].get<int>(), en["conv_workspace_ms"].get<double>(), en["convs_cached"].get<int>(),
                  en["convs_workspace_cached"].get<int>(),
                  en["algo_cache"].get<std::string>().empty() ? "-" : en["algo_cache"].get<std::string>().c_str(),
                  su["kernel_times_ms"].get<double>(), su["warmup_ms"].get<double>(),
                  !su["warmup_run"].get<bool>() ? " (none)" : su.value("warmup_eager", false) ? " (eager)" : " (graph replay)",
                  su["graph_ms"].get<double>(),
                  su["context_ms"].get<double>(), su["context_cudnn_ms"].get<double>(),
                  su["context_prime_ms"].get<double>(), su["context_wait_ms"].get<double>());
    }
    if (j.contains("stream")) {
      const auto& st = j["stream"];
      if (st.contains("search_predicted_ms"))
        std::printf(", units %s: searched %.3f ms predicted, equal chunks %.3f",
                    st["units"].get<std::string>() == "search" ? "searched" : "kept equal",
                    st["search_predicted_ms"].get<double>(), st["chunks_predicted_ms"].get<double>());
    }
    std::printf("\n");
    std::fflush(stdout);
  };
  for (size_t k = 0; k < all_configs.size(); ++k) {
    const Config& c = all_configs[k];
    if (a.config_index >= 0 && int(k) != a.config_index) continue;
    auto r = a.isolate && a.config_index < 0
                 ? run_config_in_child(a.argv, int(k), a.synthetic ? weights : std::string())
                 : bench_config(a, weights, c, input);
    if (!r.ok()) {
      std::fprintf(stderr, "dlbench: %s: %s\n", c.name().c_str(), r.status().message().c_str());
      rc = kExitError;
      continue;
    }
    // Weight budget auto: the measured slowdown over preload's row of the same run
    // (same device, precision, layout and batch; preload is listed before stream).
    if (r->contains("stream") && (*r)["stream"].contains("auto_preload_predicted_ms")) {
      for (const auto& p : all["results"])
        if (p["mode"] == "preload" && p["device"] == (*r)["device"] && p["precision"] == (*r)["precision"] &&
            p["layout"] == (*r)["layout"] && p["batch"] == (*r)["batch"]) {
          (*r)["stream"]["preload_measured_ms"] = p["network"]["median_ms"];
          (*r)["stream"]["measured_slowdown"] =
              (*r)["network"]["median_ms"].get<double>() / p["network"]["median_ms"].get<double>() - 1;
        }
    }
    print_row(*r);
    all["results"].push_back(*r);
  }
  if (a.opencv && a.config_index < 0) {  // not in the children of --isolate: the parent runs it
#ifdef DLR_HAVE_OPENCV
    auto r = bench_opencv(a, weights, size, input);
    if (r.ok()) {
      print_row(*r);
      all["results"].push_back(*r);
    } else {
      std::fprintf(stderr, "dlbench: opencv: %s\n", r.status().message().c_str());
      rc = kExitError;
    }
#else
    std::fprintf(stderr, "dlbench: --opencv needs a build with OpenCV\n");
    rc = kExitError;
#endif
  }
  if (!a.report.empty()) {
    for (const auto& r : all["results"]) {
      if (!r.contains("profile")) continue;
      std::vector<std::pair<double, int>> order;
      for (const auto& l : r["profile"]["layers"]) order.emplace_back(l["kernel_ms"].get<double>(), l["layer"].get<int>());
      std::sort(order.rbegin(), order.rend());
      double total = 0;
      for (const auto& o : order) total += o.first;
      std::printf("\n%s: top layers by kernel time (profiled run, %.3f ms of kernels)\n",
                  r["config"].get<std::string>().c_str(), total);
      for (size_t i = 0; i < std::min<size_t>(order.size(), 10); ++i) {
        const LayerDesc& l = net->layers[size_t(order[i].second)];
        std::printf("  layer %4d %-9s %-16s %8.3f ms %5.1f%%\n", order[i].second, layer_kind_name(l.kind),
                    l.out.to_string().c_str(), order[i].first, 100.0 * order[i].first / total);
      }
      const auto& t = r["profile"]["totals"];
      if (t["copied_bytes"].get<int64_t>() > 0)
        std::printf("  stream: stall %.3f ms, copy %.1f GB/s while busy, overlap %.0f%%\n",
                    t["stall_ms"].get<double>(), t["copy_gbps"].get<double>(),
                    100.0 * t["overlap_fraction"].get<double>());
    }
  }
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    f << all.dump(2) << "\n";
    if (!f) return fail("dlbench", a.json + ": cannot write");
  }
  if (a.synthetic) std::remove(weights.c_str());
  return rc;
}

}  // namespace

namespace {

int tool_main(int argc, char** argv) {
  dlr::init_logging();
  Args a;
  CLI::App app{"dlbench: latency, throughput and memory of dlrun configurations", "dlbench"};
  dlr::tools::ModelsBenchArgs mb;
  bool no_isolate_baselines = false;
  auto* cfg_opt = app.add_option("cfg", a.cfg, "Darknet .cfg file (required, except with --models or --startup-floor)");
  auto* models_opt = app.add_option(
      "--models", mb.models,
      "several models on one runtime (one budget, shared arena and workspace): CFG[:WEIGHTS][@SIZE],... (no "
      "WEIGHTS: synthetic); each model's own preload session is measured first (also in a process of its own: "
      "\"own process ms\", \"x own\"), then round robin per --runtime-budget (docs/streaming.md section 8)");
  models_opt->excludes(cfg_opt);
  app.add_flag("--no-isolate-baselines", no_isolate_baselines,
               "--models: do not measure each model's preload in a process of its own (by default this executable "
               "runs once more per model, first: on the H100 every CUDA session after the first of a process ran "
               "~5 % slower; docs/benchmarks.md, \"Position in the process\")");
  app.add_flag("--baseline-only", mb.baseline_only,
               "internal (the processes of --models' own-process baselines): measure the models' preload sessions "
               "only, write --json")
      ->group("");
  app.add_option("--runtime-budget", mb.budgets,
                 "--models: comma-separated budgets for all the models' device memory: NN% of their separate "
                 "preload sessions' weights + activations + workspace, a size, or all (default 40%)");
  app.add_flag("--no-prefetch", mb.no_prefetch, "--models: no prefetch of a model's first weights across inferences");
  app.add_option("--ring", mb.ring,
                 "--models: where streamed weights pass, comma-separated to compare in one run: shared (one ring "
                 "for every model, the default) or per-model (a ring of its own each)");
  app.add_flag("--time-input", mb.time_input,
               "--models: time each inference from its upload (set_input, or set_images with --input image) instead of from run(), for the "
               "preload sessions and the runtime alike (a wait of the upload for the copy engine then counts)");
  app.add_option("--input", mb.input,
                 "--models: each inference's input: tensor (an f32 NCHW tensor through set_input, pageable memory; "
                 "the default) or image (a 640x480 8-bit image through set_images, as detect() does)")
      ->check(CLI::IsMember({"tensor", "image"}));
  app.add_option("--frames", mb.frames,
                 "--models: distinct inputs per model, used in turn (default 1: the same input every time; more: "
                 "each upload reads memory no upload touched lately, as a new camera frame is)")
      ->check(CLI::Range(1, 256));
  app.add_option("--prefetch-lead", mb.prefetch_lead_ms,
                 "--models: ms of host time without copies before each model's inference that its prefetch may count "
                 "in the runtime's joint plan (SessionOptions::prefetch_lead_ms; default 0; the bench's own gap, "
                 "set_input, is an upload and does not count)")->check(CLI::Range(0.0, 1000.0));
  app.add_option("--prefetch-depth", mb.prefetch_depths,
                 "--models, shared ring: how far ahead a model's prefetch may begin, comma-separated to compare in "
                 "one run: 1 (default: only while its predecessor runs) or 2 (from two models ahead, while the "
                 "model before its predecessor runs) (RuntimeOptions::prefetch_depth)");
  app.add_option("--arena-staging", mb.arena_staging,
                 "--models: whether the runtime's models may copy streamed blobs into idle activation bytes "
                 "(SessionOptions::arena_staging), comma-separated to compare in one run: on (default) or off");
  app.add_option("--alone", mb.alone,
                 "--models --split max-slowdown: what each model's slowdown is planned against, comma-separated to "
                 "compare in one run: none (the runtime's all-resident prediction, default) or own (the model's preload "
                 "measured in a process of its own, passed as SessionOptions::alone_ms)");
  app.add_option("--workspace-limit", mb.workspace_limits,
                 "--models: the cuDNN workspace limit per convolution of the runtime's models (their shared "
                 "workspace is the largest a conv needs), comma-separated to compare in one run: default (as a "
                 "session's), 0 or a size (2MiB, 1.5MB, bytes); the separate preload sessions keep the default");
  app.add_option("--split", mb.split,
                 "--models: what the runtime's joint plan minimises: sum (the weighted sum of predicted latencies, "
                 "default) or max-slowdown (the largest predicted slowdown against each model's own preload)");
  app.add_option("--concurrent", mb.concurrent_iters,
                 "--models: also one thread per model, N detect() calls each")->check(CLI::Range(0, 1000000));
  app.add_option("--soak", mb.soak,
                 "--models: also --soak-threads threads x N detect() calls across the models, every output checked "
                 "against the single runs, device memory and RSS before and after")->check(CLI::Range(0, 10000000));
  app.add_option("--soak-threads", mb.soak_threads, "--models --soak: threads (default 4)")->check(CLI::Range(1, 64));
  auto* w = app.add_option("--weights", a.weights, "Darknet .weights file");
  app.add_flag("--synthetic", a.synthetic, "generate shape-correct synthetic weights (seeded)")->excludes(w);
  app.add_option("--seed", a.seed, "seed of synthetic weights and input (default 1)");
  app.add_option("--threads", a.threads, "CPU threads per session (0: auto, docs/library.md)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_option("--size", a.size, "network input size (square; default: the cfg's)")->check(CLI::Range(32, 8192));
  app.add_option("--batch", a.batches, "batch sizes, comma-separated (default 1)");
  app.add_option("--precision", a.precisions, "fp32,tf32,fp16 (comma-separated; cuda)");
  app.add_option("--mode", a.modes, "preload,stream (comma-separated; cuda)");
  app.add_option("--weight-budget", a.budgets,
                 "stream mode budgets, comma-separated: min, all, auto, NN%, NNMiB, NNMB, bytes (default min)");
  app.add_option("--weight-pool", a.pools, "stream mode pool layouts, comma-separated: auto, ring, slots (default auto)");
  app.add_option("--units", a.units,
                 "stream mode transfer units, comma-separated: search (chosen by simulation from kernel times "
                 "measured at open; default), chunks (equal chunks of the profile's size), chunks:SIZE (e.g. "
                 "chunks:16MiB)");
  app.add_option("--max-slowdown", a.max_slowdown,
                 "stream mode, --weight-budget auto: predicted latency at most this much above preload's (default 5%)");
  app.add_option("--residency", a.residencies,
                 "stream mode, ring: which weights stay resident within the budget, comma-separated: greedy "
                 "(default), largest-late, none");
  app.add_option("--copy-profile", a.copy_profile, "stream mode: auto (default: measured on this GPU on first use, cached per GPU), a dlprobe JSON "
                 "file, or h100, discrete, jetson-xavier");
  app.add_flag("--simulate", a.simulate,
               "also predict stream-mode latency with the simulator from the profiled preload kernel times "
               "(list preload before stream)");
  app.add_option("--budget-curve", a.budget_curve,
                 "measure N budgets from the minimal pool to all the weights, and the budget auto picks "
                 "(--max-slowdown; its row has the picked budget and the predicted and measured slowdown) (ring, "
                 "preload in the same run; N >= 12 for the curve of docs/streaming.md); each row has the planner's "
                 "prediction and the lower bound; plot with scripts/plot_budget_curve.py")
      ->check(CLI::Range(2, 200));
  app.add_flag("--isolate", a.isolate,
               "measure every configuration in a process of its own (the default with --budget-curve): on the "
               "H100 every CUDA session after the first of a process ran ~5 % slower, preload included "
               "(docs/benchmarks.md, \"Position in the process\")");
  app.add_flag("--no-isolate", a.no_isolate, "--budget-curve: every configuration in this process, one after another");
  app.add_option("--config-index", a.config_index, "internal (the processes of --isolate): measure configuration K only")
      ->check(CLI::NonNegativeNumber)
      ->group("");
  app.add_flag("--simulate-only", a.simulate_only,
               "no GPU: predict the budget curve (--budget-curve N, default 16) with the planner and the lower bound "
               "from the kernel times of --layer-ms-from and a named --copy-profile");
  app.add_option("--layer-ms-from", a.layer_ms_from,
                 "--simulate-only: a dlbench JSON file with kernel_ms_at_open (or a profiled run) for the precision");
  app.add_option("--layer-ms-config", a.layer_ms_config,
                 "--simulate-only: take the kernel times of the first result whose config contains this text");
  app.add_option("--scale-preload-ms", a.scale_preload_ms,
                 "--simulate-only: scale the kernel times so that they sum to this many ms (e.g. 160.8: the "
                 "paper's YOLOv4 on Jetson AGX Xavier)")
      ->check(CLI::PositiveNumber);
  app.add_option("--device", a.devices, "cpu,cuda (comma-separated; default cuda)");
  app.add_option("--weights-from", a.weights_from,
                 "host,storage (comma-separated): storage reads the streamed weights from a prepared file each "
                 "inference (cpu, or cuda stream mode)");
  app.add_option("--zero-copy", a.zero_copy, "storage on cuda: auto,on,off (comma-separated)");
  app.add_option("--host-budget", a.host_budget, "storage: host memory for weights (min or a size; CPU: staging + blobs kept, largest first)");
  app.add_option("--read-depth", a.read_depth, "storage: reads in flight (1..64)")->check(CLI::Range(1, 64));
  app.add_option("--read-block", a.read_block, "storage: bytes per read request (multiple of 4 KiB)");
  app.add_option("--reader", a.reader, "storage: auto, uring or threads");
  app.add_option("--prepared", a.prepared, "storage: the prepared weight file (default: the user's cache)");
  app.add_option("--prefetch-reads", a.prefetch_reads,
                 "storage, cpu: on (default: read the next inference's first weights while one still computes) or off")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_flag("--cold", a.cold, "storage: drop the prepared file from the page cache after open");
  app.add_option("--layout", a.layouts, "auto,nchw,nhwc (comma-separated; cuda)");
  app.add_option("--iters", a.iters, "timed iterations (default 50)")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", a.warmup, "untimed iterations first (default 10), after the first inference (timed alone: the startup line)")->check(CLI::Range(0, 100000));
  app.add_option("--json", a.json, "write all results to this JSON file");
  app.add_flag("--opencv", a.opencv, "also time OpenCV DNN (CPU backend) on the same input (batch 1)");
  app.add_option("--report", a.report,
                 "after each configuration, one profiled run (CUDA events per layer inside the graph); print the top layers")
      ->check(CLI::IsMember({"table"}));
  app.add_flag("--no-graph", a.no_graph, "do not use a CUDA graph");
  app.add_flag("--warm-up-at-open", a.warm_up_at_open,
               "without a CUDA graph to capture (from storage, --no-graph), run the network once at open so that "
               "the first inference finds its kernels loaded (default: none; the first inference loads them while "
               "its reads run, measured sooner to the first result on the H100; the startup line compares the two)");
  app.add_flag("--no-calibrate", a.no_calibrate,
               "stream mode: plan with the copy profile as probed (default: time the copies of 3 streamed inferences "
               "at open, fit their cost and plan again with it); each row records which profile it used");
  app.add_flag("--find", a.find, "choose cuDNN algorithms with cudnnFind (timed) instead of heuristics");
  app.add_flag("--cache", a.cache,
               "keep kernel times (stream mode) and cuDNN algorithm choices per GPU and model in the user's cache "
               "and reuse them, as dlrun does (run twice: the second run's startup line is a warm start)");
  app.add_flag("--startup-floor", a.startup_floor,
               "time only the smallest CUDA open on this GPU (context, cuDNN handle, one 1x1 convolution), as the "
               "process's first CUDA work; no configuration runs");
  a.argv.assign(argv, argv + argc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? dlr::tools::kExitOk : dlr::tools::kExitUsage;
  }
  if (!mb.models.empty()) {
    mb.device = a.devices;
    // --models on the GPU: fp16 unless --precision is given (the issue's configuration).
    mb.precision = app.count("--precision") == 0 && a.devices == "cuda" ? std::string("fp16") : a.precisions;
    mb.copy_profile = a.copy_profile;
    mb.iters = a.iters;
    mb.warmup = a.warmup;
    mb.seed = a.seed;
    mb.threads = a.threads;
    mb.json = a.json;
    mb.isolate_baselines = !no_isolate_baselines;
    return dlr::tools::run_models_bench(mb);
  }
  if (a.cfg.empty() && !a.startup_floor) {
    std::fprintf(stderr, "dlbench: give a cfg (or --models, or --startup-floor)\n");
    return dlr::tools::kExitUsage;
  }
  if (a.weights.empty() && !a.synthetic && !a.simulate_only && !a.startup_floor) {
    std::fprintf(stderr, "dlbench: give --weights FILE or --synthetic\n");
    return dlr::tools::kExitUsage;
  }
  return run(a);
}

}  // namespace

int main(int argc, char** argv) {
  return dlr::tools::guarded_main("dlbench", [&] { return tool_main(argc, argv); });
}
