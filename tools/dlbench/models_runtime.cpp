// dlbench --models, second half: all the models on one Runtime for every combination of
// the runtime's lists (--arena-staging, --prefetch-depth, --alone, --workspace-limit,
// --ring, --runtime-budget): round robin (each model in turn, single thread),
// optionally one thread per model (concurrent) and a soak of several threads checking
// every output against the single runs, with device memory and RSS before and after.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tools/common/progress.h"
#include "tools/common/session_flags.h"
#include "tools/common/tool_support.h"
#include "tools/dlbench/models_bench.h"
#include "tools/dlbench/stats.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr::tools {
namespace {

using Clock = std::chrono::steady_clock;

// One combination of the runtime's lists.
struct Variant {
  std::string staging, depth, alone, workspace, ring, budget;
};

// Every combination, --arena-staging outermost, --runtime-budget innermost.
std::vector<Variant> variants(const ModelsBenchArgs& a) {
  std::vector<Variant> out;
  for (const std::string& staging : split(a.arena_staging))
    for (const std::string& depth : split(a.prefetch_depths))
      for (const std::string& alone : split(a.alone))
        for (const std::string& workspace : split(a.workspace_limits))
          for (const std::string& ring : split(a.ring))
            for (const std::string& budget : split(a.budgets))
              out.push_back({staging, depth, alone, workspace, ring, budget});
  return out;
}

using Models = std::vector<std::unique_ptr<RuntimeModel>>;

int64_t device_free(const SessionOptions& o) {
#ifdef DLR_HAVE_CUDA
  if (o.device == DeviceKind::kCUDA) {
    int64_t f = 0, t = 0;
    if (cuda_memory_info(o.cuda_device, &f, &t).ok()) return f;
  }
#else
  (void)o;
#endif
  return -1;
}

bool same(const std::vector<Detection>& a, const std::vector<Detection>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i].box, &b[i].box, sizeof(Box)) != 0 || a[i].class_id != b[i].class_id ||
        a[i].prob != b[i].prob)
      return false;
  return true;
}

RuntimeOptions runtime_options(const ModelsBench& b, const Variant& v) {
  RuntimeOptions ro;
  ro.shared_ring = v.ring == "shared";
  ro.device = b.base.device;
  ro.copy_profile = b.a.copy_profile;
  ro.prefetch_next = !b.a.no_prefetch;
  ro.prefetch_depth = std::stoi(v.depth);
  ro.objective = b.objective;
  const auto p = b.percents.find(v.budget);
  ro.budget = p != b.percents.end() && p->second > 0 ? std::to_string(int64_t(double(b.separate) * p->second / 100.0))
                                                     : v.budget;
  return ro;
}

Status open_models(const ModelsBench& b, const Variant& v, Runtime& rt, Models* models) {
  for (const ModelSpec& s : b.specs) {
    SessionOptions o = session_options(b, s);
    o.workspace_limit = b.workspace_limits.at(v.workspace);
    o.prefetch_lead_ms = b.a.prefetch_lead_ms;
    o.arena_staging = v.staging == "on";
    for (const auto& [option, text] : b.a.model_flags) DLR_RETURN_IF_ERROR(set_session_flag(FlagTool::kDlbench, option, text, &o));
    const size_t k = models->size();
    o.alone_ms = v.alone == "own" && b.own_ms[k] > 0 ? b.own_ms[k] : 0.0;
    auto m = rt.open(s.cfg, s.weights, o);
    if (!m.ok()) return Status(m.status().code(), s.name + ": " + m.status().message());
    models->push_back(std::move(m).value());
  }
  return Status();
}

Status round_robin(ModelsBench& b, const Models& models, std::vector<Timed>* rr) {
  const double paced_from = steady_clock_ms();
  int n = 0;
  for (int k = 0; k < b.a.warmup + b.a.iters; ++k)
    for (size_t i = 0; i < models.size(); ++i, ++n) {
      wait_for_frame(paced_from, b.a.period_ms, n);
      DLR_RETURN_IF_ERROR(infer(models[i]->session(), b.inputs[i], k < b.a.warmup ? nullptr : &(*rr)[i],
                                b.a.time_input));
    }
  return Status();
}

