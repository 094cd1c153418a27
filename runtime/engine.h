// Engine: one executor walking a compiled model (runtime/compile/compile.h) on one
// device. It executes; it plans nothing (the compile step did). Internal to the
// runtime; applications use Session (runtime/session.h).
//
// Open: create(model, weights) -> [measure_layer_ms() -> replan(model')] -> finalize().
// Call order per inference: set_images() or set_input(), then run(), then
// output(). Nothing is allocated inside run() (everything is sized at open);
// set_images() may grow its host staging when an image is larger than any
// seen before (reserve_images() pre-sizes it).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/core/image.h"
#include "runtime/core/status.h"
#include "runtime/compile/plan.h"
#include "runtime/report.h"

namespace dlr {

struct CompiledModel;
class WeightSource;

class Engine {
 public:
  virtual ~Engine() = default;
  // ---- open (after create) ----
  // Kernel time of every step on this device (ms), measured with the model's
  // current weight placement (the values in the pool do not matter).
  virtual Expected<std::vector<double>> measure_layer_ms() {
    return unsupported("this engine does not measure kernel times");
  }
  // Adopts a model compiled again from the same network, target and options with
  // measured kernel times: the execution plan is the same; the weight placement (the
  // resident set, the pool, the transfer units and their ordering) may differ, and is
  // then set up again from `weights` (allocation at open, never inside an inference).
  virtual Status replan(const CompiledModel& model, WeightSource& weights) {
    return unsupported("this engine does not replan");
  }
  // Copy calibration at open (after replan, before finalize): `runs` streamed inferences
  // (after one untimed) on whatever the input holds, every weight copy timed with
  // events on the copy stream as profile_layers times it; the copies of all runs in run
  // order, each run's in issue order. Unsupported where no weights are copied per
  // inference from host memory (preload, everything resident, weights from storage).
  virtual Expected<std::vector<CopyTiming>> measure_copy_timings(int runs) {
    (void)runs;
    return unsupported("this engine does not time its copies");
  }
  // Warm-up and CUDA graph capture; called once, last, before the first run().
  virtual Status finalize() { return Status(); }

  // ---- shared memory (EngineSettings::shared_memory: the engine of a Runtime's session) ----
  // Such an engine allocates no activation arena or workspace of its own: it needs
  // plan().arena_bytes of arena and workspace_needed() bytes of workspace from its
  // runtime, which owns them for all its models (they never run at the same moment).
  virtual int64_t workspace_needed() const { return 0; }
  // Points the engine at the runtime's arena and workspace (at least the bytes needed,
  // 256-aligned). Called after create() and before anything runs, and again whenever
  // the runtime moves them (the engine then captures its graph again); never while the
  // engine runs. Ownership stays with the caller.
  virtual Status bind_shared(void* arena, int64_t arena_bytes, void* workspace, int64_t workspace_bytes) {
    return unsupported("this engine does not share memory");
  }
  // Another engine has run in the shared arena since this one's last run: the CUDA engine
  // clears its arena region before its next input (set_images/set_input/run), so it sees what a preload engine of its own would see
  // (parts of the arena the plan never writes read as zero there; measured on the GPU:
  // without it, yolo-fastest and yolov3-tiny outputs differed from preload after another
  // model ran). Called by the Runtime, under its run lock.
  void mark_arena_foreign() { m_arena_foreign = true; }
  // ---- the shared ring (EngineSettings::shared_ring: a Runtime's streamed models) ----
  // Points the engine's ring pool at the runtime's ring: `bytes` must equal the plan's
  // pool, `base` maps it twice back to back (2 * bytes addressable), and the engine's
  // stream starts at ring offset `start` (its byte x lives at (start + x) % bytes). Called
  // after replan() and whenever the runtime moves the ring (the graphs are captured
  // again); never while the engine runs. Ownership stays with the caller.
  virtual Status bind_ring(void* base, int64_t bytes, int64_t start) {
    (void)base, (void)bytes, (void)start;
    return unsupported("this engine does not share a ring");
  }
  // Whether the current plan streams through the runtime's shared ring.
  virtual bool uses_shared_ring() const { return false; }
  // The engine's pending prefetch (prefetch_pending()) is given up because `waiter` runs
  // first and may overwrite the shared ring: the waiter's streams wait for the prefetch's
  // copies, and the next run() of this engine copies everything itself. No-op without one.
  virtual Status drop_prefetch(Engine& waiter) {
    (void)waiter;
    return Status();
  }

