// Session: the runtime's session, used by the tools and tests. Applications use
// the public handle over it, dlrun::Session (<dlrun/session.h>, runtime/public/).
//
//   auto s = dlr::Session::open("yolov4.cfg", "yolov4.weights", options);   // Expected<unique_ptr<Session>>
//   auto dets = (*s)->detect(image);                                           // Expected<vector<Detection>>
//
// open() validates the options, parses the cfg, checks the weights file against
// it, compiles the model for the target (runtime/compile/compile.h), creates the engine
// (measuring kernel times and compiling again where the plan asks for it) and
// allocates everything; detect() pre-processes, runs the network and post-
// processes like Darknet. Errors are values; a failed call leaves the session usable.
// No exception crosses this API: std::bad_alloc becomes kOutOfMemory, anything
// else kInternal. Parser warnings and suspicious weight values are logged
// (DLR_LOG_WARN: stderr or the application's callback) once at open.
// CPU threads: options.threads, applied around open() and detect() (runtime/cpu/cpu_threads.h).
// Thread priority and CPUs (options.thread_priority, cpu_affinity): open() checks them
// (a CPU the process may not use is its error, a priority not permitted a warning) and
// the threads the engine starts are placed so; the caller's thread only through
// apply_thread_options() below.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/detect/detection.h"
#include "runtime/engine.h"
#include "runtime/options.h"
#include "runtime/cpu/cpu_threads.h"
#include "runtime/compile/placement_input.h"
#include "runtime/compile/plan.h"

namespace dlr {

using ImageView = ImageU8;
class WeightsFile;
class WeightSource;
class PreparedFile;
class DeviceStart;
struct CompiledModel;
struct Target;

// What a Runtime (runtime/multi/runtime.h) does for the sessions opened on it: one
// target, one memory budget and one run lock for all of them. Internal; the Runtime
// implements it. Calls come from Session::open_impl (under the runtime's lock, which
// open holds) and from detect (run_mutex()).
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  virtual const Target& target() const = 0;
  // The new session's engine exists: bind it to the shared arena and workspace,
  // growing them (and moving the other engines) if it needs more.
  virtual Status attach(Engine& engine) = 0;
  // Its kernel times are known: where its weights go in the joint plan of every model
  // on the runtime (the session compiles with it).
  virtual Expected<Placement> placement(const CompiledModel& model, const std::vector<double>& layer_ms) = 0;
  // The session's engine has its final placement (after replan): bind it to the
  // runtime's shared ring where it streams through one (SharedRingClient::bind_ring).
  virtual Status bind_ring(Engine& engine) {
    (void)engine;
    return Status();
  }
  // An engine of the runtime is about to enqueue an inference (SharedRingClient's start hook).
  virtual Status starting(Engine& engine) {
    (void)engine;
    return Status();
  }
  // Held around each inference of every session of the runtime (they share memory).
  virtual std::mutex& run_mutex() = 0;
  // An engine of the runtime has just launched an inference (SharedRingClient's launch
  // hook): the first weights of the model expected next may be prefetched behind its copies.
  virtual Status launched(Engine& engine) = 0;
  // A session of the runtime is about to wait for run_mutex() (waiting true), or has it
  // now (false): who is queued tells which model runs next. Any thread; never blocks on
  // run_mutex().
  virtual void queued(const Engine& engine, bool waiting) { (void)engine, (void)waiting; }
};

struct InferTiming {
  double preprocess_ms = 0;
  double network_ms = 0;
  double postprocess_ms = 0;
  int threads = 0;  // the largest OpenMP team the CPU conv kernels ran with (0: none ran on the CPU)
};

// Where Session::open went and how long the first detect took (host clock, ms; 0 where
// a part does not apply). Filled by open() and the first detect().
struct OpenTiming {
  double context_ms = 0;       // CUDA: the helper thread's context creation (overlaps parse and compile)
  double context_cudnn_ms = 0; // CUDA: the helper thread's cudnnCreate, after the context
  double context_prime_ms = 0; // CUDA: the helper thread's tiny convolution set-up (cuDNN's lazy loading), after that
  double context_wait_ms = 0;  // CUDA: how long open waited for the helper before creating the engine
  double parse_ms = 0;         // options, cfg, weights-file check
  double target_ms = 0;        // the compile target (CUDA: device properties, copy profile)
  double compile_ms = 0;       // the first compile
  double prepared_ms = 0;      // weights from storage: find / check (or build) the prepared file
  double engine_ms = 0;        // engine creation in all (split in `engine`; slice_axes_ms included)
  double slice_axes_ms = 0;    // CUDA, auto slicing axis: both variants timed (or the choice read from the cache)
  double kernel_times_ms = 0;  // stream mode: kernel times (cache or measured), compile again, replan
  bool compiled_beside_engine = false;  // stream mode: kept kernel times, the compile ran during the engine's set-up
  double finalize_ms = 0;      // warm-up (+ graph capture)
  double open_ms = 0;          // the whole open
  double first_detect_ms = 0;  // the first detect() after open (0 until it ran)
  EngineOpenTiming engine;     // the engine's own parts (CUDA: cuDNN handle, convolutions, weights, warm-up)
};

class Session {
 public:
  static Expected<std::unique_ptr<Session>> open(const std::string& cfg_path, const std::string& weights_path,
                                                 const SessionOptions& options = {});
  // A session on a Runtime (runtime/multi/runtime.h calls this; applications use
  // Runtime::open): `host` outlives the session; the activation arena and the workspace
  // are the host's.
  static Expected<std::unique_ptr<Session>> open_hosted(const std::string& cfg_path, const std::string& weights_path,
                                                        const SessionOptions& options, SessionHost* host);
  ~Session();