nlohmann::json run_json(const ModelsBench& b, const Variant& v, const Runtime& rt, const RuntimeOptions& ro,
                        const RuntimeMemory& mem, double open_s) {
  nlohmann::json run;
  run["budget"] = v.budget;
  run["split"] = b.a.split;
  run["ring"] = v.ring;
  run["workspace_limit"] = v.workspace;
  run["prefetch_lead_ms"] = b.a.prefetch_lead_ms;
  run["period_ms"] = b.a.period_ms;
  run["prefetch_depth"] = ro.prefetch_depth;
  run["arena_staging"] = v.staging == "on";
  run["alone"] = v.alone;
  run["workspace_limit_bytes"] = b.workspace_limits.at(v.workspace);
  run["budget_bytes"] = rt.budget_bytes();
  run["open_s"] = open_s;
  run["memory"] = {{"total", mem.total()}, {"arena", mem.arena}, {"workspace", mem.workspace},
                   {"weights", mem.weights}, {"ring", mem.ring}, {"other", mem.other}, {"host_weights", mem.host_weights},
                   {"fraction_of_separate", b.separate > 0 ? double(mem.total()) / double(b.separate) : 0.0}};
  run["plan"] = rt.plan_text();
  return run;
}

// A line per model: its share of the runtime and its round-robin latency against its
// preload sessions.
void models_table(const ModelsBench& b, const RuntimeMemory& mem, const std::vector<Timed>& rr, nlohmann::json* run) {
  std::printf("%-22s %10s %10s %10s %10s %10s %10s %12s %12s %10s %10s %10s\n", "model", "resident", "pool",
              "streamed", "prefetch", "landed", "predicted", "round robin", "x preload", "x again", "input ms",
              "x own");
  for (size_t i = 0; i < b.specs.size(); ++i) {
    const RuntimeMemory::Model& m = mem.models[i];
    const double ms = median(rr[i].total_ms);
    const double landed = rr[i].ready_mib.empty() ? 0.0 : median(rr[i].ready_mib);
    const double x_own = b.own_ms[i] > 0 ? ms / b.own_ms[i] : -1.0;
    std::printf("%-22s %10.2f %10.2f %10.2f %10.2f %10.2f %10.3f %12.3f %12.3f %10.3f %10.3f %10s\n",
                b.specs[i].name.c_str(), mib(m.resident), mib(m.pool), mib(m.streamed), mib(m.prefetched), landed,
                m.predicted_ms, ms, ms / b.preload_ms[i], ms / b.again_ms[i], median(rr[i].input_ms),
                ms_or_dash(x_own).c_str());
    (*run)["models"].push_back({{"model", b.specs[i].name},
                                {"weight_budget", m.weight_budget},
                                {"resident", m.resident},
                                {"pool", m.pool},
                                {"streamed", m.streamed},
                                {"prefetched", m.prefetched},
                                {"prefetch_landed_mib_median", landed},
                                {"input_ms", median(rr[i].input_ms)},
                                {"prefetched_inferences", rr[i].ready_mib.size()},
                                {"arena_need", m.arena_need},
                                {"workspace_need", m.workspace_need},
                                {"other", m.other},
                                {"host_weights", m.host_weights},
                                {"predicted_ms", m.predicted_ms},
                                {"round_robin_ms", ms},
                                {"round_robin_network_ms", median(rr[i].network_ms)},
                                {"preload_ms", b.preload_ms[i]},
                                {"x_preload", ms / b.preload_ms[i]},
                                {"x_preload_again", ms / b.again_ms[i]},
                                {"preload_own_process_ms", ms_or_null(b.own_ms[i])},
                                {"x_preload_own_process", ms_or_null(x_own)}});
  }
}

// The thread of model `m` in the concurrent run: `iters` detect() calls on the images in turn.
void detect_in_turn(RuntimeModel* m, const std::vector<ImageU8>* images, int iters, std::vector<double>* latency_ms,
                    std::atomic<int>* failures) {
  for (int k = 0; k < iters; ++k) {
    const auto c0 = Clock::now();
    if (!m->detect((*images)[size_t(k) % images->size()]).ok()) ++*failures;
    latency_ms->push_back(std::chrono::duration<double, std::milli>(Clock::now() - c0).count());
  }
}

