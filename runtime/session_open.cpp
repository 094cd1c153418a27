// Session::open: inputs read and checked, the model compiled for its target, the engine
// made, then the measure -> compile -> replan loop that settles the weight placement,
// and the engine finalized (docs/architecture.md, "Opening a session").
#include <chrono>
#include <exception>
#include <future>
#include <system_error>

#include "loaders/weights_file.h"
#include "runtime/backend.h"
#include "runtime/cache/kernel_times_cache.h"
#include "runtime/compile/compile.h"
#include "runtime/core/clock.h"
#include "runtime/core/log.h"
#include "runtime/engine_sharing.h"
#include "runtime/session.h"
#include "runtime/storage/prepared_file.h"
#include "runtime/streaming/copy_calibration.h"
#include "runtime/weight_source.h"

namespace dlr {

// The network and the weights file checked against it (a prepared file given as the
// weights is read as it is, with --weights-from storage only).
Status Session::read_inputs(const std::string& cfg_path, const std::string& weights_path) {
  CfgOptions cfg_opt;
  cfg_opt.width = m_options.width;
  cfg_opt.height = m_options.height;
  DLR_ASSIGN_OR_RETURN(m_net, parse_network_cfg(cfg_path, cfg_opt));
  for (const std::string& w : m_net.warnings) DLR_LOG_WARN("{}", w);
  // Before the weights: a cfg without a detector head is the cfg's fault, not the weights'.
  if (m_net.output_layers().empty())
    return unsupported(cfg_path + ": the network has no detection output layer (expected [yolo], [region] or "
                                  "[Gaussian_yolo])");
  const bool storage = m_options.weights_from == WeightsFrom::kStorage;
  if (has_prepared_magic(weights_path)) {
    if (!storage)
      return invalid_argument(weights_path + ": a prepared weight file is read with weights_from storage (or give "
                                             "the .weights file)");
    return Status();
  }
  DLR_ASSIGN_OR_RETURN(WeightsFile wf, WeightsFile::open(weights_path, m_net));
  m_weights = std::make_unique<WeightsFile>(std::move(wf));
  m_source = weights_file_source(m_net, *m_weights);
  return Status();
}

// The engine for the first model; a Runtime's session is attached to the runtime's
// shared memory and ring hooks.
Status Session::make_engine(DeviceStart* start) {
  OpenTiming& timing = m_open_timing;
  if (start) {
    // The helper's failure is not reported here: the engine's own calls name it.
    const Status ready = start->wait();
    const DeviceStartTiming t = start->timing();
    timing.context_ms = t.context_ms;
    timing.context_cudnn_ms = t.cudnn_ms;
    timing.context_prime_ms = t.prime_ms;
    timing.context_wait_ms = t.waited_ms;
    DLR_LOG_DEBUG("device start on the helper thread: context {:.1f} ms, cuDNN handle {:.1f} ms, cuDNN priming {:.1f} "
                  "ms; open waited {:.1f} ms{}",
                  t.context_ms, t.cudnn_ms, t.prime_ms, t.waited_ms,
                  ready.ok() ? std::string() : " (failed: " + ready.message() + ")");
  }
  const auto t0 = Clock::now();
  DLR_RETURN_IF_ERROR(choose_slice_axes(start));
  timing.slice_axes_ms = ms_since(t0);
  start_early_compile();
  DLR_ASSIGN_OR_RETURN(m_engine, create_engine(*m_model, *m_source, start));
  if (m_host == nullptr) return Status();
  DLR_RETURN_IF_ERROR(m_host->attach(*m_engine));
  if (SharedRingClient* ring = m_engine->shared_ring()) {
    SessionHost* host = m_host;
    ring->set_launch_hook([host](Engine& e) { return host->launched(e); });
    ring->set_start_hook([host](Engine& e) { return host->starting(e); });
  }
  return Status();
}

// Kernel times and the int8 expansions' part of them: those the slicing choice put
// together (no expansions apart), else kept per GPU and model (kernel_times_cache.h),
// else measured and kept.
Status Session::kernel_times() {
  if (!m_layer_ms.empty() && m_layer_ms.size() == m_model->plan.steps.size()) return Status();
  m_expand_ms.clear();
  m_layer_ms = m_options.cache_kernel_times ? load_kernel_times(*m_model, &m_expand_ms) : std::vector<double>();
  if (!m_layer_ms.empty()) {
    DLR_LOG_DEBUG("kernel times of {} from the cache", m_model->cfg_path);
    return Status();
  }
  DLR_ASSIGN_OR_RETURN(m_layer_ms, m_engine->measure_layer_ms(&m_expand_ms));
  if (m_options.cache_kernel_times) {
    const Status saved = save_kernel_times(*m_model, m_layer_ms, m_expand_ms);
    if (!saved.ok()) DLR_LOG_WARN("kernel times not kept: {}", saved.message());
  }
  return Status();
}

struct Session::EarlyCompile {
  Target target;
  std::future<Expected<CompiledModel>> model;
};

void Session::start_early_compile() {
  if (m_host != nullptr || !m_model->needs_layer_times()) return;
  if (m_layer_ms.size() != m_model->plan.steps.size())
    m_layer_ms = m_options.cache_kernel_times ? load_kernel_times(*m_model, &m_expand_ms) : std::vector<double>();
  if (m_layer_ms.empty()) return;  // measured by the engine once it exists, then compiled
  auto early = std::make_shared<EarlyCompile>();
  early->target = kept_calibration(m_model->target);
  CompileInputs inputs;
  inputs.layer_ms = m_layer_ms;
  inputs.expand_ms = m_expand_ms;
  inputs.slice_axes = m_slice_axes;
  const EarlyCompile* e = early.get();
  try {
    early->model = std::async(std::launch::async, [this, e, inputs]() -> Expected<CompiledModel> {
      try {
        return compile(m_net, e->target, m_options, inputs);
      } catch (const std::exception& ex) {
        return internal_error(std::string("compile with the kept kernel times: ") + ex.what());
      }
    });
  } catch (const std::system_error&) {
    return;  // no thread: settle_placement compiles after the engine, as without kept times
  }
  m_early = std::move(early);
}

Expected<bool> Session::take_early_compile() {
  if (!m_early) return false;
  Expected<CompiledModel> early = m_early->model.get();
  m_early.reset();
  if (!early.ok()) {
    DLR_LOG_DEBUG("the compile beside the engine's set-up failed ({}); compiling again", early.status().message());
    return false;
  }
  DLR_RETURN_IF_ERROR(m_engine->replan(*early, *m_source));
  *m_model = std::move(early).value();
  return true;
}

Status Session::recompile(const Target& target) {
  CompileInputs inputs;
  inputs.layer_ms = m_layer_ms;
  inputs.expand_ms = m_expand_ms;
  inputs.shared_memory = m_host != nullptr;
  inputs.placement = m_placement ? &*m_placement : nullptr;
  inputs.slice_axes = m_slice_axes;
  DLR_ASSIGN_OR_RETURN(CompiledModel again, compile(m_net, target, m_options, inputs));
  DLR_RETURN_IF_ERROR(m_engine->replan(again, *m_source));
  *m_model = std::move(again);
  return Status();
}

namespace {

// `probed` with `calibrated` as its copy profile, the probed one kept beside it.
Target calibrated_target(const Target& probed, const CopyProfile& calibrated) {
  Target t = probed;
  t.probed_copy_profile = probed.copy_profile;
  t.copy_profile = calibrated;
  t.copy_profile_source = "calibrated in an inference from " + probed.copy_profile.name;
  return t;
}

}  // namespace

// The measure -> compile -> replan loop. Each round adds what the placement still lacks
// to the compile inputs, compiles again and sets the engine up for the new placement:
//   1. kernel times (the passes that choose by simulation need them);
//   2. a Runtime's placement of the weights (its joint plan needs the kernel times);
//   3. the copy cost measured inside an inference (a standalone session's calibration).
// A model that needs none of them (preload, CPU, a fixed budget with nothing to choose)
// skips the loop.
Status Session::settle_placement(const Target& target) {
  const bool hosted_stream = m_host && m_model->streaming;
  if (!m_model->needs_layer_times() && !hosted_stream) return Status();
  DLR_RETURN_IF_ERROR(kernel_times());
  if (hosted_stream) {
    DLR_ASSIGN_OR_RETURN(const Placement p, m_host->placement(*m_model, m_layer_ms));
    m_placement = p;
  }
  // A calibrated copy profile kept beside the kernel times is used from the first
  // compile on: one compile and one weight set-up instead of two.
  const Target kept = kept_calibration(target);
  DLR_ASSIGN_OR_RETURN(const bool early, take_early_compile());
  if (!early) DLR_RETURN_IF_ERROR(recompile(kept));
  m_open_timing.compiled_beside_engine = early;
  DLR_LOG_DEBUG("compiled again with kernel times {}: {}",
                early ? "kept from an earlier run, beside the engine's set-up" : "measured at open",
                m_model->notes.back());
  if (hosted_stream) DLR_RETURN_IF_ERROR(m_host->bind_ring(*m_engine));
  if (kept.copy_calibrated() && !target.copy_calibrated())
    DLR_LOG_INFO("copy profile calibrated in an inference (from the kernel-times cache, used from the first compile)");
  else if (m_options.calibrate_copies)
    DLR_RETURN_IF_ERROR(calibrate_copies(target));
  DLR_LOG_INFO("stream mode: {}", m_model->notes.back());
  return Status();
}

Expected<std::unique_ptr<Session>> Session::open_impl(const std::string& cfg_path, const std::string& weights_path,
                                                      const SessionOptions& options, SessionHost* host) {
  const auto t_open = Clock::now();
  DLR_RETURN_IF_ERROR(validate_options(options));  // every value checked before any file or device work
  DLR_RETURN_IF_ERROR(check_thread_placement(thread_placement(options)));
  std::unique_ptr<Session> s(new Session());
  s->m_options = options;
  s->m_host = host;
  OpenTiming& timing = s->m_open_timing;
  // The device starts on a helper thread while this one parses and compiles (joined on every return).
  const std::unique_ptr<DeviceStart> start = start_device(options.device, options.cuda_device);
  auto t0 = Clock::now();
  DLR_RETURN_IF_ERROR(s->read_inputs(cfg_path, weights_path));
  timing.parse_ms = ms_since(t0);
  t0 = Clock::now();
  Target target;
  if (host) {
    target = host->target();
    if (target.device != options.device)
      return invalid_argument(std::string("the runtime runs on ") + device_name(target.device) +
                              ", the model asks for " + device_name(options.device));
  } else {
    // Only stream mode copies weights, so only it resolves (and for auto, maybe probes) a profile.
    DLR_ASSIGN_OR_RETURN(target, make_target(options.device, options.cuda_device,
                                             options.mode == WeightMode::kStream ? options.copy_profile : ""));
  }
  timing.target_ms = ms_since(t0);
  t0 = Clock::now();
  CompileInputs first;
  first.shared_memory = host != nullptr;
  DLR_ASSIGN_OR_RETURN(CompiledModel model, compile(s->m_net, target, options, first));
  s->m_model = std::make_unique<CompiledModel>(std::move(model));
  s->m_letterbox = s->m_model->letterbox;
  timing.compile_ms = ms_since(t0);
  if (start) start->load_for(*s->m_model);
  DLR_LOG_DEBUG("compiled {} for {}: {}", cfg_path, target.name, s->m_model->notes.back());
  t0 = Clock::now();
  const bool storage = options.weights_from == WeightsFrom::kStorage;
  if (storage) DLR_RETURN_IF_ERROR(s->open_prepared(cfg_path, weights_path, has_prepared_magic(weights_path)));
  timing.prepared_ms = ms_since(t0);
  t0 = Clock::now();
  DLR_RETURN_IF_ERROR(s->make_engine(start.get()));
  timing.engine_ms = ms_since(t0);
  t0 = Clock::now();
  DLR_RETURN_IF_ERROR(s->settle_placement(target));
  timing.kernel_times_ms = ms_since(t0);
  t0 = Clock::now();
  DLR_RETURN_IF_ERROR(s->m_engine->finalize());
  timing.finalize_ms = ms_since(t0);
  timing.engine = s->m_engine->open_timing();
  timing.open_ms = ms_since(t_open);
  s->log_open();
  return s;
}

void Session::log_open() const {
  const OpenTiming& timing = m_open_timing;
  DLR_LOG_INFO("opened {} ({} layers, {:.3f} GFLOPs @{}x{}) on {}", m_net.cfg_path, m_net.layers.size(),
               m_net.total_gflops(), m_net.net.width, m_net.net.height, device_name(m_options.device));
  if (m_options.device == DeviceKind::kCPU) {  // no context, cuDNN, convolution set-up or graph on the CPU
    DLR_LOG_DEBUG("open {:.1f} ms: parse {:.1f}, target {:.1f}, compile {:.1f}, prepared file {:.1f}, engine {:.1f} "
                  "(weights {:.1f}, buffers {:.1f}), finalize {:.1f}",
                  timing.open_ms, timing.parse_ms, timing.target_ms, timing.compile_ms, timing.prepared_ms,
                  timing.engine_ms, timing.engine.weights_ms, timing.engine.buffers_ms, timing.finalize_ms);
    return;
  }
  DLR_LOG_DEBUG("open {:.1f} ms: parse {:.1f}, target {:.1f}, compile {:.1f}, prepared file {:.1f}, engine {:.1f} "
                "(cuDNN handle {:.1f}, weights {:.1f}, convolutions {:.1f}: {} of {} cached, {} with their workspace "
                "size, algorithm cache {}), kernel times {:.1f}, finalize {:.1f} (kernels warmed {:.1f} on {} threads, warm-up {:.1f}{}, graph "
                "{:.1f}); CUDA context {:.1f} on the helper thread (waited {:.1f})",
                timing.open_ms, timing.parse_ms, timing.target_ms, timing.compile_ms, timing.prepared_ms,
                timing.engine_ms, timing.engine.cudnn_handle_ms + timing.context_cudnn_ms, timing.engine.weights_ms,
                timing.engine.conv_setup_ms, timing.engine.convs_cached, timing.engine.convs,
                timing.engine.convs_workspace_cached,
                timing.engine.algo_cache.empty() ? "-" : timing.engine.algo_cache, timing.kernel_times_ms,
                timing.finalize_ms, timing.engine.kernels_warm_ms, timing.engine.kernels_warm_threads,
                timing.engine.warmup_ms,
                timing.engine.warmup_run ? "" : ", none: the first inference loads the kernels",
                timing.engine.graph_ms, timing.context_ms, timing.context_wait_ms);
}

// `target` with the calibrated copy profile kept for this model and its probed profile
// (calibrate_copies wrote it at an earlier open), or `target` itself when there is none,
// when calibration or the cache is off, or for a model that copies no weights.
Target Session::kept_calibration(const Target& target) const {
  const CompiledModel& m = *m_model;
  CopyProfile calibrated;
  if (!m_options.calibrate_copies || !m_options.cache_kernel_times || !m.streaming || m.from_storage ||
      target.copy_calibrated() || !load_calibrated_profile(m, target.copy_profile, &calibrated))
    return target;
  return calibrated_target(target, calibrated);
}

// Copy calibration (SessionOptions::calibrate_copies): when the plan copies weights from
// host memory every inference, the copy cost inside an inference replaces the probed
// profile (the calibrated one kept with the kernel times, else timed now over
// kCalibrationRuns profiled inferences and fitted, streaming/copy_calibration.h), and
// the model is compiled again with it. A calibration that cannot be made (an engine
// that cannot time copies, too few copies, implausible timings) leaves the probed
// profile, with a warning; it never fails the open.
Status Session::calibrate_copies(const Target& probed_target) {
  constexpr int kCalibrationRuns = 5;  // per-unit medians over these: two disturbed runs are outvoted
  const CompiledModel& m = *m_model;
  if (!m.streaming || m.stream.resident || m.from_storage || m.stream.units.empty() || probed_target.copy_calibrated())
    return Status();
  const CopyProfile& probed = probed_target.copy_profile;
  CopyProfile calibrated;
  std::string how;
  if (m_options.cache_kernel_times && load_calibrated_profile(m, probed, &calibrated)) {
    how = "from the kernel-times cache";
  } else {
    const auto t0 = Clock::now();
    Expected<std::vector<CopyTiming>> copies = m_engine->measure_copy_timings(kCalibrationRuns);
    Expected<CopyCalibration> c = copies.ok() ? calibrate_profile(probed, *copies) : Expected<CopyCalibration>(copies.status());
    if (!c.ok()) {
      DLR_LOG_WARN("copy calibration skipped, the probed copy profile stays: {}", c.status().message());
      return Status();
    }
    calibrated = c->profile;
    how = "timed in " + std::to_string(kCalibrationRuns) + " inferences (" + std::to_string(int(ms_since(t0))) +
          " ms): " + c->to_text();
    if (m_options.cache_kernel_times) {
      const Status saved = save_calibrated_profile(m, probed, calibrated);
      if (!saved.ok()) DLR_LOG_WARN("calibrated copy profile not kept: {}", saved.message());
    }
  }
  const double before_ms = m.predicted_ms;
  DLR_RETURN_IF_ERROR(recompile(calibrated_target(probed_target, calibrated)));
  DLR_LOG_INFO("copy profile calibrated in an inference ({}): peak {:.1f} -> {:.1f} GB/s, at 4 MiB {:.1f} -> {:.1f} GB/s; "
               "predicted {:.3f} -> {:.3f} ms",
               how, probed.peak_gbps(), calibrated.peak_gbps(), double(4 << 20) / (probed.copy_ms(4 << 20) * 1e6),
               double(4 << 20) / (calibrated.copy_ms(4 << 20) * 1e6), before_ms, m_model->predicted_ms);
  return Status();
}

}  // namespace dlr
