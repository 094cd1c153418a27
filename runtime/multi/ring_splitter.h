// The search behind split_shared_ring (ring_split.h), private to runtime/multi: the
// Splitter class, its candidates and its search constants. ring_split.cpp has the
// models' curves, the rings tried and the result; ring_round.cpp the round as it runs
// (each model with the window its predecessor leaves it) and the local searches over it.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "runtime/multi/ring_split.h"
#include "runtime/multi/ring_windows.h"
#include "runtime/streaming/simulator.h"

namespace dlr::ring_search {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kQuantum = int64_t(64) << 10;  // resident bytes are split in these
constexpr int kRefineRounds = 3;                 // halvings of the ring step around the best ring
constexpr int kJointSteps = 8;                   // moves of the round's local search (joint_refine)
constexpr int kSlackSteps = 4;                   // moves that hand the unused budget to a model (spend_slack)
constexpr int kWindowRounds = 3;                 // plans again with the prefetch windows of the last choice
constexpr int64_t kWindowSlack = int64_t(1) << 20;  // a window this much short of the limit used still counts
constexpr int kStagingSimulations = 24;          // per staged prediction of a model with arena staging

// Fills a point's copies_end_ms, streamed and releases from its simulated plan.
void note_releases(const ExecutionPlan& plan, const StreamPlan& stream, const SimResult& sim, RingPoint* p);

// Per model, computed once: the all-resident point.
struct ModelBase {
  int64_t total = 0;
  RingPoint all;
};

struct Candidate {
  int64_t ring = 0;
  std::vector<RingPoint> chosen;    // per model
  std::vector<int64_t> limit;       // per model: prefetch limit used (-1 none)
  std::vector<int64_t> early;       // per model: of it, the bytes copied two models ahead
  double sum = kInf;                // sum(weight * ms)
  double slowdown = kInf;           // max(ms / all-resident ms)
  bool ok = false;
};

// Whether `a` beats `b` under `objective` (kMaxSlowdown: ties by the weighted sum).
bool better(const Candidate& a, const Candidate& b, SplitObjective objective);

// The search of one split (split_shared_ring): the models, their all-resident points,
// the best candidate so far and the memo of staged predictions.
class Splitter {
 public:
  Splitter(const std::vector<RingModel>& models, int64_t weight_budget, int64_t granularity, SplitObjective objective,
           int ring_points, int resident_points)
      : m_models(models), m_budget(weight_budget), m_gran(granularity), m_objective(objective),
        m_ring_points(ring_points), m_resident_points(resident_points) {}

  Status init();
  Expected<RingSplit> run();

 private:
  size_t n() const { return m_models.size(); }
  // kMaxSlowdown's denominator: the latency alone the application gave, else the all-resident prediction.
  double baseline(size_t i) const {
    return m_models[i].options.alone_ms > 0 ? m_models[i].options.alone_ms : m_bases[i].all.ms;
  }
  // ring_split.cpp: each model's curve at a ring, the split of one ring, the rings tried.
  RingWindowModel window_model(size_t i) const;
  std::vector<RingWindowModel> window_models() const;
  Expected<PlacementEstimate> estimate(size_t i, const Placement& p, const SimOptions& sim, int residency_sims,
                                       bool stage) const;
  Expected<PlacementEstimate> settled(size_t i, int64_t ring, int64_t room, const SimOptions& sim) const;
  double staged_ms(size_t i, int64_t ring, const RingPoint& p, const SimOptions& sim, double unstaged_ms) const;
  std::vector<RingPoint> curve(size_t i, int64_t ring, const SimOptions& sim) const;
  void score(Candidate* c) const;
  SimOptions first_guess_sim(size_t i, int64_t ring, Candidate* c) const;
  Candidate try_ring(int64_t ring, const std::vector<RingPoint>* prev_choice);
  void consider(int64_t ring);
  RingSplit result() const;
  // ring_round.cpp: the round as it runs and the searches over it.
  Candidate round_eval(int64_t ring, std::vector<RingPoint> pts);
  bool evaluate_in_round(size_t i, int64_t ring, const std::vector<RingPoint>& pts, Candidate* c, RingPoint* p);
  void try_move(const Candidate& from, size_t i, RingPoint p, Candidate* best);
  void drop_resident_limits(Candidate* c) const;
  std::vector<RingPoint> alternatives(size_t i, int64_t ring) const;
  Candidate joint_refine(Candidate c);
  bool room_plan(const Candidate& c, size_t i, int64_t room, RingPoint* out) const;
  Candidate spend_slack(Candidate c);
  bool delivers(const Candidate& d, int64_t ring) const;

  const std::vector<RingModel>& m_models;
  const int64_t m_budget, m_gran;
  const SplitObjective m_objective;
  const int m_ring_points, m_resident_points;
  std::vector<ModelBase> m_bases;
  std::vector<CopyProfile> m_profiles;  // per model: what it is planned with
  int64_t m_sum_total = 0, m_max_total = 0, m_lo = 0, m_hi = 0;
  std::set<int64_t> m_tried;
  Candidate m_best;
  int m_feasible = 0;
  // Staged predictions already made by round_eval: (model, ring, prefetch limit, set) -> ms.
  std::map<std::tuple<size_t, int64_t, int64_t, std::vector<char>>, double> m_staged_memo;
};

}  // namespace dlr::ring_search
