#include "tools/dlbench/measure.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "runtime/compile/compile.h"
#include "runtime/core/clock.h"
#include "runtime/cpu/cpu_threads.h"
#include "runtime/session.h"
#include "runtime/storage/block_reader.h"
#include "runtime/streaming/copy_profile_json.h"
#include "runtime/streaming/simulator.h"
#include "tools/common/process_exit.h"
#include "tools/common/progress.h"
#include "tools/common/report.h"
#include "tools/dlbench/detect_timing.h"
#include "tools/dlbench/startup.h"
#include "tools/dlbench/stats.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr::tools {
namespace {



// A configuration's session and what was measured around its open.
struct Opened {
  std::unique_ptr<Session> session;
  double open_ms = 0;
  HostMemory host_before;                       // before the open
  int64_t device_free_before = 0, device_free_after = 0;  // CUDA: around the open
  std::string prepared;                         // the prepared weight file (storage), else empty
  int64_t cache_before = 0;                     // its page-cache bytes before the timed inferences
};

Status device_free(const SessionOptions& opt, int64_t* free_bytes) {
#ifdef DLR_HAVE_CUDA
  int64_t total = 0;
  if (opt.device == DeviceKind::kCUDA) return cuda_memory_info(opt.cuda_device, free_bytes, &total);
#else
  (void)opt;
  (void)free_bytes;
#endif
  return Status();
}

// Opens the session; storage: drops the prepared file from the page cache after open
// with --cold, and reads its page-cache bytes.
Expected<Opened> open_config(const Args& a, const std::string& weights, const SessionOptions& opt) {
  Opened o;
  DLR_RETURN_IF_ERROR(device_free(opt, &o.device_free_before));
  const auto t_open = Clock::now();
  o.host_before = host_memory();
  DLR_ASSIGN_OR_RETURN(o.session, Session::open(a.cfg, weights, opt));
  o.open_ms = ms_since(t_open);
  o.prepared = o.session->prepared_path();
  if (!o.prepared.empty() && a.cold) DLR_RETURN_IF_ERROR(drop_page_cache(o.prepared));
  if (!o.prepared.empty()) {
    DLR_ASSIGN_OR_RETURN(o.cache_before, page_cache_bytes(o.prepared));
  }
  DLR_RETURN_IF_ERROR(device_free(opt, &o.device_free_after));
  return o;
}

Status run_once(Engine& e, const std::vector<float>& input, int batch) {
  DLR_RETURN_IF_ERROR(e.set_input(input.data(), batch));
  return e.run();
}

struct Timings {
  double first_inference_ms = 0;
  double age_at_first_result = 0;
  Stats network, end_to_end, upload;
  Stats read_ahead_mib;  // weights from storage: MiB whose reads landed before the inference began
  Stats cached_mib;      // ... and MiB read from the page cache
  double first_cached_mib = 0;  // the first inference's
  Stats reads_end_ms;    // ... and when its last read landed, ms from its start (negative: all read ahead)
};

// The MiB of the last inference's reads that landed before it began (read ahead).
double read_ahead_mib(const Engine& e) {
  int64_t bytes = 0;
  for (const ReadTiming& r : e.read_timings())
    if (r.end_ms <= 0) bytes += r.bytes;
  return mib(bytes);
}

// When the last inference's last read landed, ms from its start (0: no reads).
double reads_end_ms(const Engine& e) {
  double end = 0;
  bool any = false;
  for (const ReadTiming& r : e.read_timings()) {
    end = any ? std::max(end, r.end_ms) : r.end_ms;
    any = true;
  }
  return end;
}

// The first inference after open, timed alone (the startup report; one more warm-up),
// then --warmup untimed and --iters timed ones.
Expected<Timings> time_inferences(const Args& a, Engine& e, const std::vector<float>& input, int batch) {
  Timings t;
  const auto t_first = Clock::now();
  DLR_RETURN_IF_ERROR(run_once(e, input, batch));
  t.first_inference_ms = ms_since(t_first);
  t.first_cached_mib = mib(e.read_cached_bytes());
  t.age_at_first_result = process_age_ms();
  for (int i = 0; i < a.warmup; ++i) DLR_RETURN_IF_ERROR(run_once(e, input, batch));
  std::vector<double> net, e2e, upload, ahead, reads_end, cached;
  const double paced_from = steady_clock_ms();
  for (int i = 0; i < a.iters; ++i) {
    wait_for_frame(paced_from, a.period_ms, i);
    const auto t0 = Clock::now();
    DLR_RETURN_IF_ERROR(run_once(e, input, batch));
    e2e.push_back(ms_since(t0));
    const RunTiming rt = e.last_run_timing();
    net.push_back(rt.network_ms);
    upload.push_back(rt.upload_ms);
    ahead.push_back(read_ahead_mib(e));
    reads_end.push_back(reads_end_ms(e));
    cached.push_back(mib(e.read_cached_bytes()));
  }
  t.network = stats_of(net);
  t.end_to_end = stats_of(e2e);
  t.upload = stats_of(upload);
  t.read_ahead_mib = stats_of(ahead);
  t.reads_end_ms = stats_of(reads_end);
  t.cached_mib = stats_of(cached);
  return t;
}

nlohmann::json memory_json(const Opened& o, const MemoryReport& m, const HostMemory& host_after) {
  return {{"weights", m.weights},
          {"activations", m.activations},
          {"workspace", m.workspace},
          {"other", m.other},
          {"activations_naive", o.session->plan().naive_bytes},
          {"device_delta_after_open", o.device_free_before - o.device_free_after},
          {"host_weights", m.host_weights},
          {"host_rss_before_open", o.host_before.rss},
          {"host_rss_after", host_after.rss},
          {"host_rss_peak", host_after.hwm}};
}

// Weights from storage: what is read per inference, the page cache, and the floor the disk sets.
nlohmann::json storage_json(const Args& a, const SessionOptions& opt, const Opened& o, int64_t cache_after,
                            const Timings& t) {
  const double median_ms = t.network.median;
  const ReadPlan& rp = o.session->model().reads;
  nlohmann::json s = {{"prepared_file", o.prepared},
                      {"two_stage", rp.two_stage},
                      {"read_bytes_per_inference", rp.read_bytes()},
                      {"reads_per_inference", rp.units.size()},
                      {"largest_read", rp.largest_unit()},
                      {"staging_bytes", rp.staging_bytes},
                      {"queue_depth", rp.queue_depth},
                      {"block_bytes", rp.block_bytes},
                      {"page_cache_before", o.cache_before},
                      {"page_cache_after", cache_after},
                      {"page_cache_growth", cache_after - o.cache_before},
                      {"inferences", a.warmup + a.iters},
                      {"prefetch_reads", opt.prefetch_reads && rp.read_ahead_units > 0},
                      {"read_ahead_units", opt.prefetch_reads ? rp.read_ahead_units : 0},
                      {"read_ahead_mib",
                       {{"median", t.read_ahead_mib.median}, {"min", t.read_ahead_mib.min}, {"mean", t.read_ahead_mib.mean}}},
                      // The reads' end against the network time: what follows the last read.
                      {"reads_end_ms",
                       {{"median", t.reads_end_ms.median}, {"p90", t.reads_end_ms.p90}, {"min", t.reads_end_ms.min}}},
                      {"cache_hits", opt.cache_hits},
                      {"cached_mib", {{"median", t.cached_mib.median}, {"min", t.cached_mib.min}, {"mean", t.cached_mib.mean}}},
                      {"first_inference_cached_mib", t.first_cached_mib},
                      {"cold", a.cold}};
  if (median_ms > 0) s["read_gbps_at_median"] = double(rp.read_bytes()) / (median_ms * 1e6);
  // The floor the disk sets: the bytes read at the profile's O_DIRECT bandwidth for this
  // block size and depth (the target of issue 15 is 1.15 x max(preload, this, the copy floor)).
  const StorageProfile disk = o.session->model().target.copy_profile.storage_or_default();
  const double gbps = disk.direct_gbps(std::min<int64_t>(rp.block_bytes, std::max<int64_t>(rp.largest_unit(), 1)),
                                       rp.queue_depth);
  s["disk_gbps"] = gbps;
  s["disk_device"] = disk.device;
  s["read_floor_ms"] = gbps > 0 ? double(rp.read_bytes()) / (gbps * 1e6) : 0.0;
  return s;
}

// The stream plan's sizes, the copy profile it was planned with, and its predictions.
nlohmann::json stream_plan_json(const CompiledModel& cm, const StreamPlan& sp, const SessionOptions& opt) {
  // As resolved at open (auto: this GPU's), calibrated in an inference unless --no-calibrate.
  const CopyProfile& profile = cm.target.copy_profile;
  const CopyProfile& probed = cm.target.copy_calibrated() ? cm.target.probed_copy_profile : profile;
  const double copy_floor_ms = double(sp.streamed_bytes()) / (probed.peak_gbps() * 1e6);  // the probed peak
  return {{"pool_bytes", sp.pool_bytes},
          {"pool_layout", sp.resident ? "resident" : pool_layout_name(sp.layout)},
          {"slot_bytes", sp.slot_bytes},
          {"slots", sp.slots},
          {"resident", sp.resident},
          {"streamed_bytes", sp.streamed_bytes()},
          {"copies_per_inference", sp.resident ? 0 : sp.units.size()},
          {"total_weight_bytes", sp.total_weight_bytes},
          {"profile", profile.name},
          {"profile_source", cm.target.copy_profile_source},
          {"profile_peak_gbps", profile.peak_gbps()},
          // Which profile the prediction used: "calibrated" (in an inference at open) or "probed".
          {"profile_kind", cm.target.copy_calibrated() ? "calibrated" : "probed"},
          {"probed_profile", probed.name},
          {"probed_peak_gbps", probed.peak_gbps()},
          {"profile_gbps_at_4mib", double(4 << 20) / (profile.copy_ms(4 << 20) * 1e6)},
          // The whole profile the plan was made with, for dlbench --simulate-only --profile-from-row.
          {"copy_profile", copy_profile_to_json(profile)},
          {"probed_gbps_at_4mib", double(4 << 20) / (probed.copy_ms(4 << 20) * 1e6)},
          {"copy_floor_ms", copy_floor_ms},
          // The copy floor at the slot's size: streamed bytes at the probed bandwidth of one slot-sized copy.
          {"copy_floor_slot_ms", sp.slot_bytes > 0 ? double(sp.streamed_bytes()) * probed.copy_ms(sp.slot_bytes) /
                                                         double(sp.slot_bytes)
                                                   : 0.0},
          {"units", sp.units_searched ? "search" : "chunks"},
          {"tail_units", sp.tail_units},  // the next inference's leading units copied under this one's tail
          {"tail_bytes", sp.tail_bytes()},
          {"residency", residency_name(opt.residency)},
          {"resident_bytes", sp.resident_bytes},
          {"device_weight_bytes", sp.device_bytes()},
          {"budget_bytes", cm.budget_bytes},
          {"predicted_ms", cm.predicted_ms},
          {"lower_bound_ms", cm.lower_bound_ms},
          {"lower_bound_expanded_steps", cm.lower_bound_expanded_steps},  // int8 expansions its kernel times count inline
          {"lower_bound_calibrated_ms", cm.lower_bound_calibrated_ms}};
}

std::string kernel_times_key(const Config& c) {
  return c.item("precision") + "/" + c.item("layout") + "/" + std::to_string(c.batch) + "/" + c.item("slot_bytes");
}

// Stream mode: the plan, the budget auto picked, the unit search, and with --simulate
// the simulator's latency from a profiled preload row's kernel times.
nlohmann::json stream_json(const Args& a, const Config& c, const SessionOptions& opt, const Session& session,
                           KernelTimes* kernel_ms) {
  const CompiledModel& cm = session.model();
  const StreamPlan& sp = cm.stream;
  nlohmann::json s = stream_plan_json(cm, sp, opt);
  if (cm.options->weight_budget.kind == WeightBudget::Kind::kAuto && cm.auto_preload_ms > 0) {
    // The budget auto picked, and its predicted slowdown over preload's prediction (the
    // measured slowdown is added once preload's row of the same run is known).
    s["auto_budget_pct"] = 100.0 * double(cm.budget_bytes) / double(sp.total_weight_bytes);
    s["auto_preload_predicted_ms"] = cm.auto_preload_ms;
    s["predicted_slowdown"] = cm.predicted_ms / cm.auto_preload_ms - 1;
    s["max_slowdown"] = cm.options->max_slowdown;
  }
  for (const std::string& note : cm.notes)
    if (note.rfind("residency: ", 0) == 0) s["residency_note"] = note;
    else if (note.rfind("budget auto: ", 0) == 0) s["auto_budget_note"] = note;
    else if (note.rfind("tail: ", 0) == 0) s["tail_note"] = note;
  if (sp.searched_ms > 0) {
    s["search_predicted_ms"] = sp.searched_ms;
    s["chunks_predicted_ms"] = sp.chunks_ms;
    s["kernel_ms_at_open"] = sp.search_layer_ms;
    if (!cm.expand_ms.empty()) s["expand_ms_at_open"] = cm.expand_ms;  // the part of it expanding int8 weights
    s["unit_ends"] = sp.unit_ends();
  }
  const auto k = kernel_ms->find(kernel_times_key(c));
  if (a.simulate && k != kernel_ms->end()) {
    const SimResult sim = simulate(session.plan(), sp, cm.target.copy_profile, k->second);
    s["simulated_ms"] = sim.latency_ms;
    s["simulated_stall_ms"] = sim.stall_ms;
    s["simulated_violations"] = sim.violations.size();
  }
  return s;
}

// One extra profiled session (CUDA events per layer, recorded inside the graph): where
// the time goes. A row that is not stream mode keeps its kernel times for --simulate.
Expected<nlohmann::json> profile_json(const Args& a, const std::string& weights, const Config& c,
                                      const SessionOptions& opt, const NetworkDesc& net,
                                      const std::vector<float>& input, KernelTimes* kernel_ms) {
  SessionOptions popt = opt;
  popt.profile_layers = true;
  DLR_ASSIGN_OR_RETURN(auto prof, Session::open(a.cfg, weights, popt));
  Engine& pe = prof->engine();
  for (int i = 0; i < 3; ++i) DLR_RETURN_IF_ERROR(run_once(pe, input, c.batch));
  nlohmann::json p = layer_report_json(net, pe);
  p["network_ms_with_events"] = pe.last_run_ms();
  if (c.mode != "stream") {
    std::vector<double> k;
    for (const LayerTiming& t : pe.layer_timings()) k.push_back(std::max(0.0, t.ms()));
    (*kernel_ms)[kernel_times_key(c)] = k;
  }
  return p;
}

nlohmann::json row_json(const Args& a, const Config& c, const Opened& o, const Timings& t) {
  const Session& session = *o.session;
  const NetworkDesc& nd = session.network();
  nlohmann::json j;
  j["config"] = c.name();
  j["device"] = c.device;
  j["mode"] = c.mode;
  j["precision"] = c.item("precision");
  j["layout"] = layout_name(session.plan().options.layout);
  j["batch"] = c.batch;
  j["size"] = nd.net.width;
  j["iters"] = a.iters;
  j["warmup"] = a.warmup;
  j["period_ms"] = a.period_ms;
  j["open_ms"] = o.open_ms;
  j["startup"] = startup_json(session.open_timing(), t.first_inference_ms, c.device == "cuda");
  j["startup"]["process_age_at_first_result_ms"] = t.age_at_first_result;  // meaningful for the first configuration
  j["network"] = stats_json(t.network);
  j["end_to_end"] = stats_json(t.end_to_end);
  j["upload"] = stats_json(t.upload);
  j["throughput_ips"] = t.network.median > 0 ? 1000.0 * c.batch / t.network.median : 0.0;
  j["gflops"] = nd.total_gflops();
  return j;
}

}  // namespace

