// search_ring_units (unit_search.h): equal chunks of several sizes, then a
// first-improvement local search over the unit boundaries, all scored by planned_latency()
// (simulate(); with tail copies, the steady state with the best tail: tail_choice.h).
#include "runtime/streaming/unit_search.h"

#include "runtime/streaming/tail_choice.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dlr {
namespace {

constexpr int64_t kAlign = 256;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kGain = 1e-6;  // ms; smaller predicted gains are noise of the model

// Scores candidate plans, counting simulations against the search's budget.
class Scorer {
 public:
  Scorer(const ExecutionPlan& plan, const CopyProfile& profile, const std::vector<double>& layer_ms,
         const UnitSearchOptions& search)
      : m_plan(plan), m_profile(profile), m_layer_ms(layer_ms), m_search(search) {
    m_search.sim.check = false;
  }

  // Simulated latency of plan_streaming(options); kInf when the options give no plan
  // (e.g. a unit too large for the ring or the copy queue) or the budget is spent.
  double score(const StreamOptions& options, StreamPlan* out = nullptr) {
    if (m_count >= m_search.max_simulations) return kInf;
    ++m_count;
    Expected<StreamPlan> s = plan_streaming(m_plan, m_profile, options);
    if (!s.ok()) return kInf;
    const double ms = planned_latency(m_plan, *s, m_profile, m_layer_ms, m_search.sim);
    if (out) *out = std::move(s).value();
    return ms;
  }
  bool spent() const { return m_count >= m_search.max_simulations; }
  int count() const { return m_count; }

