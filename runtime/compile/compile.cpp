#include "runtime/compile/compile.h"

#include <algorithm>
#include <cstdio>

#include "loaders/network_desc.h"
#include "runtime/core/log.h"
#include "runtime/streaming/arena_staging.h"
#include "runtime/streaming/lower_bound.h"
#include "runtime/streaming/residency.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/unit_search.h"

namespace dlr {
namespace {

double mib(int64_t b) { return double(b) / (1024.0 * 1024.0); }

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), f, a, b, c);
  return buf;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string n = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = n.rfind(".cfg");
  return dot != std::string::npos && dot + 4 == n.size() ? n.substr(0, dot) : n;
}

bool streamed_ring(const CompiledModel& m) {
  return m.streaming && !m.stream.resident && m.stream.layout == PoolLayout::kRing;
}

// Transfer units chosen by simulation.
bool searchable(const CompiledModel& m) {
  return streamed_ring(m) && m.options.unit_search && m.options.chunk_bytes == 0;
}

// Streamed blobs copied into the activation arena's idle bytes (arena_staging.h): the
// CUDA engine runs them; weights from host (the storage pipeline reads into the pool).
bool stageable(const CompiledModel& m) {
  return streamed_ring(m) && m.options.arena_staging && m.options.device == DeviceKind::kCUDA &&
         m.options.weights_from == WeightsFrom::kHost && !m.plan.options.keep_all_outputs;
}

bool auto_budget(const CompiledModel& m) { return m.options.weight_budget.kind == WeightBudget::Kind::kAuto; }

// Resident blobs chosen within the budget: only a budget above the minimal pool
// leaves room (an explicit "min" budget does not); "auto" is chosen with them.
bool residency_planned(const CompiledModel& m) {
  return streamed_ring(m) && (auto_budget(m) || (m.options.residency != Residency::kNone && m.budget_bytes > 0));
}

// Weight budget "auto": the smallest budget (in mapping units, from the minimal ring
// to every weight) whose residency plan the simulator predicts within the target:
// (1 + max_slowdown) x preload's predicted latency, or latency_target_ms. Binary
// search over the budget (the prediction falls as the budget grows, up to noise of a
// few microseconds; the search takes ~8 residency plans for yolov4).
struct AutoBudget {
  int64_t bytes = 0;
  double predicted_ms = 0, preload_ms = 0, target_ms = 0;
  int plans = 0;
};

Expected<AutoBudget> choose_auto_budget(const ExecutionPlan& plan, const CopyProfile& profile, StreamOptions so,
                                        const SessionOptions& options, const std::vector<double>& layer_ms,
                                        bool staging) {
  AutoBudget a;
  const int64_t total = plan.weight_bytes();
  so.resident.clear();
  so.budget_bytes = total;
  DLR_ASSIGN_OR_RETURN(StreamPlan all, plan_streaming(plan, profile, so));
  a.preload_ms = simulate(plan, all, profile, layer_ms).latency_ms;
  a.target_ms = options.latency_target_ms > 0 ? options.latency_target_ms : a.preload_ms * (1 + options.max_slowdown);
  so.budget_bytes = 0;
  DLR_ASSIGN_OR_RETURN(StreamPlan minimal, plan_streaming(plan, profile, so));
  const int64_t gran = std::max<int64_t>(so.ring_granularity, 256);
  ResidencyOptions ro;
  ro.sim.prefetched = options.prefetch_next;
  ro.strategy = options.residency;
  // The prediction the final compile makes at that budget: the residency plan, then
  // (where the model stages blobs in the arena) its staging, then (when units are
  // searched) its searched cut.
  const bool search = options.unit_search && options.chunk_bytes == 0;
  UnitSearchOptions us;
  us.min_gain = options.unit_search_min_gain;
  us.sim.prefetched = options.prefetch_next;
  auto predict = [&](int64_t budget) -> Expected<double> {
    if (budget >= total) return a.preload_ms;
    so.budget_bytes = budget;
    so.resident.clear();
    ++a.plans;
    so.arena_offset.clear();
    so.arena_wait.clear();
    DLR_ASSIGN_OR_RETURN(ResidencyResult r, plan_residency(plan, profile, so, layer_ms, ro));
    if (r.plan.resident || r.plan.layout != PoolLayout::kRing) return r.predicted_ms;
    if (r.plan.resident_bytes > 0) so.resident = r.resident;
    double ms = r.predicted_ms;
    if (staging) {
      ArenaStagingOptions st;
      st.sim.prefetched = options.prefetch_next;
      DLR_ASSIGN_OR_RETURN(ArenaStagingResult s, plan_arena_staging(plan, profile, so, layer_ms, st));
      if (s.staged > 0) {
        so.arena_offset = std::move(s.offset);
        so.arena_wait = std::move(s.wait);
        ms = s.predicted_ms;
      }
    }
    if (!search) return ms;
    DLR_ASSIGN_OR_RETURN(UnitSearchResult u, search_ring_units(plan, profile, so, layer_ms, us));
    return u.predicted_ms;
  };
  int64_t lo = minimal.pool_bytes / gran, hi = (total + gran - 1) / gran;  // in mapping units
  DLR_ASSIGN_OR_RETURN(double at_lo, predict(lo * gran));
  if (at_lo <= a.target_ms) {
    a.bytes = lo * gran;
    a.predicted_ms = at_lo;
    return a;
  }
  double at_hi = a.preload_ms;
  while (hi - lo > 1) {  // predict(lo) > target >= predict(hi), or hi is every weight
    const int64_t mid = (lo + hi) / 2;
    DLR_ASSIGN_OR_RETURN(double ms, predict(mid * gran));
    if (ms <= a.target_ms) {
      hi = mid;
      at_hi = ms;
    } else {
      lo = mid;
    }
  }
  a.bytes = std::min(hi * gran, total);
  a.predicted_ms = at_hi;
  return a;
}

}  // namespace

