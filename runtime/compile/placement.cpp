// The placement pipeline and its first passes: preload, two-stage reads, the budget and
// the automatic budget (placement.h). The passes after the budget: placement_passes.cpp.
#include "runtime/compile/placement.h"

#include <algorithm>

#include "runtime/compile/placement_internal.h"

namespace dlr {
namespace {

// The budget a placement or the options ask for, in bytes (0: the layout's minimum).
int64_t requested_budget(const PlacementState& s) {
  const int64_t total = s.plan->weight_bytes();
  if (s.placement == nullptr) return s.options->weight_budget.resolve(total, 0);
  const Placement& p = *s.placement;
  return p.budget_bytes >= total && p.shared_ring_bytes == 0 ? total : p.budget_bytes;
}

// The budget as the notes name it: the option's text, or the placement's bytes.
std::string budget_text(const PlacementState& s) {
  if (s.placement == nullptr) return s.options->weight_budget.to_string();
  const Placement& p = *s.placement;
  return p.budget_bytes >= s.plan->weight_bytes() && p.shared_ring_bytes == 0 ? WeightBudget::all().to_string()
                                                                               : std::to_string(p.budget_bytes);
}

bool auto_budget(const PlacementState& s) {
  return s.placement == nullptr && s.options->weight_budget.kind == WeightBudget::Kind::kAuto;
}

// Reads from storage land where the kernels read them: the CPU, or CUDA zero copy.
bool two_stage(const Target& target, const SessionOptions& o) {
  return o.weights_from == WeightsFrom::kStorage &&
         (o.device == DeviceKind::kCPU || o.zero_copy == 1 || (o.zero_copy == -1 && target.integrated));
}

struct AutoSearch {
  int64_t bytes = 0;
  double predicted_ms = 0, target_ms = 0;
  int plans = 0;
};

// Binary search in mapping units, from the minimal pool to every weight, for the smallest
// budget predicted within the target (the prediction falls as the budget grows, up to
// noise of a few microseconds).
Expected<AutoSearch> search_auto_budget(const PlacementState& s, int64_t minimal_pool, double all_ms) {
  const int64_t total = s.plan->weight_bytes();
  const int64_t gran = std::max<int64_t>(s.so.ring_granularity, 256);
  AutoSearch a;
  a.target_ms = s.options->latency_target_ms > 0 ? s.options->latency_target_ms
                                                  : all_ms * (1 + s.options->max_slowdown);
  auto predict = [&](int64_t units) {
    a.plans += units * gran < total;
    return predict_at_budget(s, units * gran, all_ms);
  };
  int64_t lo = minimal_pool / gran, hi = (total + gran - 1) / gran;
  DLR_ASSIGN_OR_RETURN(const double at_lo, predict(lo));
  if (at_lo <= a.target_ms) {
    a.bytes = lo * gran;
    a.predicted_ms = at_lo;
    return a;
  }
  double at_hi = all_ms;
  while (hi - lo > 1) {  // predict(lo) > target >= predict(hi), or hi is every weight
    const int64_t mid = (lo + hi) / 2;
    DLR_ASSIGN_OR_RETURN(const double ms, predict(mid));
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

CopyProfile planning_profile(const Target& target, const SessionOptions& options) {
  if (options.weights_from != WeightsFrom::kStorage) return target.copy_profile;
  return storage_copy_profile(target.copy_profile, options.read_block_bytes, options.read_depth);
}

PlacementState placement_state(const ExecutionPlan& plan, const Target& target, const SessionOptions& options,
                               const std::vector<double>& layer_ms, const Placement* placement) {
  PlacementState s;
  s.plan = &plan;
  s.target = &target;
  s.options = &options;
  s.layer_ms = &layer_ms;
  s.placement = placement;
  s.profile = planning_profile(target, options);
  s.sim.prefetched = options.prefetch_next;
  s.sim.prefetch_limit_bytes = placement ? placement->prefetch_limit_bytes : -1;
  return s;
}

Status preload_pass(PlacementState& s) {
  s.notes.push_back(fmt_text("weights: preload, %.2f MiB resident", mib(s.plan->weight_bytes())));
  return Status();
}

Status two_stage_reads_pass(PlacementState& s) {
  const SessionOptions& o = *s.options;
  const bool cpu = o.device == DeviceKind::kCPU;
  s.from_storage = true;
  ReadOptions ro = read_options(o);
  // On the CPU the host budget is all host memory for weights: blobs kept for the
  // session plus the staging (choose_host_resident). On a GPU it is the staging alone.
  std::vector<char> kept;
  int64_t kept_bytes = 0;
  if (cpu && o.host_budget > 0) {
    DLR_ASSIGN_OR_RETURN(kept, choose_host_resident(*s.plan, o.host_budget, ro));
    for (size_t b = 0; b < kept.size(); ++b)
      if (kept[b]) kept_bytes += s.plan->weights[b].bytes;
    ro.staging_bytes = std::max<int64_t>(o.host_budget - kept_bytes, 0);
  }
  DLR_ASSIGN_OR_RETURN(s.reads, plan_reads_two_stage(*s.plan, kept, ro));
  s.notes.push_back(fmt_text("weights: from storage, two stages (read -> kernel), %.2f MiB staging for %.2f MiB read "
                             "per inference",
                             mib(s.reads.staging_bytes), mib(s.reads.read_bytes())) +
                    (cpu ? "" : " (mapped pinned memory, zero copy)") +
                    (kept_bytes > 0 ? fmt_text(", %.2f MiB kept in memory (read once at open)", mib(kept_bytes)) : ""));
  return Status();
}

namespace {
// Weights from storage with a host budget (three stages: one read per transfer unit):
// the largest unit whose read, rounded out to 4096 bytes at both ends, fits twice in the
// staging (read_plan.h: the staging holds at least two reads). 0: no cap.
int64_t storage_unit_cap(const SessionOptions& o) {
  if (o.weights_from != WeightsFrom::kStorage || o.host_budget <= 0) return 0;
  return std::max<int64_t>(kReadAlign, (o.host_budget / 2 - 2 * kReadAlign) / kReadAlign * kReadAlign);
}
}  // namespace

// The stream plan's inputs the options and the placement give (budget_pass before it plans).
void init_stream(PlacementState& s) {
  const SessionOptions& o = *s.options;
  s.streaming = true;
  s.so.budget_bytes = requested_budget(s);
  s.so.chunk_bytes = o.chunk_bytes;
  s.so.max_unit_bytes = storage_unit_cap(o);
  s.so.layout = o.weight_pool;
  s.so.ring_granularity = s.target->map_granularity;
  // Budget auto searches in mapping units of the ring: with the layout left to the plan,
  // the ring even where its minimum exceeds the slots' (a model small next to the unit).
  if (auto_budget(s) && s.so.layout == PoolLayout::kAuto && s.so.ring_granularity > 0) s.so.layout = PoolLayout::kRing;
  // A Runtime's shared ring: the model streams through it even when it would hold every
  // blob (the runtime decided; the ring's bytes are shared, resident ones are not).
  s.so.never_resident = s.in_shared_ring() && s.target->map_granularity > 0;
  s.budget_bytes = s.so.budget_bytes;
}

Status budget_pass(PlacementState& s) {
  const SessionOptions& o = *s.options;
  init_stream(s);
  if (s.placement == nullptr && o.weight_budget.kind == WeightBudget::Kind::kFraction && s.so.budget_bytes < 1)
    return invalid_argument("weight budget \"" + o.weight_budget.to_string() + "\": rounds to zero bytes");
  DLR_ASSIGN_OR_RETURN(s.stream, plan_streaming(*s.plan, s.profile, s.so));
  if (!auto_budget(s) || s.streamed_ring() || (s.stream.resident && s.so.layout == PoolLayout::kRing)) return Status();
  if (s.so.ring_granularity > 0)
    return invalid_argument("weight budget auto needs the ring pool: weight_pool " + std::string(pool_layout_name(s.so.layout)) +
                            " was asked for");
  return invalid_argument("weight budget auto needs the ring pool (a GPU with CUDA virtual memory management)");
}

Status auto_budget_pass(PlacementState& s) {
  if (!auto_budget(s)) return Status();
  if (s.stream.resident) {  // the ring's minimum already holds every weight: nothing to search
    s.budget_bytes = s.plan->weight_bytes();
    s.notes.push_back(fmt_text("budget auto: every weight resident (%.2f MiB): the ring's minimum of %.2f MiB "
                               "would hold them all",
                               mib(s.plan->weight_bytes()), mib(s.stream.minimal_pool_bytes)));
    return Status();
  }
  if (!s.has_times()) {
    s.notes.push_back("budget auto: chosen once kernel times are measured at open (minimal pool meanwhile)");
    s.wants_times = true;
    return Status();
  }
  StreamOptions so = s.so;
  so.resident.clear();
  so.budget_bytes = s.plan->weight_bytes();
  DLR_ASSIGN_OR_RETURN(const StreamPlan all, plan_streaming(*s.plan, s.profile, so));
  SimOptions expanding;
  expanding.expand_ms = s.sim.expand_ms;
  const double all_ms = simulate(*s.plan, all, s.profile, *s.layer_ms, expanding).latency_ms;
  so.budget_bytes = 0;
  DLR_ASSIGN_OR_RETURN(const StreamPlan minimal, plan_streaming(*s.plan, s.profile, so));
  DLR_ASSIGN_OR_RETURN(const AutoSearch a, search_auto_budget(s, minimal.pool_bytes, all_ms));
  s.so.budget_bytes = a.bytes;
  s.budget_bytes = a.bytes;
  s.auto_preload_ms = all_ms;
  DLR_ASSIGN_OR_RETURN(s.stream, plan_streaming(*s.plan, s.profile, s.so));
  const SessionOptions& o = *s.options;
  const std::string goal = o.latency_target_ms > 0 ? fmt_text("the latency target %.3f ms", o.latency_target_ms)
                                                   : fmt_text("%.1f %% of preload's %.3f ms", 100.0 * o.max_slowdown, all_ms);
  s.notes.push_back(fmt_text("budget auto: %.2f MiB (%.1f %% of the weights), predicted %.3f ms", mib(a.bytes),
                             100.0 * double(a.bytes) / double(s.plan->weight_bytes()), a.predicted_ms) +
                    ", the smallest within " + goal + fmt_text(" (%.0f residency plans)", double(a.plans)));
  if (a.predicted_ms > a.target_ms)
    s.notes.push_back(fmt_text("budget auto: no budget meets the target; every weight resident predicts %.3f ms", all_ms));
  return Status();
}

// The pool the budget gave, after the automatic budget (a note).
Status pool_note_pass(PlacementState& s) {
  s.notes.push_back("weights: budget " + budget_text(s) + " -> " +
                    (s.stream.resident ? std::string("resident") : pool_layout_name(s.stream.layout)) +
                    fmt_text(" pool of %.2f MiB for %.2f MiB of weights", mib(s.stream.pool_bytes),
                             mib(s.stream.total_weight_bytes)) +
                    " (copy profile " + s.profile.name +
                    (s.target->copy_profile_source.empty() ? "" : ": " + s.target->copy_profile_source) + ")");
  return Status();
}

Expected<double> predict_at_budget(const PlacementState& s, int64_t budget_bytes, double all_resident_ms) {
  if (budget_bytes >= s.plan->weight_bytes()) return all_resident_ms;
  PlacementState t = s;
  t.so.budget_bytes = budget_bytes;
  t.so.resident.clear();
  t.so.arena_offset.clear();
  t.so.arena_wait.clear();
  t.so.arena_early.clear();
  t.so.arena_joined.clear();
  t.budget_bytes = budget_bytes;
  DLR_RETURN_IF_ERROR(choose_residency(t));
  if (!t.streamed_ring()) return t.predicted_ms;
  DLR_RETURN_IF_ERROR(staging_pass(t));
  DLR_RETURN_IF_ERROR(units_pass(t));
  return t.predicted_ms;
}

Expected<PlacementEstimate> estimate_placement(const PlacementModel& model, const Placement& candidate,
                                               const SimOptions& sim, const PassEffort& effort, bool stage) {
  PlacementState s = placement_state(*model.plan, *model.target, *model.options, *model.layer_ms, &candidate);
  s.sim = sim;
  s.effort = effort;
  PlacementEstimate e;
  if (!s.in_shared_ring()) {  // every weight resident, or a pool of its own
    DLR_RETURN_IF_ERROR(budget_pass(s));
    e.residency_ms = simulate(*s.plan, s.stream, s.profile, *s.layer_ms, sim).latency_ms;
    e.stream = std::move(s.stream);
    return e;
  }
  init_stream(s);
  DLR_RETURN_IF_ERROR(choose_residency(s));
  e.stream = s.stream;
  e.resident = s.resident_set;
  e.residency_ms = s.predicted_ms;
  if (!stage) return e;
  DLR_RETURN_IF_ERROR(staging_pass(s));
  e.staged = !s.so.arena_offset.empty();
  e.staged_ms = s.predicted_ms;
  return e;
}

namespace {

Status choice_passes(PlacementState& s) {
  for (Status (*pass)(PlacementState&) : {residency_pass, staging_pass, units_pass, tail_pass})
    DLR_RETURN_IF_ERROR(pass(s));
  return Status();
}

// With tail copies the residency, staging and units chosen for the steady state, and those
// chosen for one inference with the tail added after: the faster (ties: the second, which
// is the plan without tail_prefetch plus its tail). Their greedy searches take different
// paths, and neither predicts faster everywhere.
Status choose_with_tail(PlacementState& s) {
  PlacementState single = s;
  single.tail_aware = false;
  DLR_RETURN_IF_ERROR(choice_passes(single));
  DLR_RETURN_IF_ERROR(choice_passes(s));
  if (s.predicted_ms < single.predicted_ms) return Status();
  s = std::move(single);
  return Status();
}

}  // namespace

Status plan_placement(PlacementState& s) {
  const SessionOptions& o = *s.options;
  if (two_stage(*s.target, o)) return two_stage_reads_pass(s);
  if (o.device != DeviceKind::kCUDA || o.mode != WeightMode::kStream) return preload_pass(s);
  for (Status (*pass)(PlacementState&) : {budget_pass, auto_budget_pass, pool_note_pass})
    DLR_RETURN_IF_ERROR(pass(s));
  DLR_RETURN_IF_ERROR(tail_possible(s) && s.has_times() ? choose_with_tail(s) : choice_passes(s));
  for (Status (*pass)(PlacementState&) : {reads_pass, predict_pass, bound_pass}) DLR_RETURN_IF_ERROR(pass(s));
  return Status();
}

}  // namespace dlr
