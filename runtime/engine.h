// Engine: one executor walking a compiled model (runtime/compile/compiled_model.h) on
// one device. It executes; it plans nothing (the compile step did). Internal to the
// runtime; applications use Session (runtime/session.h). Engines are made by
// create_engine() (runtime/backend.h).
//
// Open: create_engine(model, weights) -> [measure_layer_ms() -> replan(model')]* ->
// finalize(). Call order per inference: set_images() or set_input(), then run(), then
// output(). Nothing is allocated inside run() (everything is sized at open);
// set_images() may grow its host staging when an image is larger than any seen before
// (reserve_images() pre-sizes it).
//
// A Runtime hosting the engine's model reaches it through two optional facets
// (runtime/engine_sharing.h): shared_memory() (the runtime's arena and workspace) and
// shared_ring() (the runtime's weight ring and prefetch across models). An engine
// without the capability returns null.
#pragma once

#include <string>
#include <vector>

#include "runtime/compile/plan.h"
#include "runtime/core/image.h"
#include "runtime/core/status.h"
#include "runtime/report.h"

namespace dlr {

struct CompiledModel;
class WeightSource;
class SharedMemoryClient;
class SharedRingClient;

// The candidates the device picked of one [yolo] output for one image (ExecutionPlan::
// selects; layout in plan.h, OutputSelect), valid until the next run(). rows == nullptr:
// the output is not selected (read output()).
struct OutputRows {
  int count = 0;     // candidates found; above capacity, only the first `capacity` are here
  int capacity = 0;
  int entries = 0;   // floats per row
  const int32_t* keys = nullptr;  // per row: cell * anchors + anchor
  const float* rows = nullptr;    // count x entries
  bool complete() const { return rows != nullptr && count <= capacity; }
};

class Engine {
 public:
  virtual ~Engine() = default;

  // ---- open (after create) ----
  // Kernel time of every step on this device (ms), measured with the model's
  // current weight placement (the values in the pool do not matter), int8 weights
  // expanded in line. expand_ms (may be null): per step, the part of that time which
  // expanded its int8 weights (0 for other steps; left empty where no step expands).
  virtual Expected<std::vector<double>> measure_layer_ms(std::vector<double>* expand_ms) {
    (void)expand_ms;
    return unsupported("this engine does not measure kernel times");
  }
  // Adopts a model compiled again from the same network, target and options with
  // measured kernel times (or a runtime's new placement): the execution plan is the
  // same; the weight placement (the resident set, the pool, the transfer units and
  // their ordering) may differ, and is then set up again from `weights` (allocation at
  // open, never inside an inference).
  virtual Status replan(const CompiledModel& model, WeightSource& weights) {
    (void)model, (void)weights;
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

  // ---- the facets a Runtime uses (null: not supported) ----
  virtual SharedMemoryClient* shared_memory() { return nullptr; }
  virtual SharedRingClient* shared_ring() { return nullptr; }

  // ---- inference ----
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
  // fp32 NCHW output of output layer `layer` for image `image` after run(). A layer whose
  // candidates the device picked (output_rows) is downloaded by the first call after run()
  // (synchronous; null if that fails): call download_output() first where errors matter or
  // threads read outputs. For a Runtime's model, only until another model runs.
  virtual const float* output(int layer, int image) const = 0;
  // The candidates the device picked of [yolo] output `layer` for `image` after run().
  virtual OutputRows output_rows(int layer, int image) const {
    (void)layer, (void)image;
    return {};
  }
  // Makes output(layer, ...) a plain read after run(): downloads a selected layer's whole
  // output now (synchronous); a no-op for the others.
  virtual Status download_output(int layer) const {
    (void)layer;
    return Status();
  }
  // Any layer's output as fp32 NCHW for image `image` (needs PlannerOptions::keep_all_outputs
  // or a layer whose buffer is still live after run()). For tests and debugging.
  virtual Status read_layer(int layer, int image, std::vector<float>* out) const = 0;

  // ---- reports ----
  virtual MemoryReport memory() const = 0;
  virtual std::vector<LayerTiming> layer_timings() const = 0;  // of the last run()
  virtual std::vector<CopyTiming> copy_timings() const { return {}; }
  virtual std::vector<ReadTiming> read_timings() const { return {}; }
  // Weights from storage: of the last run()'s reads, the bytes read from the page cache.
  virtual int64_t read_cached_bytes() const { return 0; }
  // The host memory device work reads each inference (weights; not the image or output
  // staging); empty where none (preload, the CPU).
  virtual std::vector<HostRegion> streamed_host_regions() const { return {}; }
  virtual double last_run_ms() const = 0;  // network time of the last run()
  virtual RunTiming last_run_timing() const { return RunTiming{0, last_run_ms(), 0, last_run_ms()}; }
  virtual EngineOpenTiming open_timing() const { return {}; }
};

// Checks the arguments of Engine::set_images for a plan: 1 <= n <= batch, a
// 3-channel network, non-empty 3-channel images. Shared by every engine.
Status check_images(const ExecutionPlan& plan, const ImageU8* images, int n);

}  // namespace dlr
