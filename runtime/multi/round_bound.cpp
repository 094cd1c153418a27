// The round's lower bound of round_bound.h: the best window over the cyclic order.
#include "runtime/multi/round_bound.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

#include "runtime/streaming/lower_bound.h"

namespace dlr {
namespace {

// The round flattened: every model's steps in order.
struct Flat {
  std::vector<int64_t> w;      // weight bytes read by the step
  std::vector<double> t;       // kernel time, ms
  std::vector<int64_t> room;   // idle arena bytes while it runs
  std::vector<int> model, step;
  // Every blob some step reads, once (a blob two steps read counts twice in w: a window's
  // W_w counted too high only lowers the bound).
  int64_t weight_bytes = 0;
};

Expected<Flat> flatten(const std::vector<RoundModel>& models) {
  Flat f;
  for (size_t m = 0; m < models.size(); ++m) {
    const RoundModel& rm = models[m];
    if (rm.plan == nullptr) return invalid_argument("round bound: model '" + rm.name + "' has no plan");
    const ExecutionPlan& plan = *rm.plan;
    const size_t n = plan.steps.size();
    if (rm.layer_ms.size() != n)
      return invalid_argument("round bound: model '" + rm.name + "': " + std::to_string(rm.layer_ms.size()) +
                              " kernel times for " + std::to_string(n) + " steps");
    if (!rm.room.empty() && rm.room.size() != n)
      return invalid_argument("round bound: model '" + rm.name + "': " + std::to_string(rm.room.size()) +
                              " rooms for " + std::to_string(n) + " steps");
    std::vector<char> read(plan.weights.size(), 0);
    for (size_t i = 0; i < n; ++i) {
      const Step& st = plan.steps[i];
      if (st.weight >= int(plan.weights.size()))
        return invalid_argument("round bound: model '" + rm.name + "': step " + std::to_string(i) + " reads blob " +
                                std::to_string(st.weight) + " of " + std::to_string(plan.weights.size()));
      if (st.weight >= 0 && !read[size_t(st.weight)]) {
        read[size_t(st.weight)] = 1;
        f.weight_bytes += plan.weights[size_t(st.weight)].bytes;
      }
      const int64_t room = rm.room.empty() ? 0 : rm.room[i];
      if (room < 0) return invalid_argument("round bound: model '" + rm.name + "': a room of " + std::to_string(room) + " bytes");
      f.w.push_back(st.weight >= 0 ? plan.weights[size_t(st.weight)].bytes : 0);
      // A no-op step without copies reaches no GPU: no time, as in simulate().
      f.t.push_back(st.no_op && st.copies.empty() ? 0.0 : std::max(0.0, rm.layer_ms[i]));
      f.room.push_back(room);
      f.model.push_back(int(m));
      f.step.push_back(int(i));
    }
  }
  return f;
}

}  // namespace

std::vector<int64_t> shared_arena_room(const ExecutionPlan& plan, bool staging, int64_t shared_arena_bytes) {
  if (!staging) return {};
  std::vector<int64_t> room = arena_idle_bytes(plan);
  const int64_t beyond = std::max<int64_t>(0, shared_arena_bytes - plan.arena_bytes);
  for (int64_t& r : room) r += beyond;
  return room;
}

RoundModel runtime_round_model(std::string name, const ExecutionPlan& plan, std::vector<double> layer_ms, bool staging,
                               int64_t shared_arena_bytes) {
  RoundModel m;
  m.name = std::move(name);
  m.plan = &plan;
  m.layer_ms = std::move(layer_ms);
  m.room = shared_arena_room(plan, staging, shared_arena_bytes);
  return m;
}

Expected<RoundBound> round_lower_bound(const std::vector<RoundModel>& models, int64_t budget_bytes, double gbps) {
  if (models.empty()) return invalid_argument("round bound: no model");
  if (budget_bytes <= 0) return invalid_argument("round bound: the weight budget must be > 0 bytes");
  if (!(gbps > 0)) return invalid_argument("round bound: the copy rate must be > 0 GB/s");
  DLR_ASSIGN_OR_RETURN(Flat f, flatten(models));
  const size_t n = f.w.size();
  const double bw = gbps * 1e6;  // bytes per ms
  RoundBound rb;
  rb.gbps = gbps;
  rb.budget_bytes = budget_bytes;
  for (const RoundModel& m : models) {
    rb.names.push_back(m.name);
    rb.expanded_steps += m.plan->expanded_steps();
  }
  int64_t min_room = n > 0 ? std::numeric_limits<int64_t>::max() : 0;
  rb.weight_bytes = f.weight_bytes;
  for (size_t i = 0; i < n; ++i) {
    rb.compute_ms += f.t[i];
    min_room = std::min(min_room, f.room[i]);
  }
  rb.bytes_ms = double(rb.weight_bytes - budget_bytes - min_room) / bw;
  rb.ms = std::max(rb.compute_ms, rb.bytes_ms);
  const double rest = double(rb.weight_bytes - budget_bytes);
  // Every window [a, b) shorter than the round: grown backwards from b, cyclically.
  for (size_t b = 0; b < n; ++b) {
    const double base = (rest - double(f.room[b])) / bw;
    double gain = 0, c = 0;
    int64_t bytes = 0;
    for (size_t len = 1; len < n; ++len) {
      const size_t i = (b + n - len) % n;
      gain += f.t[i] - double(f.w[i]) / bw;
      c += f.t[i];
      bytes += f.w[i];
      if (gain + base <= rb.ms) continue;
      rb.ms = gain + base;
      rb.first_model = f.model[i];
      rb.first_step = f.step[i];
      rb.end_model = f.model[b];
      rb.end_step = f.step[b];
      rb.window_ms = c;
      rb.window_bytes = bytes;
      rb.end_room = f.room[b];
    }
  }
  return rb;
}

std::string RoundBound::to_text() const {
  auto name = [&](int m) { return m >= 0 && size_t(m) < names.size() ? names[size_t(m)] : std::string("?"); };
  char buf[640];
  const double mib = double(1 << 20);
  int k = std::snprintf(buf, sizeof buf,
                        "round lower bound: %.3f ms at %.1f GB/s (the kernels %.3f ms; %.2f MiB of weights in a %.2f MiB "
                        "weight budget: the copies alone %.3f ms",
                        ms, gbps, compute_ms, double(weight_bytes) / mib, double(budget_bytes) / mib, bytes_ms);
  if (first_model >= 0 && k > 0 && size_t(k) < sizeof buf)
    std::snprintf(buf + k, sizeof buf - size_t(k),
                  "; binding: the window from %s step %d up to %s step %d, %.3f ms of kernels over %.2f MiB of weights, "
                  "the copy engine idle while the ring and %.2f MiB of idle activations hold what follows)",
                  name(first_model).c_str(), first_step, name(end_model).c_str(), end_step, window_ms,
                  double(window_bytes) / mib, double(end_room) / mib);
  else if (k > 0 && size_t(k) < sizeof buf)
    std::snprintf(buf + k, sizeof buf - size_t(k), "%s)", ms == compute_ms ? "; binding: the kernels" : "; binding: the copies");
  return buf + expansions_note(expanded_steps);
}

}  // namespace dlr
