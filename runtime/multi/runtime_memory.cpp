// A Runtime's memory report (RuntimeMemory: each part of the budget named), its
// joint plan's text and the lower bound of its round.
#include <cstdio>
#include <mutex>
#include <string>

#include "runtime/multi/runtime.h"
#include "runtime/multi/runtime_facets.h"
#include "runtime/core/units.h"

namespace dlr {

RuntimeMemory Runtime::memory() const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  return memory_locked();
}

RuntimeMemory Runtime::memory_locked() const {
  RuntimeMemory r;
  r.budget = m_budget;
  r.arena = m_shared->arena_bytes();
  r.workspace = m_shared->workspace_bytes();
  for (const Member& mem : m_members) {
    const Session& s = mem.model->session();
    const CompiledModel& cm = s.model();
    const MemoryReport e = const_cast<Session&>(s).engine().memory();
    RuntimeMemory::Model m;
    m.name = mem.model->name();
    m.weight_budget = s.weight_budget_bytes();
    if (cm.streaming && !cm.stream.resident) {
      m.resident = cm.stream.resident_bytes;
      m.pool = cm.stream.pool_bytes;
      m.shared_ring = ring_of(const_cast<Session&>(s).engine()).uses_shared_ring();
      m.streamed = cm.stream.streamed_bytes();
      m.prefetched = cm.options->prefetch_next ? cm.stream.prefetch_bytes() : 0;
    } else {
      m.resident = e.weights;
    }
    if (cm.from_storage && !cm.streaming) {  // two stages (CPU): the kept blobs; the rest is read each inference
      m.weight_budget = e.weights;
      m.streamed = cm.reads.read_bytes();
    }
    m.arena_need = e.shared_activations;
    m.workspace_need = e.shared_workspace;
    m.other = e.other;
    m.host_weights = e.host_weights;
    m.predicted_ms = cm.predicted_ms;
    r.weights += e.weights;
    r.other += e.other;
    r.host_weights += e.host_weights;
    r.models.push_back(m);
  }
  r.ring = m_shared->ring_bytes();
  r.weights += r.ring;
  return r;
}

std::string Runtime::plan_text() const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  return m_plan_text;
}

Expected<int64_t> Runtime::bound_weight_bytes(const std::string& what) const {
  if (!shared()) return unsupported(what + ": only for a runtime with one shared ring (CUDA)");
  if (m_budget == 0) return unsupported(what + ": the runtime has no budget (every weight resident)");
  if (m_members.empty()) return unsupported(what + ": no model is open");
  for (const Member& m : m_members)
    if (!m.plan_copy) return unsupported(what + ": model '" + m.model->name() + "' has no plan of its own");
  return m_budget - m_shared->arena_bytes() - m_shared->workspace_bytes();
}

Expected<RoundBound> Runtime::round_bound(double gbps) const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  DLR_ASSIGN_OR_RETURN(const int64_t weights, bound_weight_bytes("round bound"));
  std::vector<RoundModel> models;
  for (const Member& m : m_members)
    models.push_back(runtime_round_model(m.model->name(), *m.plan_copy, m.ring.layer_ms, m.ring.options.arena_staging,
                                         m_shared->arena_bytes()));
  const double rate = gbps > 0 ? gbps : m_members.front().ring.profile().peak_gbps();
  return round_lower_bound(models, weights, rate);
}

Expected<std::vector<LatencyBound>> Runtime::alone_bounds() const {
  const std::lock_guard<std::mutex> lock(m_mutex);
  DLR_ASSIGN_OR_RETURN(const int64_t weights, bound_weight_bytes("alone bounds"));
  std::vector<LatencyBound> out;
  for (const Member& m : m_members) {
    BoundModel bm;
    bm.copies_before = true;
    bm.staging_room = shared_arena_room(*m.plan_copy, m.ring.options.arena_staging, m_shared->arena_bytes());
    DLR_ASSIGN_OR_RETURN(LatencyBound b, latency_lower_bound(*m.plan_copy, m.ring.layer_ms, m.ring.profile(), weights,
                                                             m_target.map_granularity, bm));
    out.push_back(std::move(b));
  }
  return out;
}

std::string RuntimeMemory::to_text() const {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "device memory %.2f MiB (budget %s): weights %.2f (of which the shared ring %.2f), shared "
                "activations %.2f, shared workspace %.2f; besides: input and image staging %.2f, host memory for "
                "weights %.2f",
                mib(total()), budget ? (std::to_string(int64_t(mib(budget) + 0.5)) + " MiB").c_str() : "none",
                mib(weights), mib(ring), mib(arena), mib(workspace), mib(other), mib(host_weights));
  std::string s = buf;
  for (const Model& m : models) {
    std::snprintf(buf, sizeof(buf),
                  "\n  %s: weights %.2f MiB (resident %.2f, %s %.2f; %.2f streamed per inference, %.2f of it "
                  "prefetched), activations %.2f, workspace %.2f, predicted %.3f ms",
                  m.name.c_str(), mib(m.weight_budget), mib(m.resident), m.shared_ring ? "shared ring" : "pool",
                  mib(m.pool), mib(m.streamed),
                  mib(m.prefetched), mib(m.arena_need), mib(m.workspace_need), m.predicted_ms);
    s += buf;
  }
  return s;
}

}  // namespace dlr