Target cpu_target() { return Target{}; }

PlannerOptions planner_options(DeviceKind device, const SessionOptions& options) {
  PlannerOptions p;
  p.batch = options.batch;
  p.concat_in_place = options.concat_in_place;
  p.keep_all_outputs = options.keep_all_outputs;
  // Storage: blob sizes in 4096 multiples, so streamed ranges are O_DIRECT-readable (read_plan.h).
  if (options.weights_from == WeightsFrom::kStorage) p.weight_align = kReadAlign;
  if (device == DeviceKind::kCPU) return p;  // fp32 NCHW, strided views everywhere
  const bool f16 = options.precision == Precision::kFP16;
  // Auto layout (measured on the H100, yolov4 @608): tensor-core precisions run faster
  // in NHWC (fp16 1.88 vs 2.67 ms, tf32 2.45 vs 3.19 ms); strict fp32 in NCHW (8.1 vs 9.0 ms).
  const bool tensor_cores = options.precision != Precision::kFP32;
  p.layout = options.layout < 0 ? (tensor_cores ? Layout::kNHWC : Layout::kNCHW)
                                : (options.layout == 1 ? Layout::kNHWC : Layout::kNCHW);
  p.activation_dtype = f16 ? DType::kF16 : DType::kF32;
  p.weight_dtype = p.activation_dtype;
  // cuDNN accepts NCHW channel slices (strided images) but rejects NHWC slices
  // (pixel stride > channels): every algorithm answers NOT_SUPPORTED (measured, cuDNN 9.14).
  p.conv_strided_io = p.layout == Layout::kNCHW;
  // So a route whose only reader is a 1x1 conv costs no copy and no buffer in NHWC: the
  // conv reads the parts (kernels/cuda/conv_concat.cpp, one GEMM per part).
  p.conv_over_concat = p.layout == Layout::kNHWC;
  return p;
}

bool CompiledModel::needs_layer_times() const {
  return (searchable(*this) || residency_planned(*this) || stageable(*this)) && layer_ms.empty();
}

int64_t CompiledModel::device_weight_bytes() const {
  if (from_storage && reads.two_stage) return 0;  // kernels read the staging area (host memory)
  return streaming ? stream.device_bytes() : plan.weight_bytes();
}