// Concurrent: one thread per model, detect() on images.
void run_concurrent(const ModelsBench& b, const Models& models, nlohmann::json* run, int* rc) {
  std::vector<std::vector<double>> lat(models.size());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (size_t i = 0; i < models.size(); ++i)
    threads.emplace_back(detect_in_turn, models[i].get(), &b.images, b.a.concurrent_iters, &lat[i], &failures);
  for (std::thread& th : threads) th.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("concurrent (one thread per model, detect() with pre/post-processing): %.1f inferences/s in all, "
              "%d failures\n",
              double(models.size()) * b.a.concurrent_iters / wall, failures.load());
  for (size_t i = 0; i < models.size(); ++i) {
    std::printf("  %-22s %10.3f ms median per detect()\n", b.specs[i].name.c_str(), median(lat[i]));
    (*run)["concurrent"]["models"].push_back({{"model", b.specs[i].name}, {"detect_ms", median(lat[i])}});
  }
  (*run)["concurrent"]["inferences_per_s"] = double(models.size()) * b.a.concurrent_iters / wall;
  (*run)["concurrent"]["failures"] = failures.load();
  if (failures.load() > 0) *rc = kExitError;
}

// What the threads of a soak count.
struct SoakCounts {
  std::atomic<int> mismatches{0}, failures{0};
};

// Soak thread `t`: --soak detect() calls across the models and images, each output
// compared with the model's single run on that image.
void soak_thread(const ModelsBench* b, const Models* models, int t, SoakCounts* counts) {
  for (int k = 0; k < b->a.soak; ++k) {
    const size_t m = size_t(t + k) % models->size();
    const size_t img = size_t(t * 7 + k) % b->images.size();
    auto d = (*models)[m]->detect(b->images[img]);
    if (!d.ok()) ++counts->failures;
    else if (!same(*d, b->reference[m][img])) ++counts->mismatches;
  }
}

// Soak: threads x inferences across the models, every output against the single runs.
void run_soak(const ModelsBench& b, const Models& models, nlohmann::json* run, int* rc) {
  for (size_t i = 0; i < models.size(); ++i)  // reach steady state before measuring memory
    for (const ImageU8& img : b.images) (void)models[i]->detect(img);
  const int64_t free_before = device_free(b.base);
  const HostMemory rss_before = host_memory();
  SoakCounts counts;
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int t = 0; t < b.a.soak_threads; ++t) threads.emplace_back(soak_thread, &b, &models, t, &counts);
  for (std::thread& th : threads) th.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const int64_t free_after = device_free(b.base);
  const HostMemory rss_after = host_memory();
  const int mismatches = counts.mismatches.load(), failures = counts.failures.load();
  std::printf("soak: %d threads x %d inferences in %.1f s: %d outputs differ from the single runs, %d failures; "
              "device free %+.2f MiB, RSS %+.2f MiB\n",
              b.a.soak_threads, b.a.soak, wall, mismatches, failures,
              free_before >= 0 ? mib(free_after - free_before) : 0.0, mib(rss_after.rss - rss_before.rss));
  (*run)["soak"] = {{"threads", b.a.soak_threads},  {"inferences_per_thread", b.a.soak},
                    {"seconds", wall},              {"mismatches", mismatches},
                    {"failures", failures},         {"device_free_before", free_before},
                    {"device_free_after", free_after}, {"rss_before", rss_before.rss},
                    {"rss_after", rss_after.rss}};
  if (mismatches > 0 || failures > 0) *rc = kExitError;
}

