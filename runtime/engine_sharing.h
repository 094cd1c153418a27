// The optional facets of an Engine (runtime/engine.h) through which a Runtime
// (runtime/multi/runtime.h) runs several models on one device. An engine of a
// standalone Session is never called through them. Every call comes from the runtime
// under its run lock (no engine of the runtime runs meanwhile) unless it says otherwise.
#pragma once

#include <cstdint>
#include <functional>

#include "runtime/core/status.h"

namespace dlr {

class Engine;

// The activation arena and the workspace are the runtime's, shared by its models
// (CompiledModel::engine.shared_memory): such an engine allocates neither. Both engines
// have this facet.
class SharedMemoryClient {
 public:
  virtual ~SharedMemoryClient() = default;
  // Workspace bytes the engine needs of the runtime (its arena need is plan().arena_bytes).
  virtual int64_t workspace_needed() const = 0;
  // Points the engine at the runtime's arena and workspace (at least the bytes needed,
  // 256-aligned). Called after create and before anything runs, and again whenever the
  // runtime moves them (a CUDA engine then captures its graph again). Ownership stays
  // with the caller.
  virtual Status bind_shared(void* arena, int64_t arena_bytes, void* workspace, int64_t workspace_bytes) = 0;
  // Another engine has run in the shared arena since this one's last run. The CUDA
  // engine clears its arena region (plan().arena_bytes, on its compute stream) before
  // its next input or run, so its outputs do not depend on what ran before it
  // (RuntimeGpu tests: outputs equal a preload session's); the CPU engine does not clear.
  void mark_arena_foreign() { m_arena_foreign = true; }

 protected:
  bool m_arena_foreign = false;
};

// The weight ring is the runtime's, shared by its streamed models
// (CompiledModel::engine.shared_ring), and each model's next inference's first weights
// are copied while others run (prefetch across models). The CUDA engine only.
class SharedRingClient {
 public:
  virtual ~SharedRingClient() = default;
  // Points the engine's pool at the runtime's ring: `bytes` must equal the plan's pool,
  // `base` maps it twice back to back (2 * bytes addressable), and the engine's stream
  // starts at ring offset `start` (its byte x lives at (start + x) % bytes). Called after
  // replan and whenever the runtime moves the ring (the graphs are captured again).
  // Ownership stays with the caller.
  virtual Status bind_ring(void* base, int64_t bytes, int64_t start) = 0;
  // Whether the current plan streams through the runtime's ring.
  virtual bool uses_shared_ring() const = 0;
  // This engine's stream starts at ring offset ring_start() and is ring_stream_bytes()
  // long (it wraps when longer than the ring); -1 and 0 when it does not stream through
  // the ring.
  virtual int64_t ring_start() const = 0;
  virtual int64_t ring_stream_bytes() const = 0;
  // Starts copying the next inference's leading units (StreamPlan::prefetch_units) into
  // the pool, asynchronously on the copy stream; the next run() then waits only for
  // what it still lacks. Idempotent until that run(). A no-op where nothing streams.
  // `after`: an engine of the same device whose inference was just launched; the copies
  // start once its own copies are done; nullptr: at once. limit_bytes >= 0: only the
  // leading units within that many bytes (a later call goes on from there and run()
  // copies what is still missing first). `behind`: an engine whose prefetch was just
  // enqueued; these copies follow it on the copy engine.
  virtual Status prefetch(Engine* after = nullptr, int64_t limit_bytes = -1, Engine* behind = nullptr) = 0;
  // A prefetch has been enqueued that the next run() will use.
  virtual bool prefetch_pending() const = 0;
  // The bytes the pending prefetch has enqueued so far (0: none).
  virtual int64_t prefetch_issued_bytes() const = 0;
  // The pending prefetch is given up because `waiter` runs first and may overwrite the
  // ring: the waiter's streams wait for the prefetch's copies, and the next run() of this
  // engine copies everything itself. No-op without one.
  virtual Status drop_prefetch(Engine& waiter) = 0;
  // Called by run() right after the inference is launched, before it waits for the
  // result (the runtime prefetches the next model's first weights there; it replaces the
  // prefetch at the end of run()), and before it enqueues anything (the runtime gives up
  // another model's prefetch there when that model does not run next). Set at open.
  using Hook = std::function<Status(Engine& engine)>;
  void set_launch_hook(Hook hook) { m_launch_hook = std::move(hook); }
  void set_start_hook(Hook hook) { m_start_hook = std::move(hook); }

 protected:
  Hook m_launch_hook;
  Hook m_start_hook;
};

}  // namespace dlr
