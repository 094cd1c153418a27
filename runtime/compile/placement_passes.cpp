// The placement passes after the budget: residency, arena staging, transfer units,
// reads, the prediction and the lower bound (placement.h).
#include <algorithm>

#include "runtime/compile/placement_internal.h"
#include "runtime/streaming/arena_staging.h"
#include "runtime/streaming/lower_bound.h"
#include "runtime/streaming/residency.h"
#include "runtime/streaming/tail_choice.h"
#include "runtime/streaming/unit_search.h"

namespace dlr {
namespace {

bool auto_budget(const PlacementState& s) {
  return s.placement == nullptr && s.options->weight_budget.kind == WeightBudget::Kind::kAuto;
}

// Resident blobs are chosen within the budget: only a budget above the minimal pool
// leaves room (an explicit "min" budget does not); "auto" is chosen with them.
bool residency_planned(const PlacementState& s) {
  return s.streamed_ring() && (auto_budget(s) || (s.options->residency != Residency::kNone && s.budget_bytes > 0));
}

// What residency, staging and the unit search compare plans by: with tail copies the
// steady state with each plan's best tail (tail_choice.h).
SimOptions choice_sim(const PlacementState& s) {
  SimOptions sim = s.sim;
  sim.tail = s.tail_aware && tail_possible(s);
  return sim;
}

ResidencyOptions residency_options(const PlacementState& s) {
  ResidencyOptions ro;
  ro.strategy = s.options->residency;
  ro.sim = choice_sim(s);
  if (s.in_shared_ring()) ro.max_simulations = kRingResidencySimulations;
  if (s.effort.residency_simulations > 0) ro.max_simulations = s.effort.residency_simulations;
  return ro;
}

// The joint plan's fixed resident set, planned as it is.
Expected<ResidencyResult> fixed_residency(const PlacementState& s) {
  const Placement& p = *s.placement;
  if (p.resident.size() != s.plan->weights.size())
    return invalid_argument("shared ring: a resident set of " + std::to_string(p.resident.size()) + " entries for " +
                            std::to_string(s.plan->weights.size()) + " weight blobs");
  StreamOptions fixed = s.so;
  fixed.resident = p.resident;
  fixed.budget_bytes = p.shared_ring_bytes;
  for (size_t b = 0; b < s.plan->weights.size(); ++b)
    if (fixed.resident[b]) fixed.budget_bytes += s.plan->weights[b].bytes;
  const int64_t room = std::max<int64_t>(0, s.so.budget_bytes - p.shared_ring_bytes);
  if (fixed.budget_bytes - p.shared_ring_bytes > room)
    return invalid_argument("shared ring: the resident set exceeds the budget's room");
  ResidencyResult r;
  DLR_ASSIGN_OR_RETURN(r.plan, plan_streaming(*s.plan, s.profile, fixed));
  r.resident = fixed.resident;
  r.predicted_ms = 0;
  r.how = fmt_text("residency: the runtime's joint plan: %.2f MiB resident", mib(r.plan.resident_bytes));
  return r;
}

// A Runtime's shared ring: the pool is exactly the ring, the rest of the budget is room
// for resident blobs (the placement's set, or chosen within the room).
Status shared_ring_residency(PlacementState& s) {
  const int64_t ring = s.placement->shared_ring_bytes;
  ResidencyResult r;
  if (!s.placement->resident.empty()) {
    DLR_ASSIGN_OR_RETURN(r, fixed_residency(s));
  } else {
    const int64_t room = std::max<int64_t>(0, s.so.budget_bytes - ring);
    DLR_ASSIGN_OR_RETURN(r, plan_residency_in_ring(*s.plan, s.profile, s.so, ring, room, *s.layer_ms,
                                                   residency_options(s)));
  }
  if (r.plan.pool_bytes != ring || r.plan.resident) return internal_error("shared ring: the plan's pool is not the ring");
  s.so.resident = r.plan.resident_bytes > 0 ? r.resident : std::vector<char>();
  s.resident_set = std::move(r.resident);
  s.so.budget_bytes = ring + r.plan.resident_bytes;
  s.stream = std::move(r.plan);
  s.predicted_ms = r.predicted_ms;
  s.notes.push_back(r.how + fmt_text(" (shared ring of %.2f MiB)", mib(ring)));
  return Status();
}

ReadOptions reads_of(const SessionOptions& o) {
  ReadOptions ro;
  ro.staging_bytes = o.host_budget;
  ro.queue_depth = o.read_depth;
  ro.block_bytes = o.read_block_bytes;
  return ro;
}

}  // namespace

ReadOptions read_options(const SessionOptions& options) { return reads_of(options); }

// The tail copies need the ring's bytes untouched between two inferences: a session's
// own ring, weights from host, no Runtime around it.
bool tail_possible(const PlacementState& s) {
  const SessionOptions& o = *s.options;
  return o.tail_prefetch && s.streamed_ring() && o.device == DeviceKind::kCUDA && o.weights_from == WeightsFrom::kHost &&
         s.placement == nullptr && !o.prefetch_next;
}

bool searchable(const PlacementState& s) {
  return s.streamed_ring() && s.options->unit_search && s.options->chunk_bytes == 0;
}

bool stageable(const PlacementState& s) {
  const SessionOptions& o = *s.options;
  return s.streamed_ring() && o.arena_staging && o.device == DeviceKind::kCUDA && o.weights_from == WeightsFrom::kHost &&
         !s.plan->options.keep_all_outputs;
}

Status choose_residency(PlacementState& s) {
  if (s.in_shared_ring()) return shared_ring_residency(s);
  DLR_ASSIGN_OR_RETURN(ResidencyResult r, plan_residency(*s.plan, s.profile, s.so, *s.layer_ms, residency_options(s)));
  if (r.plan.resident_bytes > 0) s.so.resident = r.resident;
  s.resident_set = std::move(r.resident);
  s.stream = std::move(r.plan);
  s.predicted_ms = r.predicted_ms;
  s.notes.push_back(r.how);
  return Status();
}

Status residency_pass(PlacementState& s) {
  if (s.in_shared_ring() && s.streamed_ring() && s.has_times()) return shared_ring_residency(s);
  if (!residency_planned(s)) return Status();
  if (s.has_times()) return choose_residency(s);
  s.notes.push_back("residency: chosen once kernel times are measured at open");
  s.wants_times = true;
  return Status();
}

namespace {

// Runs of staged blobs copied as one unit go up to this size: copies beside kernels
// reach the link's rate at 8-16 MiB (docs/streaming.md section 6).
constexpr int64_t kMaxRunBytes = int64_t(16) << 20;

// Staging with the state's options as they are (the ring's units from s.so.chunk_bytes),
// runs up to max_run_bytes (0: every staged blob copied alone).
Status stage(PlacementState& s, int64_t max_run_bytes) {
  ArenaStagingOptions st;
  st.sim = choice_sim(s);
  if (s.effort.staging_simulations > 0) st.max_simulations = s.effort.staging_simulations;
  st.early = s.options->staging_early;
  st.max_run_bytes = max_run_bytes;
  DLR_ASSIGN_OR_RETURN(ArenaStagingResult a, plan_arena_staging(*s.plan, s.profile, s.so, *s.layer_ms, st));
  if (a.staged > 0) {
    s.so.arena_offset = std::move(a.offset);
    s.so.arena_wait = std::move(a.wait);
    s.so.arena_early = std::move(a.early);
    s.so.arena_joined = std::move(a.joined);
    s.stream = std::move(a.plan);
    s.predicted_ms = a.predicted_ms;
  }
  s.notes.push_back(a.how);
  return Status();
}

// Staging then, where the units are the planner's to choose, the units pass.
Status stage_and_units(PlacementState& s, int64_t max_run_bytes, bool units) {
  DLR_RETURN_IF_ERROR(stage(s, max_run_bytes));
  return units ? units_pass(s) : Status();
}

// Staging with runs and without, the faster whole kept: a run taken early by the greedy
// pass can hold arena bytes that a later, larger gain needed.
Status stage_best(PlacementState& s, bool units) {
  PlacementState with_runs = s;
  DLR_RETURN_IF_ERROR(stage_and_units(s, 0, units));
  if (!s.options->staging_runs) return Status();
  if (!stage_and_units(with_runs, kMaxRunBytes, units).ok()) return Status();
  if (with_runs.predicted_ms < s.predicted_ms - 1e-6) s = std::move(with_runs);
  return Status();
}

}  // namespace

Status staging_pass(PlacementState& s) {
  if (!stageable(s)) return Status();
  if (!s.has_times()) {
    s.wants_times = true;
    return Status();
  }
  if (!searchable(s) || s.in_shared_ring()) return stage_best(s, false);
  // The ring's unit size decides which blobs gain from staging, and the staged blobs
  // which units are fastest: where the units are the planner's to choose (a session's
  // own ring), staging and the units pass run with the default equal chunks, with chunks
  // two and four times as large and with the ring's largest unit, each with every staged
  // blob copied alone and with runs, and the fastest whole is kept.
  int64_t unit = 0;
  for (const TransferUnit& u : s.stream.units) unit = std::max(unit, u.bytes);
  const int64_t max_unit = ring_max_unit(s.stream.pool_bytes, s.stream.slot_bytes, s.so.max_unit_bytes);
  PlacementState best;
  std::vector<int64_t> tried;
  for (int64_t c : {int64_t(0), 2 * unit, 4 * unit, max_unit}) {  // 0: plan_streaming's own chunks
    if (c > max_unit || (c > 0 && unit == 0) || std::count(tried.begin(), tried.end(), c) > 0) continue;
    tried.push_back(c);
    PlacementState t = s;
    t.so.chunk_bytes = c;
    Status done = stage_best(t, true);
    if (!done.ok() && c == 0) return done;
    if (!done.ok()) continue;  // e.g. units too large for the profile's copy queue
    if (c > 0) t.notes.push_back(fmt_text("ring units of %.2f MiB before the unit search", double(c) / (1 << 20)));
    if (c == 0 || t.predicted_ms < best.predicted_ms - 1e-6) best = std::move(t);
  }
  s = std::move(best);
  s.units_chosen = true;
  return Status();
}

Status units_pass(PlacementState& s) {
  if (s.units_chosen) return Status();  // with staging (staging_pass)
  if (!searchable(s)) {
    s.notes.push_back(fmt_text("units: %.0f equal chunks", double(s.stream.units.size())));
    return Status();
  }
  if (!s.has_times()) {
    s.notes.push_back("units: equal chunks until kernel times are measured at open");
    s.wants_times = true;
    return Status();
  }
  UnitSearchOptions search;
  search.min_gain = s.options->unit_search_min_gain;
  search.sim = choice_sim(s);
  DLR_ASSIGN_OR_RETURN(UnitSearchResult r, search_ring_units(*s.plan, s.profile, s.so, *s.layer_ms, search));
  // Same budget, same ring: only the cut of the byte stream (and so the waits) changes.
  if (r.plan.pool_bytes != s.stream.pool_bytes || r.plan.layout != s.stream.layout)
    return internal_error("compile: the unit search changed the pool");
  s.stream = std::move(r.plan);
  s.predicted_ms = r.predicted_ms;
  if (r.skipped) {
    s.notes.push_back(fmt_text("units: equal chunks kept without a search (%.3f ms predicted, within %.1f %% of the "
                               "kernels' sum, which no cut can beat)",
                               r.default_ms, 100.0 * search.min_gain));
    return Status();
  }
  s.notes.push_back(s.stream.units_searched
                        ? fmt_text("units: %.0f chosen by simulation: %.3f ms predicted, equal chunks %.3f ms",
                                   double(s.stream.units.size()), r.predicted_ms, r.default_ms)
                        : fmt_text("units: equal chunks kept (%.3f ms predicted; the best searched cut, %.3f ms, gains "
                                   "less than %.1f %%)",
                                   r.default_ms, s.stream.searched_ms, 100.0 * search.min_gain));
  return Status();
}

Status tail_pass(PlacementState& s) {
  if (!tail_possible(s)) return Status();
  if (!s.has_times()) {
    s.notes.push_back("tail: chosen once kernel times are measured at open");
    s.wants_times = true;
    return Status();
  }
  // Kept only where it gains what a unit cut must gain (unit_search_min_gain).
  const TailChoice c = choose_tail(*s.plan, s.stream, s.profile, *s.layer_ms, s.options->unit_search_min_gain,
                                   s.sim.expand_ms);
  DLR_RETURN_IF_ERROR(set_tail_units(*s.plan, &s.stream, c.units));
  s.predicted_ms = c.ms;
  if (c.units == 0) {
    s.notes.push_back("tail: none (" + std::to_string(c.candidates) +
                      fmt_text(" leading units could go under the tail; none predicted %.1f %% faster than %.3f ms)",
                               100.0 * s.options->unit_search_min_gain, c.without_ms));
    return Status();
  }
  s.notes.push_back("tail: the next inference's first " + std::to_string(c.units) +
                    fmt_text(" units (%.2f MiB) copied under this one's last layers: %.3f ms predicted back to back, "
                             "%.3f ms without",
                             mib(s.stream.tail_bytes()), c.ms, c.without_ms));
  return Status();
}

Status reads_pass(PlacementState& s) {
  if (s.options->weights_from != WeightsFrom::kStorage) return Status();
  s.from_storage = true;
  if (s.stream.resident) {
    s.notes.push_back("weights: from storage, every blob fits the budget: read once at open");
    return Status();
  }
  DLR_ASSIGN_OR_RETURN(s.reads, plan_reads_three_stage(*s.plan, s.stream, reads_of(*s.options)));
  s.notes.push_back(fmt_text("weights: from storage, three stages (read -> copy -> kernel), %.2f MiB staging for "
                             "%.2f MiB read per inference",
                             mib(s.reads.staging_bytes), mib(s.reads.read_bytes())));
  return Status();
}

Status predict_pass(PlacementState& s) {
  // The prefetch copies what the runtime's window allows, no more (stream_plan.h).
  s.stream.prefetch_limit_bytes = s.options->prefetch_next ? s.sim.prefetch_limit_bytes : -1;
  s.predicted_ms = 0;
  if (!s.has_times()) return Status();
  SimOptions sim;
  sim.prefetched = s.sim.prefetched;
  sim.prefetch_limit_bytes = s.sim.prefetch_limit_bytes;
  sim.tail = s.stream.tail_units > 0;  // the steady state: inferences back to back
  sim.expand_ms = s.sim.expand_ms;
  const StorageProfile disk = s.target->copy_profile.storage_or_default();
  if (s.from_storage && !s.reads.units.empty()) {
    sim.reads = &s.reads;
    sim.read_ms = [&](int64_t bytes) { return disk.read_ms(bytes, s.reads.block_bytes, s.reads.queue_depth); };
    sim.launch_us = 8.0;  // no CUDA graph: every layer launched from the host
  }
  const SimResult r = simulate(*s.plan, s.stream, s.target->copy_profile, *s.layer_ms, sim);
  if (!r.violations.empty()) return internal_error("compile: the stream plan fails a check: " + r.violations[0]);
  s.predicted_ms = r.latency_ms;
  return Status();
}

Status bound_pass(PlacementState& s) {
  const Target& t = *s.target;
  if (!s.has_times() || t.map_granularity <= 0 || !(s.streamed_ring() || s.stream.resident)) return Status();
  // What no ring plan within this budget could beat: is a miss the planner's or physics'?
  const int64_t budget = std::max(s.budget_bytes, s.stream.device_bytes());
  // The bound uses the copy engine's probed speed; with a calibrated profile, the bound
  // under the calibrated cost is computed and reported beside it.
  const CopyProfile& physical = t.copy_calibrated() ? t.probed_copy_profile : t.copy_profile;
  // Where staging may use the arena's idle bytes, the bound counts them too: it then
  // covers every plan the staging pass can make.
  BoundModel model;
  if (s.options->arena_staging) model.staging_room = arena_idle_bytes(*s.plan);
  model.copies_before = s.sim.prefetched || s.stream.tail_units > 0;
  model.expand_ms = s.sim.expand_ms;
  DLR_ASSIGN_OR_RETURN(LatencyBound lb,
                       latency_lower_bound(*s.plan, *s.layer_ms, physical, budget, t.map_granularity, model));
  s.lower_bound_ms = lb.ms;
  s.lower_bound_expanded_steps = lb.expanded_steps;
  const std::string staged = s.stream.staged_bytes > 0 ? fmt_text(" (%.2f MiB staged in idle activation bytes)",
                                                                  double(s.stream.staged_bytes) / (1 << 20))
                                                       : std::string();
  s.notes.push_back(lb.to_text() + fmt_text("; this plan: %.3f ms predicted", s.predicted_ms) + staged);
  if (!t.copy_calibrated()) return Status();
  DLR_ASSIGN_OR_RETURN(LatencyBound lc,
                       latency_lower_bound(*s.plan, *s.layer_ms, t.copy_profile, budget, t.map_granularity, model));
  s.lower_bound_calibrated_ms = lc.ms;
  s.notes.push_back("calibrated " + lc.to_text());
  return Status();
}

}  // namespace dlr