  // A Runtime's session: adopts a new placement of its weights chosen by the runtime's
  // joint plan: compiles again with the kernel times measured at open and sets the
  // engine's weights up again (no inference may run meanwhile). With a shared ring the
  // engine must be bound to the ring again afterwards (SharedRingClient::bind_ring).
  Status set_placement(const Placement& placement);
  int64_t weight_budget_bytes() const;  // the device weight bytes the current plan uses
  const std::vector<double>& layer_ms() const { return m_layer_ms; }

  // One image -> its detections (relative boxes; see Detection).
  Expected<std::vector<Detection>> detect(const ImageView& image);
  // n <= batch images in one inference.
  Expected<std::vector<std::vector<Detection>>> detect_batch(const ImageView* images, int n);

  const NetworkDesc& network() const { return m_net; }
  const ExecutionPlan& plan() const { return m_engine->plan(); }
  // The compiled model the engine executes (runtime/compile/compile.h for the type).
  const CompiledModel& model() const { return *m_model; }
  Engine& engine() { return *m_engine; }
  const SessionOptions& options() const { return m_options; }
  bool letterbox() const { return m_letterbox; }
  const InferTiming& last_timing() const { return m_timing; }
  // The parts of open (and the first detect's time, once it ran).
  const OpenTiming& open_timing() const { return m_open_timing; }
  std::string plan_text() const;  // model().to_text()
  // Weights from storage: the prepared weight file the engine reads ("" otherwise).
  std::string prepared_path() const;

 private:
  Session() = default;
  // The bodies of open() and detect_batch(), which turn any exception into a Status.
  static Expected<std::unique_ptr<Session>> open_impl(const std::string& cfg_path, const std::string& weights_path,
                                                      const SessionOptions& options, SessionHost* host);
  Expected<std::vector<std::vector<Detection>>> detect_batch_impl(const ImageView* images, int n);
  Status open_prepared(const std::string& cfg_path, const std::string& weights_path, bool given_prepared);
  // session_open.cpp: the parts of open_impl.
  Status read_inputs(const std::string& cfg_path, const std::string& weights_path);
  Status make_engine(DeviceStart* start);
  Status settle_placement(const Target& target);
  // Compiles again with `target` and the current inputs, and sets the engine up for it.
  Status recompile(const Target& target);
  Status kernel_times();  // fills m_layer_ms and m_expand_ms
  // Kernel times known before the engine exists (kept per GPU and model, or from the
  // slicing choice): the compile that uses them starts on a thread of its own and runs
  // beside the engine's set-up; settle_placement takes its model (take_early_compile).
  void start_early_compile();
  Expected<bool> take_early_compile();  // true: the engine runs the early compile's model
  // session_slices.cpp: the slicing axis per layer from the kernel times of both variants.
  struct SliceVariants;
  Status choose_slice_axes(DeviceStart* start);
  Expected<SliceVariants> time_slice_variants(DeviceStart* start);
  Expected<std::vector<double>> variant_times(const CompiledModel& variant, DeviceStart* start);
  // The copy cost inside an inference replaces the probed profile of `probed_target`
  // and the model is compiled again.
  Status calibrate_copies(const Target& probed_target);
  Target kept_calibration(const Target& target) const;  // with the cached calibrated copy profile, if kept
  void log_open() const;
  NetworkDesc m_net;
  std::unique_ptr<WeightsFile> m_weights;
  std::unique_ptr<WeightSource> m_source;
  std::unique_ptr<PreparedFile> m_prepared;  // weights from storage: the file the engine reads
  std::unique_ptr<CompiledModel> m_model;
  std::unique_ptr<Engine> m_engine;
  SessionOptions m_options;
  bool m_letterbox = false;
  InferTiming m_timing;
  OpenTiming m_open_timing;
  AutoThreadChooser m_threads;  // options.threads == 0: the auto team or one thread, by measured latency
  SessionHost* m_host = nullptr;  // a Runtime's session: its runtime
  std::vector<double> m_layer_ms;  // kernel times measured at open (stream mode), for compiling again
  std::vector<double> m_expand_ms;  // the part of m_layer_ms that expands int8 weights (empty: none, or not apart)
  std::map<int, SliceAxis> m_slice_axes;  // the axis per sliced layer chosen at open (empty: the options')
  std::optional<Placement> m_placement;  // a Runtime's placement of the weights (stream mode, after open)
  // start_early_compile's target and the model coming (session_open.cpp); null when none
  // was started or it was taken. Destroyed before the members its thread reads.
  struct EarlyCompile;
  std::shared_ptr<EarlyCompile> m_early;
  std::mutex m_detect_mutex;       // one detect at a time per session
};

// Places the calling thread as options.thread_priority and cpu_affinity ask
// (runtime/core/thread_placement.h: a CPU the process may not use is an error and
// changes nothing; a priority not permitted is one warning line). Call it on the thread
// that will run detect(), before open(): the threads open() starts (the CUDA driver's,
// the OpenMP team) inherit it. `normal` and an empty list change nothing.
Status apply_thread_options(const SessionOptions& options);

// Reads a names file (one class name per line); error names the file.
Expected<std::vector<std::string>> read_names(const std::string& path);

}  // namespace dlr