 private:
  const ExecutionPlan& m_plan;
  const CopyProfile& m_profile;
  const std::vector<double>& m_layer_ms;
  UnitSearchOptions m_search;
  int m_count = 0;
};

int64_t align_down(int64_t x) { return x / kAlign * kAlign; }

// True when no cut can be kept: every simulation runs the steps that reach the GPU one
// after another, so no plan is predicted faster than the sum of their kernel times, and
// a cut is kept only when predicted min_gain faster than the equal chunks' `default_ms`.
bool no_cut_can_gain(const ExecutionPlan& plan, const std::vector<double>& layer_ms, double default_ms,
                     double min_gain) {
  double kernels_ms = 0;
  for (size_t l = 0; l < plan.steps.size(); ++l)
    if (!(plan.steps[l].no_op && plan.steps[l].copies.empty())) kernels_ms += layer_ms[l];
  return (1.0 - min_gain) * default_ms < kernels_ms;
}

// The equal chunks `def`, kept without a search (no_cut_can_gain).
UnitSearchResult chunks_kept(StreamPlan def, double default_ms, const std::vector<double>& layer_ms) {
  UnitSearchResult r;
  r.default_ms = r.predicted_ms = default_ms;
  r.simulations = 1;
  r.skipped = true;
  r.plan = std::move(def);
  r.plan.units_searched = false;
  r.plan.searched_ms = default_ms;
  r.plan.chunks_ms = default_ms;
  r.plan.search_layer_ms = layer_ms;
  return r;
}

// The blob end closest to `x` strictly inside (lo, hi), or -1.
int64_t blob_end_near(const std::vector<int64_t>& blob_ends, int64_t x, int64_t lo, int64_t hi) {
  auto it = std::lower_bound(blob_ends.begin(), blob_ends.end(), x);
  int64_t best = -1;
  for (auto c : {it, it == blob_ends.begin() ? it : it - 1}) {
    if (c == blob_ends.end() || *c <= lo || *c >= hi) continue;
    if (best < 0 || std::llabs(*c - x) < std::llabs(best - x)) best = *c;
  }
  return best;
}

// The sizes of the equal-chunk pass: 512 KiB to the largest unit the ring allows, in
// steps of sqrt(2), then that largest unit.
std::vector<int64_t> equal_chunk_sizes(int64_t max_unit) {
  std::vector<int64_t> sizes;
  for (double c = 512.0 * 1024; c < double(max_unit); c *= std::sqrt(2.0)) sizes.push_back(align_down(int64_t(c)));
  sizes.push_back(max_unit);
  return sizes;
}

// The cut being improved: its unit ends (host bytes) and their simulated latency (ms).
struct Cut {
  std::vector<int64_t> ends;
  double ms = kInf;
};

// 1. Equal chunks of every size, each with and without a small first unit (the
//    profile's min_unit); keeps the fastest in *best when it beats it by kGain.
void try_equal_chunks(Scorer& scorer, const StreamOptions& base, int64_t max_unit, Cut* best) {
  for (int64_t c : equal_chunk_sizes(max_unit)) {
    for (bool small_first : {true, false}) {
      StreamOptions o = base;
      o.chunk_bytes = c;
      o.min_unit_bytes = small_first ? base.min_unit_bytes : c;  // 0: the profile's min_unit
      StreamPlan s;
      const double ms = scorer.score(o, &s);
      if (ms < best->ms - kGain) {
        best->ms = ms;
        best->ends = s.unit_ends();
      }
    }
  }
}

// The moves of unit i of `ends`, in the order they are tried: split it (at the blob end
// nearest its middle, or at its middle); for a unit with a successor, merge the two,
// or move its end to the neighbouring blob ends, to the middle of either side or an
// eighth into either side.
std::vector<std::vector<int64_t>> unit_moves(const std::vector<int64_t>& ends, size_t i,
                                             const std::vector<int64_t>& blob_ends) {
  const int64_t lo = i > 0 ? ends[i - 1] : 0;
  const int64_t end = ends[i];
  const bool interior = i + 1 < ends.size();
  const int64_t hi = interior ? ends[i + 1] : end;
  std::vector<std::vector<int64_t>> cands;
  for (int64_t cut : {blob_end_near(blob_ends, lo + (end - lo) / 2, lo, end), align_down(lo + (end - lo) / 2)}) {
    if (cut <= lo || cut >= end) continue;
    std::vector<int64_t> e = ends;
    e.insert(e.begin() + std::ptrdiff_t(i), cut);
    cands.push_back(std::move(e));
  }
  if (!interior) return cands;
  std::vector<int64_t> merged = ends;
  merged.erase(merged.begin() + std::ptrdiff_t(i));
  cands.push_back(std::move(merged));
  const auto before = std::lower_bound(blob_ends.begin(), blob_ends.end(), end);
  const auto after = std::upper_bound(blob_ends.begin(), blob_ends.end(), end);
  const int64_t prev_blob_end = before == blob_ends.begin() ? -1 : *(before - 1);
  const int64_t next_blob_end = after == blob_ends.end() ? -1 : *after;
  for (int64_t to : {prev_blob_end, next_blob_end, align_down(lo + (end - lo) / 2), align_down(end + (hi - end) / 2),
                     align_down(end - (end - lo) / 8), align_down(end + (hi - end) / 8)}) {
    if (to <= lo || to >= hi || to == end) continue;
    std::vector<int64_t> e = ends;
    e[i] = to;
    cands.push_back(std::move(e));
  }
  return cands;
}

// 2. Local search over the boundaries: for each unit, the best of its moves that beats
//    *best by kGain replaces it; passes repeat until one improves nothing or the
//    scorer's budget is spent.
void improve_boundaries(Scorer& scorer, const ExecutionPlan& plan, const StreamOptions& base, Cut* best) {
  std::vector<int64_t> blob_ends;
  const std::vector<int64_t> off = blob_host_offsets(plan);
  for (size_t b = 0; b < plan.weights.size(); ++b) blob_ends.push_back(off[b] + plan.weights[b].bytes);
  StreamOptions o = base;
  bool improved = true;
  while (improved && !scorer.spent()) {
    improved = false;
    for (size_t i = 0; i < best->ends.size() && !scorer.spent(); ++i) {
      const std::vector<std::vector<int64_t>> cands = unit_moves(best->ends, i, blob_ends);
      double round_best = best->ms;
      const std::vector<int64_t>* pick = nullptr;
      for (const auto& e : cands) {
        o.unit_ends = e;
        const double ms = scorer.score(o);
        if (ms < round_best - kGain) {
          round_best = ms;
          pick = &e;
        }
      }
      if (pick) {
        best->ms = round_best;
        best->ends = *pick;
        improved = true;
      }
    }
  }
}

// Blobs staged in the arena: search the cut of the ring's blobs alone (the staged and
// resident ones left out), and equal chunks of every size on the whole plan (the staged
// copies among them, which the sub-plan's search does not see); keep the faster only
// when the whole plan is predicted min_gain faster than plan_streaming's chunks (`def`).
Expected<UnitSearchResult> search_beside_staged(const ExecutionPlan& plan, const CopyProfile& profile,
                                                const StreamOptions& base, StreamPlan def,
                                                const std::vector<double>& layer_ms, const UnitSearchOptions& search) {
  UnitSearchOptions quiet = search;
  quiet.sim.check = false;
  const double default_ms = planned_latency(plan, def, profile, layer_ms, quiet.sim);
  if (no_cut_can_gain(plan, layer_ms, default_ms, search.min_gain))
    return chunks_kept(std::move(def), default_ms, layer_ms);
  std::vector<char> apart(plan.weights.size(), 0);
  for (size_t b = 0; b < plan.weights.size(); ++b) apart[b] = def.in_ring(int(b)) ? 0 : 1;
  const StreamedSubplan sp = streamed_subplan(plan, apart);
  StreamOptions sub = base;
  sub.resident.clear();
  sub.arena_offset.clear();
  sub.arena_wait.clear();
  sub.arena_early.clear();
  sub.arena_joined.clear();
  sub.layout = PoolLayout::kRing;
  sub.budget_bytes = def.pool_bytes;
  sub.never_resident = true;
  DLR_ASSIGN_OR_RETURN(UnitSearchResult s, search_ring_units(sp.plan, profile, sub, layer_ms, search));
  UnitSearchResult r;
  r.default_ms = default_ms;
  r.simulations = s.simulations + 1;
  StreamOptions cut = base;
  cut.unit_ends = s.plan.unit_ends();
  Scorer whole(plan, profile, layer_ms, search);
  Cut chunks{def.unit_ends(), default_ms};
  try_equal_chunks(whole, base, ring_max_unit(def.pool_bytes, def.slot_bytes, base.max_unit_bytes), &chunks);
  r.simulations += whole.count();
  Expected<StreamPlan> searched = plan_streaming(plan, profile, cut);
  double searched_ms = searched.ok() && s.plan.units_searched
                           ? planned_latency(plan, *searched, profile, layer_ms, quiet.sim)
                           : kInf;
  r.simulations += searched.ok();
  if (chunks.ms < searched_ms) {
    cut.unit_ends = chunks.ends;
    searched = plan_streaming(plan, profile, cut);
    searched_ms = chunks.ms;
  }
  const bool keep = searched.ok() && searched_ms <= (1.0 - search.min_gain) * r.default_ms;
  r.plan = keep ? std::move(searched).value() : std::move(def);
  r.predicted_ms = keep ? searched_ms : r.default_ms;
  r.plan.units_searched = keep;
  r.plan.searched_ms = searched_ms;
  r.plan.chunks_ms = r.default_ms;
  r.plan.search_layer_ms = layer_ms;
  return r;
}

// Resident blobs: search the cut of the streamed blobs' byte stream alone, in the pool
// plan_streaming gave them (`def`), and number the result like the full plan.
Expected<UnitSearchResult> search_beside_resident(const ExecutionPlan& plan, const CopyProfile& profile,
                                                  const StreamOptions& options, const StreamOptions& base,
                                                  const StreamPlan& def, const std::vector<double>& layer_ms,
                                                  const UnitSearchOptions& search) {
  const StreamedSubplan sp = streamed_subplan(plan, options.resident);
  StreamOptions sub = base;
  sub.resident.clear();
  sub.layout = PoolLayout::kRing;
  sub.budget_bytes = def.pool_bytes;
  DLR_ASSIGN_OR_RETURN(UnitSearchResult r, search_ring_units(sp.plan, profile, sub, layer_ms, search));
  if (r.plan.pool_bytes != def.pool_bytes) return internal_error("unit search: the streamed pool changed");
  r.plan = expand_stream_plan(std::move(r.plan), plan, sp, options.resident);
  return r;
}

}  // namespace