 protected:
  bool m_arena_foreign = false;

 public:

  // ---- prefetch across inferences (EngineSettings::prefetch_next) ----
  // Starts copying the next inference's leading units (StreamPlan::prefetch_units) into
  // the pool, asynchronously on the copy stream; the next run() then waits only for
  // what it still lacks. Idempotent until that run(). A no-op where nothing streams.
  // `after`: an engine of the same device whose inference was just launched; the copies
  // start once its own copies are done (they then share the copy engine only with its
  // compute tail); nullptr: at once. Without a launch hook, run() itself prefetches for
  // the next inference when it ends. Thread: as run(); `after` is not running run().
  // limit_bytes >= 0: only the leading units within that many bytes (a Runtime's first
  // part, two models ahead; a later call goes on from there and run() copies what is
  // still missing first). behind: an engine whose prefetch was just enqueued; these
  // copies follow it on the copy engine.
  virtual Status prefetch(Engine* after = nullptr, int64_t limit_bytes = -1, Engine* behind = nullptr) {
    (void)after, (void)limit_bytes, (void)behind;
    return Status();
  }
  // A prefetch has been enqueued that the next run() will use.
  virtual bool prefetch_pending() const { return false; }
  // The bytes the pending prefetch has enqueued so far (0: none).
  virtual int64_t prefetch_issued_bytes() const { return 0; }
  // Shared ring: this engine's stream starts at ring offset ring_start() and is
  // ring_stream_bytes() long (it wraps when longer than the ring); -1 and 0 when the
  // engine does not stream through a shared ring.
  virtual int64_t ring_start() const { return -1; }
  virtual int64_t ring_stream_bytes() const { return 0; }
  // Called by run() right after the inference is launched, before it waits for the
  // result (a Runtime prefetches the next model's first weights there). Replaces the
  // prefetch at the end of run(). Set at open; empty: none.
  using LaunchHook = std::function<Status(Engine& launched)>;
  void set_launch_hook(LaunchHook hook) { m_launch_hook = std::move(hook); }
  // Called by run() before it enqueues anything (a Runtime drops another model's
  // prefetch there when that model does not run next). Set at open; empty: none.
  void set_start_hook(LaunchHook hook) { m_start_hook = std::move(hook); }

 protected:
  LaunchHook m_launch_hook;
  LaunchHook m_start_hook;

 public:

  virtual DeviceKind device() const = 0;
  virtual const ExecutionPlan& plan() const = 0;

  // Pre-processes n <= batch images into the input tensor at network size
  // (Darknet stretch resize, or letterbox), RGB/255 planar.
  virtual Status set_images(const ImageU8* images, int n, bool letterbox) = 0;
  // Sets n <= batch already pre-processed images: fp32 NCHW, n * C*H*W floats.
  virtual Status set_input(const float* nchw, int n) = 0;
  virtual Status reserve_images(int max_width, int max_height) = 0;
  // Runs the network on the current input; returns when outputs are readable.
  virtual Status run() = 0;
  // fp32 NCHW output of yolo layer `layer` for image `image` after run().
  virtual const float* output(int layer, int image) const = 0;
  // Any layer's output as fp32 NCHW for image `image` (needs PlannerOptions::keep_all_outputs
  // or a layer whose buffer is still live after run()). For tests and debugging.
  virtual Status read_layer(int layer, int image, std::vector<float>* out) const = 0;

  virtual MemoryReport memory() const = 0;
  virtual std::vector<LayerTiming> layer_timings() const = 0;  // of the last run()
  virtual std::vector<CopyTiming> copy_timings() const { return {}; }
  virtual std::vector<ReadTiming> read_timings() const { return {}; }
  virtual double last_run_ms() const = 0;  // network time of the last run()
  virtual RunTiming last_run_timing() const { return RunTiming{0, last_run_ms(), 0, last_run_ms()}; }
  virtual EngineOpenTiming open_timing() const { return {}; }
};

// Checks the arguments of Engine::set_images for a plan: 1 <= n <= batch, a
// 3-channel network, non-empty 3-channel images. Shared by every engine.
Status check_images(const ExecutionPlan& plan, const ImageU8* images, int n);

}  // namespace dlr
