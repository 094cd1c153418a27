// A Runtime's prefetch across inferences (runtime.h): which model is expected next,
// its prefetch enqueued when a model launches, and the pending prefetches into the
// shared ring given up where a run or another prefetch writes their bytes
// (docs/architecture.md, "Several models on one device").
#include <cstddef>
#include <mutex>
#include <vector>

#include "runtime/multi/runtime.h"
#include "runtime/multi/runtime_facets.h"
#include "runtime/streaming/stream_plan.h"  // ring_overlap

namespace dlr {

void Runtime::queued(const Engine& engine, bool waiting) {
  const std::lock_guard<std::mutex> lock(m_queue_mutex);
  int at = 0;
  while (at < m_n_waiting && m_waiting[size_t(at)].first != &engine) ++at;
  if (waiting) {  // the first arrival of an engine counts (another thread of it may wait already)
    if (at == m_n_waiting && m_n_waiting < kMaxWaiting) m_waiting[size_t(m_n_waiting++)] = {&engine, ++m_arrivals};
  } else if (at < m_n_waiting) {
    m_waiting[size_t(at)] = m_waiting[size_t(--m_n_waiting)];
  }
}

Runtime::Member* Runtime::expected_next(const Engine& launched, const Member* skip) {
  Member* next = nullptr;
  {
    // A thread already waiting: the one that came first (std::mutex is not fair, so
    // this is a guess too, but a thread that waits runs soon).
    const std::lock_guard<std::mutex> lock(m_queue_mutex);
    uint64_t first = 0;
    for (Member& m : m_members) {
      if (&m == skip) continue;
      for (int i = 0; i < m_n_waiting; ++i) {
        const auto& [engine, arrival] = m_waiting[size_t(i)];
        if (engine == &m.model->session().engine() && (next == nullptr || arrival < first)) {
          next = &m;
          first = arrival;
        }
      }
    }
  }
  if (next) return next;
  // Nobody waits: the model that ran least recently, as in a round robin.
  for (Member& m : m_members) {
    if (&m.model->session().engine() == &launched || &m == skip) continue;
    if (next == nullptr || m.last_launch < next->last_launch) next = &m;
  }
  if (next || skip) return next;
  for (Member& m : m_members)  // the only model: its own next inference
    if (&m.model->session().engine() == &launched) return &m;
  return nullptr;
}

Status Runtime::drop_overlapping(Engine& engine, bool whole, int64_t bytes) {
  const int64_t ring = m_shared->ring_bytes();
  const int64_t start = ring_of(engine).ring_start();
  const int64_t len = whole ? ring_of(engine).ring_stream_bytes() : bytes;
  for (size_t i = 0; i < m_prefetch_owners.size();) {
    Engine* owner = m_prefetch_owners[i];
    // An engine outside the shared ring writes none of it, and a prefetch outside it is safe.
    const bool clash = owner != &engine && start >= 0 && ring_of(*owner).ring_start() >= 0 &&
                       ring_overlap(start, len, ring_of(*owner).ring_start(), ring_of(*owner).prefetch_issued_bytes(), ring);
    if (!clash && ring_of(*owner).prefetch_pending()) {
      ++i;
      continue;
    }
    if (clash) DLR_RETURN_IF_ERROR(ring_of(*owner).drop_prefetch(engine));
    m_prefetch_owners.erase(m_prefetch_owners.begin() + std::ptrdiff_t(i));
  }
  return Status();
}

void Runtime::add_owner(Engine* engine) {
  if (!ring_of(*engine).prefetch_pending()) return;
  for (Engine* e : m_prefetch_owners)
    if (e == engine) return;
  m_prefetch_owners.push_back(engine);
}

Status Runtime::launched(Engine& engine) {
  // Called from inside a run (the run lock is held; every other engine is idle); the
  // engine being opened is not a member yet.
  ++m_launches;
  for (Member& m : m_members) {
    Engine& other = m.model->session().engine();
    if (&other == &engine) {
      m.last_launch = m_launches;
      continue;
    }
    memory_of(other).mark_arena_foreign();
  }
  // The model expected next: a prefetch copies on the same copy engine as the next
  // inference's input upload and units, so only as much of a later model as the joint plan
  // predicts fits before that one runs. The launched engine's own prefetch waits for its
  // inference to end (Engine::prefetch).
  if (!m_options.prefetch_next) return Status();
  Member* next = expected_next(engine);
  if (next == nullptr) return Status();
  Engine& e = next->model->session().engine();
  if (shared()) DLR_RETURN_IF_ERROR(drop_overlapping(e, false, ring_of(e).ring_stream_bytes()));
  DLR_RETURN_IF_ERROR(ring_of(e).prefetch(&engine));
  if (!shared()) return Status();
  add_owner(&e);
  // Two ahead: the model after it, its first bytes, where neither the next model's
  // stream nor the launched one's unreleased bytes lie (the copies wait for those).
  if (m_options.prefetch_depth < 2 || &e == &engine) return Status();
  Member* after = expected_next(engine, next);
  if (after == nullptr || after->prefetch_early <= 0) return Status();
  Engine& f = after->model->session().engine();
  if (&f == &engine || &f == &e || ring_of(f).ring_start() < 0 ||
      ring_overlap(ring_of(f).ring_start(), after->prefetch_early, ring_of(e).ring_start(), ring_of(e).ring_stream_bytes(),
                   m_shared->ring_bytes()))
    return Status();
  DLR_RETURN_IF_ERROR(drop_overlapping(f, false, after->prefetch_early));
  DLR_RETURN_IF_ERROR(ring_of(f).prefetch(&engine, after->prefetch_early, &e));
  add_owner(&f);
  return Status();
}

Status Runtime::starting(Engine& engine) {
  if (!shared()) return Status();
  // Other models' prefetches where this run writes: given up (this run waits for their copies).
  return drop_overlapping(engine, true, 0);
}

Status Runtime::cancel_prefetch() {
  std::vector<Engine*> owners;
  owners.swap(m_prefetch_owners);
  for (Engine* owner : owners) DLR_RETURN_IF_ERROR(ring_of(*owner).drop_prefetch(*owner));
  return m_shared->synchronize();
}

}  // namespace dlr