// The round robin's period (the models' medians added) against the round's lower bound
// (multi/round_bound.h), where the runtime has one shared ring and a budget and the
// models run back to back (copies in host gaps are outside the bound's argument).
void round_bound_line(const Runtime& rt, const std::vector<Timed>& rr, double period_ms, nlohmann::json* run) {
  double round = 0;
  for (const Timed& t : rr) round += median(t.total_ms);
  (*run)["round_ms"] = round;
  if (period_ms > 0) {
    std::printf("round robin %.3f ms of inferences a round, one begun every %g ms (the round's lower bound is for "
                "back to back)\n", round, period_ms);
    return;
  }
  const Expected<RoundBound> b = rt.round_bound();
  if (!b.ok()) {
    std::printf("round robin %.3f ms a round (%s)\n", round, b.status().message().c_str());
    return;
  }
  char ratio[32] = "-";
  if (b->ms > 0) std::snprintf(ratio, sizeof ratio, "%.3f", round / b->ms);
  std::printf("round robin %.3f ms a round = %s x the %s\n", round, ratio, b->to_text().c_str());
  (*run)["round_bound"] = {{"ms", b->ms},
                           {"compute_ms", b->compute_ms},
                           {"bytes_ms", b->bytes_ms},
                           {"gbps", b->gbps},
                           {"weight_bytes", b->weight_bytes},
                           {"budget_bytes", b->budget_bytes},
                           {"window_ms", b->window_ms},
                           {"window_bytes", b->window_bytes},
                           {"end_room", b->end_room},
                           {"text", b->to_text()}};
}

// Each model's round-robin latency against its bound alone within the weight budget
// (Runtime::alone_bounds), on one line, and models[i].alone_bound_ms in the JSON.
void alone_bounds_line(const Runtime& rt, const ModelsBench& b, const std::vector<Timed>& rr, nlohmann::json* run) {
  const Expected<std::vector<LatencyBound>> bounds = rt.alone_bounds();
  if (!bounds.ok()) return;  // the round's line said why
  std::string line = "each model alone within the weight budget, its ring full when it starts, is no faster than:";
  for (size_t i = 0; i < bounds->size() && i < rr.size(); ++i) {
    const double ms = (*bounds)[i].ms, got = median(rr[i].total_ms);
    char part[160];
    std::snprintf(part, sizeof part, " %s %.3f ms (round robin %.3f x it);", b.specs[i].name.c_str(), ms,
                  ms > 0 ? got / ms : 0.0);
    line += part;
    (*run)["models"][i]["alone_bound_ms"] = ms;
  }
  line.pop_back();
  std::printf("%s\n", line.c_str());
}

// One combination: the runtime opened with every model, its line and plan printed, the
// round robin, then the concurrent and soak runs when asked for.
Status run_variant(ModelsBench& b, const Variant& v, int* rc) {
  const RuntimeOptions ro = runtime_options(b, v);
  const HostMemory host_before = host_memory();
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt, Runtime::create(ro));
  Models models;
  const auto t_open = Clock::now();
  DLR_RETURN_IF_ERROR(open_models(b, v, *rt, &models));
  const double open_s = std::chrono::duration<double>(Clock::now() - t_open).count();
  const RuntimeMemory mem = rt->memory();
  std::printf("\nruntime budget %s, %s ring, workspace limit %s, prefetch lead %g ms, period %g ms, prefetch depth %s, arena "
              "staging %s, slowdowns against %s (%.2f MiB, %.1f %% of the separate sessions), opened in %.2f s\n%s\n",
              v.budget.c_str(), v.ring.c_str(), v.workspace.c_str(), b.a.prefetch_lead_ms, b.a.period_ms, v.depth.c_str(),
              v.staging.c_str(), v.alone == "own" ? "the latency alone" : "the all-resident prediction",
              mib(rt->budget_bytes()), b.separate > 0 ? 100.0 * double(mem.total()) / double(b.separate) : 0.0, open_s,
              mem.to_text().c_str());
  std::vector<Timed> rr(b.specs.size());
  DLR_RETURN_IF_ERROR(round_robin(b, models, &rr));
  nlohmann::json run = run_json(b, v, *rt, ro, mem, open_s);
  models_table(b, mem, rr, &run);
  round_bound_line(*rt, rr, b.a.period_ms, &run);
  alone_bounds_line(*rt, b, rr, &run);
  if (b.a.concurrent_iters > 0) run_concurrent(b, models, &run, rc);
  if (b.a.soak > 0) run_soak(b, models, &run, rc);
  run["host_rss_before_open"] = host_before.rss;
  run["host_rss_after"] = host_memory().rss;
  b.out["runs"].push_back(run);
  models.clear();  // before the runtime
  return Status();
}

}  // namespace

Status run_on_runtimes(ModelsBench& b, int* rc) {
  for (const Variant& v : variants(b.a)) DLR_RETURN_IF_ERROR(run_variant(b, v, rc));
  return Status();
}

}  // namespace dlr::tools