Expected<UnitSearchResult> search_ring_units(const ExecutionPlan& plan, const CopyProfile& profile,
                                             const StreamOptions& options, const std::vector<double>& layer_ms,
                                             const UnitSearchOptions& search) {
  if (layer_ms.size() != plan.steps.size())
    return invalid_argument("unit search: " + std::to_string(layer_ms.size()) + " layer times for " +
                            std::to_string(plan.steps.size()) + " layers");
  StreamOptions base = options;
  base.unit_ends.clear();
  DLR_ASSIGN_OR_RETURN(StreamPlan def, plan_streaming(plan, profile, base));
  if (def.staged_bytes > 0) return search_beside_staged(plan, profile, base, std::move(def), layer_ms, search);
  if (def.resident_bytes > 0) return search_beside_resident(plan, profile, options, base, def, layer_ms, search);
  UnitSearchOptions quiet = search;
  quiet.sim.check = false;
  UnitSearchResult r;
  r.default_ms = def.resident ? 0.0 : planned_latency(plan, def, profile, layer_ms, quiet.sim);
  r.predicted_ms = r.default_ms;
  r.simulations = def.resident ? 0 : 1;
  if (def.resident || def.layout != PoolLayout::kRing) {
    r.plan = std::move(def);
    return r;
  }
  if (no_cut_can_gain(plan, layer_ms, r.default_ms, search.min_gain))
    return chunks_kept(std::move(def), r.default_ms, layer_ms);

  Scorer scorer(plan, profile, layer_ms, search);
  Cut best{def.unit_ends(), r.default_ms};
  try_equal_chunks(scorer, base, ring_max_unit(def.pool_bytes, def.slot_bytes, base.max_unit_bytes), &best);
  improve_boundaries(scorer, plan, base, &best);

  r.simulations = scorer.count() + 1;
  if (!(best.ms <= (1.0 - search.min_gain) * r.default_ms)) {
    r.plan = std::move(def);  // not worth leaving the equal chunks
    r.plan.searched_ms = best.ms;
    r.plan.chunks_ms = r.default_ms;
    r.plan.search_layer_ms = layer_ms;
    return r;
  }
  StreamOptions o = base;
  o.unit_ends = best.ends;
  DLR_ASSIGN_OR_RETURN(r.plan, plan_streaming(plan, profile, o));
  r.predicted_ms = planned_latency(plan, r.plan, profile, layer_ms, quiet.sim);
  ++r.simulations;
  r.plan.units_searched = true;
  r.plan.searched_ms = r.predicted_ms;
  r.plan.chunks_ms = r.default_ms;
  r.plan.search_layer_ms = layer_ms;
  return r;
}

}  // namespace dlr