EngineSettings engine_settings(const SessionOptions& o) {
  EngineSettings e;
  e.device = o.device;
  e.precision = o.precision;
  e.cuda_device = o.cuda_device;
  e.cuda_graph = o.cuda_graph;
  e.profile_layers = o.profile_layers;
  e.find_algorithms = o.find_algorithms;
  e.workspace_limit = o.workspace_limit;
  e.cache_conv_algos = o.cache_kernel_times;  // one switch for what is kept per GPU and model
  e.max_image_width = o.max_image_width;
  e.max_image_height = o.max_image_height;
  e.reader = o.reader;
  e.prefetch_next = o.prefetch_next && o.mode == WeightMode::kStream && o.weights_from == WeightsFrom::kHost;
  e.shared_memory = o.shared_memory;
  e.shared_ring = o.shared_ring_bytes > 0 && o.mode == WeightMode::kStream;
  e.prefetch_reads = o.prefetch_reads;
  e.warm_up_at_open = o.warm_up_at_open;
  // Reads from storage cannot be captured: storage runs enqueue each inference.
  if (o.weights_from == WeightsFrom::kStorage) e.cuda_graph = false;
  return e;
}

Expected<CompiledModel> compile(const NetworkDesc& net, const Target& target, const SessionOptions& options,
                                const std::vector<double>& layer_ms) {
  DLR_RETURN_IF_ERROR(validate_options(options));
  if (target.device != options.device)
    return invalid_argument(std::string("compile: options ask for device ") + device_name(options.device) +
                            " but the target is " + device_name(target.device));
  CompiledModel m;
  m.cfg_path = net.cfg_path;
  m.model_name = base_name(net.cfg_path);
  m.target = target;
  m.options = options;
  m.engine = engine_settings(options);
  m.letterbox = options.letterbox < 0 ? net.net.letter_box : options.letterbox != 0;
  DLR_ASSIGN_OR_RETURN(m.plan, build_plan(net, planner_options(options.device, options)));
  if (!layer_ms.empty() && layer_ms.size() != m.plan.steps.size())
    return invalid_argument("compile: " + std::to_string(layer_ms.size()) + " kernel times for " +
                            std::to_string(m.plan.steps.size()) + " steps");
  m.layer_ms = layer_ms;
  m.notes.push_back(fmt("activations: %.2f MiB planned (%.2f MiB without reuse)", mib(m.plan.arena_bytes),
                        mib(m.plan.naive_bytes)));
  ReadOptions ro;
  ro.staging_bytes = options.host_budget;
  ro.queue_depth = options.read_depth;
  ro.block_bytes = options.read_block_bytes;
  const bool storage = options.weights_from == WeightsFrom::kStorage;
  const bool zero_copy = storage && (options.device == DeviceKind::kCPU || options.zero_copy == 1 ||
                                     (options.zero_copy == -1 && target.integrated));
  if (zero_copy) {
    // Two stages: the staging area is where kernels read weights; nothing else holds them.
    m.from_storage = true;
    // On the CPU the host budget is all host memory for weights: blobs kept for the
    // session plus the staging (choose_host_resident). On a GPU it is the staging alone.
    std::vector<char> kept;
    int64_t kept_bytes = 0;
    if (options.device == DeviceKind::kCPU && options.host_budget > 0) {
      DLR_ASSIGN_OR_RETURN(kept, choose_host_resident(m.plan, options.host_budget, ro));
      for (size_t b = 0; b < kept.size(); ++b)
        if (kept[b]) kept_bytes += m.plan.weights[b].bytes;
      ro.staging_bytes = std::max<int64_t>(options.host_budget - kept_bytes, 0);
    }
    DLR_ASSIGN_OR_RETURN(m.reads, plan_reads_two_stage(m.plan, kept, ro));
    m.notes.push_back(fmt("weights: from storage, two stages (read -> kernel), %.2f MiB staging for %.2f MiB read "
                          "per inference",
                          mib(m.reads.staging_bytes), mib(m.reads.read_bytes())) +
                      (options.device == DeviceKind::kCUDA ? " (mapped pinned memory, zero copy)" : "") +
                      (kept_bytes > 0 ? fmt(", %.2f MiB kept in memory (read once at open)", mib(kept_bytes)) : ""));
    return m;
  }
  if (options.device != DeviceKind::kCUDA || options.mode != WeightMode::kStream) {
    m.notes.push_back(fmt("weights: preload, %.2f MiB resident", mib(m.plan.weight_bytes())));
    return m;
  }

  m.streaming = true;
  // Weights from storage: every streamed byte passes the disk and then PCIe, one unit
  // after the other, so the budget, the resident set and the units are chosen with the
  // slower of the two at each size (storage_copy_profile); the prediction below then
  // simulates the reads explicitly.
  const CopyProfile profile =
      storage ? storage_copy_profile(target.copy_profile, ro.block_bytes, ro.queue_depth) : target.copy_profile;
  StreamOptions so;
  so.budget_bytes = options.weight_budget.resolve(m.plan.weight_bytes(), 0);  // 0: the layout's minimum
  if (options.weight_budget.kind == WeightBudget::Kind::kFraction && so.budget_bytes < 1)
    return invalid_argument("weight budget \"" + options.weight_budget.to_string() + "\": rounds to zero bytes");
  so.chunk_bytes = options.chunk_bytes;
  so.layout = options.weight_pool;
  so.ring_granularity = target.map_granularity;
  // A Runtime's shared ring: the model streams through it even when it would hold every
  // blob (the runtime decided; the ring's bytes are shared, resident ones are not).
  so.never_resident = options.shared_ring_bytes > 0 && target.map_granularity > 0;
  m.budget_bytes = so.budget_bytes;
  DLR_ASSIGN_OR_RETURN(m.stream, plan_streaming(m.plan, profile, so));
  if (auto_budget(m) && !streamed_ring(m))
    return invalid_argument("weight budget auto needs the ring pool (a GPU with CUDA virtual memory management)");
  if (auto_budget(m) && !layer_ms.empty()) {
    DLR_ASSIGN_OR_RETURN(AutoBudget a, choose_auto_budget(m.plan, profile, so, options, layer_ms, stageable(m)));
    so.budget_bytes = a.bytes;
    m.budget_bytes = a.bytes;
    m.auto_preload_ms = a.preload_ms;
    DLR_ASSIGN_OR_RETURN(m.stream, plan_streaming(m.plan, profile, so));
    const std::string goal = options.latency_target_ms > 0
                                 ? fmt("the latency target %.3f ms", options.latency_target_ms)
                                 : fmt("%.1f %% of preload's %.3f ms", 100.0 * options.max_slowdown, a.preload_ms);
    m.notes.push_back(fmt("budget auto: %.2f MiB (%.1f %% of the weights), predicted %.3f ms", mib(a.bytes),
                          100.0 * double(a.bytes) / double(m.plan.weight_bytes()), a.predicted_ms) +
                      ", the smallest within " + goal + fmt(" (%.0f residency plans)", double(a.plans)));
    if (a.predicted_ms > a.target_ms)
      m.notes.push_back(fmt("budget auto: no budget meets the target; every weight resident predicts %.3f ms",
                            a.preload_ms));
  } else if (auto_budget(m)) {
    m.notes.push_back("budget auto: chosen once kernel times are measured at open (minimal pool meanwhile)");
  }
  m.notes.push_back("weights: budget " + options.weight_budget.to_string() + " -> " +
                    (m.stream.resident ? std::string("resident") : pool_layout_name(m.stream.layout)) +
                    fmt(" pool of %.2f MiB for %.2f MiB of weights", mib(m.stream.pool_bytes),
                        mib(m.stream.total_weight_bytes)) +
                    " (copy profile " + profile.name +
                    (target.copy_profile_source.empty() ? "" : ": " + target.copy_profile_source) + ")");

  // A Runtime's shared ring: the pool is exactly the ring, the rest of the budget is room
  // for resident blobs (the joint plan predicted this very plan: plan_residency_in_ring).
  const bool in_shared_ring = options.shared_ring_bytes > 0 && streamed_ring(m) && !layer_ms.empty();
  if (in_shared_ring) {
    ResidencyOptions ro;
    ro.strategy = options.residency;
    ro.sim.prefetched = options.prefetch_next;
    ro.sim.prefetch_limit_bytes = options.prefetch_limit_bytes;
    ro.max_simulations = kRingResidencySimulations;
    const int64_t room = std::max<int64_t>(0, so.budget_bytes - options.shared_ring_bytes);
    ResidencyResult r;
    if (!options.shared_ring_resident.empty()) {  // the runtime's joint plan chose the set
      if (options.shared_ring_resident.size() != m.plan.weights.size())
        return invalid_argument("shared ring: a resident set of " + std::to_string(options.shared_ring_resident.size()) +
                                " entries for " + std::to_string(m.plan.weights.size()) + " weight blobs");
      StreamOptions fixed = so;
      fixed.resident = options.shared_ring_resident;
      fixed.budget_bytes = options.shared_ring_bytes;
      for (size_t b = 0; b < m.plan.weights.size(); ++b)
        if (fixed.resident[b]) fixed.budget_bytes += m.plan.weights[b].bytes;
      if (fixed.budget_bytes - options.shared_ring_bytes > room)
        return invalid_argument("shared ring: the resident set exceeds the budget's room");
      DLR_ASSIGN_OR_RETURN(r.plan, plan_streaming(m.plan, profile, fixed));
      r.resident = fixed.resident;
      r.how = fmt("residency: the runtime's joint plan: %.2f MiB resident", mib(r.plan.resident_bytes));
    } else {
      DLR_ASSIGN_OR_RETURN(r, plan_residency_in_ring(m.plan, profile, so, options.shared_ring_bytes, room, layer_ms,
                                                     ro));
    }
    if (r.plan.pool_bytes != options.shared_ring_bytes || r.plan.resident)
      return internal_error("shared ring: the plan's pool is not the ring");
    so.resident = r.plan.resident_bytes > 0 ? r.resident : std::vector<char>();
    so.budget_bytes = options.shared_ring_bytes + r.plan.resident_bytes;
    m.stream = std::move(r.plan);
    m.notes.push_back(r.how + fmt(" (shared ring of %.2f MiB)", mib(options.shared_ring_bytes)));
  } else if (residency_planned(m) && !layer_ms.empty()) {
    ResidencyOptions ro;
    ro.strategy = options.residency;
    ro.sim.prefetched = options.prefetch_next;
    DLR_ASSIGN_OR_RETURN(ResidencyResult r, plan_residency(m.plan, profile, so, layer_ms, ro));
    if (r.plan.resident_bytes > 0) so.resident = r.resident;
    m.stream = std::move(r.plan);
    m.notes.push_back(r.how);
  } else if (residency_planned(m)) {
    m.notes.push_back("residency: chosen once kernel times are measured at open");
  }
  if (stageable(m) && !layer_ms.empty()) {
    ArenaStagingOptions st;
    st.sim.prefetched = options.prefetch_next;
    st.sim.prefetch_limit_bytes = options.prefetch_limit_bytes;
    DLR_ASSIGN_OR_RETURN(ArenaStagingResult a, plan_arena_staging(m.plan, profile, so, layer_ms, st));
    if (a.staged > 0) {
      so.arena_offset = std::move(a.offset);
      so.arena_wait = std::move(a.wait);
      m.stream = std::move(a.plan);
    }
    m.notes.push_back(a.how);
  }
  if (searchable(m) && !layer_ms.empty()) {
    UnitSearchOptions search;
    search.min_gain = options.unit_search_min_gain;
    search.sim.prefetched = options.prefetch_next;
    search.sim.prefetch_limit_bytes = options.prefetch_limit_bytes;
    DLR_ASSIGN_OR_RETURN(UnitSearchResult r, search_ring_units(m.plan, profile, so, layer_ms, search));
    // Same budget, same ring: only the cut of the byte stream (and so the waits) changes.
    if (r.plan.pool_bytes != m.stream.pool_bytes || r.plan.layout != m.stream.layout)
      return internal_error("compile: the unit search changed the pool");
    m.stream = std::move(r.plan);
    m.notes.push_back(m.stream.units_searched
                          ? fmt("units: %.0f chosen by simulation: %.3f ms predicted, equal chunks %.3f ms",
                                double(m.stream.units.size()), r.predicted_ms, r.default_ms)
                          : fmt("units: equal chunks kept (%.3f ms predicted; the best searched cut, %.3f ms, gains "
                                "less than %.1f %%)",
                                r.default_ms, m.stream.searched_ms, 100.0 * search.min_gain));
  } else if (searchable(m)) {
    m.notes.push_back("units: equal chunks until kernel times are measured at open");
  } else {
    m.notes.push_back(fmt("units: %.0f equal chunks", double(m.stream.units.size())));
  }
  if (storage) {
    m.from_storage = true;
    if (m.stream.resident) {
      m.notes.push_back("weights: from storage, every blob fits the budget: read once at open");
    } else {
      DLR_ASSIGN_OR_RETURN(m.reads, plan_reads_three_stage(m.plan, m.stream, ro));
      m.notes.push_back(fmt("weights: from storage, three stages (read -> copy -> kernel), %.2f MiB staging for "
                            "%.2f MiB read per inference",
                            mib(m.reads.staging_bytes), mib(m.reads.read_bytes())));
    }
  }
  // The prefetch copies what the runtime's window allows, no more (stream_plan.h).
  m.stream.prefetch_limit_bytes = options.prefetch_next ? options.prefetch_limit_bytes : -1;
  if (!layer_ms.empty()) {
    SimOptions sim_options;
    sim_options.prefetched = options.prefetch_next;
    sim_options.prefetch_limit_bytes = options.prefetch_limit_bytes;
    const StorageProfile disk = target.copy_profile.storage_or_default();
    if (storage && !m.reads.units.empty()) {
      sim_options.reads = &m.reads;
      sim_options.read_ms = [&](int64_t bytes) { return disk.read_ms(bytes, m.reads.block_bytes, m.reads.queue_depth); };
      sim_options.launch_us = 8.0;  // no CUDA graph: every layer launched from the host
    }
    const SimResult sim = simulate(m.plan, m.stream, target.copy_profile, layer_ms, sim_options);
    if (!sim.violations.empty()) return internal_error("compile: the stream plan fails a check: " + sim.violations[0]);
    m.predicted_ms = sim.latency_ms;
    if (target.map_granularity > 0 && (streamed_ring(m) || m.stream.resident)) {
      // What no ring plan within this budget could beat: is a miss the planner's or physics'?
      const int64_t budget = std::max(m.budget_bytes, m.stream.device_bytes());
      // The bound uses the copy engine's probed speed; with a calibrated profile, the bound
      // under the calibrated cost is computed and reported beside it.
      const CopyProfile& physical = target.copy_calibrated() ? target.probed_copy_profile : target.copy_profile;
      DLR_ASSIGN_OR_RETURN(LatencyBound lb,
                           latency_lower_bound(m.plan, layer_ms, physical, budget, target.map_granularity));
      m.lower_bound_ms = lb.ms;
      m.notes.push_back(lb.to_text() + fmt("; this plan: %.3f ms predicted", m.predicted_ms));
      if (target.copy_calibrated()) {
        DLR_ASSIGN_OR_RETURN(LatencyBound lc, latency_lower_bound(m.plan, layer_ms, target.copy_profile, budget,
                                                                  target.map_granularity));
        m.lower_bound_calibrated_ms = lc.ms;
        m.notes.push_back("calibrated " + lc.to_text());
      }
    }
  }
  return m;
}

std::string CompiledModel::to_text() const {
  std::string s = "model: " + model_name + " (" + cfg_path + ") on " + target.name + ", " +
                  device_name(options.device) + " " + precision_name(options.precision) + ", " +
                  weight_mode_name(streaming ? WeightMode::kStream : WeightMode::kPreload) + "\n";
  s += plan.to_text();
  if (streaming && !(from_storage && reads.two_stage)) s += stream.to_text();
  if (from_storage) s += reads.to_text();
  if (predicted_ms > 0) s += fmt("predicted: %.3f ms per inference (simulator, kernel times measured at open)\n",
                                 predicted_ms);
  if (lower_bound_ms > 0) s += fmt("lower bound: %.3f ms (no plan within the budget is predicted faster)\n",
                                   lower_bound_ms);
  if (lower_bound_calibrated_ms > 0)
    s += fmt("lower bound, calibrated copies: %.3f ms (the same bound at the copy bandwidth measured in an inference)\n",
             lower_bound_calibrated_ms);
  for (const std::string& n : notes) s += "note: " + n + "\n";
  return s;
}

}  // namespace dlr