Expected<nlohmann::json> measure_config(const Args& a, const std::string& weights, const Config& c,
                                        const std::vector<float>& input, KernelTimes* kernel_ms) {
  DLR_ASSIGN_OR_RETURN(const SessionOptions opt, config_options(a, c));
  DLR_ASSIGN_OR_RETURN(Opened o, open_config(a, weights, opt));
  Engine& e = o.session->engine();
  const CpuThreadScope threads(opt.threads);  // the engine is driven directly, not through Session::detect
  DLR_ASSIGN_OR_RETURN(const Timings t, time_inferences(a, e, input, c.batch));
  const MemoryReport m = e.memory();
  const HostMemory host_after = host_memory();
  int64_t cache_after = 0;
  if (!o.prepared.empty()) {
    DLR_ASSIGN_OR_RETURN(cache_after, page_cache_bytes(o.prepared));
  }
  nlohmann::json j = row_json(a, c, o, t);
  j["memory"] = memory_json(o, m, host_after);
  if (!o.prepared.empty()) j["storage"] = storage_json(a, opt, o, cache_after, t);
  if (o.session->model().streaming) j["stream"] = stream_json(a, c, opt, *o.session, kernel_ms);
  if (a.detect > 0) {
    DLR_ASSIGN_OR_RETURN(j["detect"], time_detect(*o.session, c.batch, a.detect, a.seed));
  }
  if (!a.report.empty() || a.simulate) {
    DLR_ASSIGN_OR_RETURN(j["profile"], profile_json(a, weights, c, opt, o.session->network(), input, kernel_ms));
  }
  // A configuration in its own process ends as dlrun does: the session left to the exit.
  if (a.config_index >= 0 && opt.device == DeviceKind::kCUDA && exit_without_teardown())
    hold_until_exit(std::move(o.session));
  return j;
}

}  // namespace dlr::tools
