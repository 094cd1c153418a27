#include "runtime/session.h"

#include <unistd.h>

#include <chrono>
#include <exception>
#include <new>
#include <fstream>

#include "loaders/weights_file.h"
#include "runtime/compile/compile.h"
#include "runtime/core/log.h"
#include "runtime/cache/kernel_times_cache.h"
#include "runtime/streaming/copy_calibration.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/storage/prepared_file.h"
#include "runtime/cpu/cpu_threads.h"
#include "kernels/cpu/threads.h"
#include "runtime/weight_source.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/context_init.h"
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr {
namespace {

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The weight budget a runtime's share becomes: every weight when it holds them all,
// except through the shared ring, where a model streams even when the ring holds all
// its weights (StreamOptions::never_resident).
WeightBudget hosted_weight_budget(const HostedBudget& b, int64_t weight_bytes) {
  return b.budget >= weight_bytes && b.shared_ring == 0 ? WeightBudget::all() : WeightBudget::of_bytes(b.budget);
}

}  // namespace

Session::~Session() = default;

std::string Session::plan_text() const { return m_model->to_text(); }

std::string Session::prepared_path() const { return m_prepared ? m_prepared->path() : std::string(); }

// Runs `body`, turning an exception (std::bad_alloc from a huge request, anything
// a dependency throws) into a Status, so none crosses the API.
namespace {
template <class F>
auto no_throw(const char* call, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return out_of_memory(std::string(call) + ": out of host memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return internal_error(std::string(call) + ": unexpected exception: " + e.what());
  } catch (...) {
    return internal_error(std::string(call) + ": unexpected exception");
  }
}
}  // namespace

Expected<std::unique_ptr<Session>> Session::open(const std::string& cfg_path, const std::string& weights_path,
                                                 const SessionOptions& options) {
  return no_throw("Session::open", [&] {
    const CpuThreadScope threads(options.threads);
    if (options.shared_memory) return Expected<std::unique_ptr<Session>>(
        invalid_argument("shared memory belongs to a Runtime: open the model with Runtime::open"));
    return open_impl(cfg_path, weights_path, options, nullptr);
  });
}

Expected<std::unique_ptr<Session>> Session::open_hosted(const std::string& cfg_path, const std::string& weights_path,
                                                        const SessionOptions& options, SessionHost* host) {
  return no_throw("Runtime::open", [&] {
    const CpuThreadScope threads(options.threads);
    if (host == nullptr || !options.shared_memory)
      return Expected<std::unique_ptr<Session>>(internal_error("open_hosted: needs a host and shared memory"));
    return open_impl(cfg_path, weights_path, options, host);
  });
}

int64_t Session::weight_budget_bytes() const {
  return m_model->streaming ? m_model->stream.device_bytes() : m_model->plan.weight_bytes();
}

Status Session::set_weight_budget(const HostedBudget& budget) {
  return no_throw("Session::set_weight_budget", [&]() -> Status {
    if (!m_model->streaming) return invalid_argument("set_weight_budget: the session does not stream its weights");
    if (m_layer_ms.empty()) return internal_error("set_weight_budget: no kernel times measured at open");
    const int64_t bytes = budget.budget;
    SessionOptions o = m_options;
    o.weight_budget = hosted_weight_budget(budget, m_model->plan.weight_bytes());
    o.shared_ring_bytes = budget.shared_ring;
    o.prefetch_limit_bytes = budget.prefetch_limit;
    o.shared_ring_resident = budget.resident_set;
    DLR_ASSIGN_OR_RETURN(CompiledModel again, compile(m_net, m_model->target, o, m_layer_ms));
    DLR_RETURN_IF_ERROR(m_engine->replan(again, *m_source));
    *m_model = std::move(again);
    m_options = o;
    DLR_LOG_INFO("{}: weight budget {:.2f} MiB: {}", m_model->model_name, double(bytes) / (1 << 20),
                 m_model->notes.back());
    return Status();
  });
}

Expected<std::unique_ptr<Session>> Session::open_impl(const std::string& cfg_path, const std::string& weights_path,
                                                      const SessionOptions& options, SessionHost* host) {
  using Clock = std::chrono::steady_clock;
  const auto t_open = Clock::now();
  // 1. Options: every value checked before any file or device work.
  DLR_RETURN_IF_ERROR(validate_options(options));
  std::unique_ptr<Session> s(new Session());
  s->m_options = options;
  s->m_host = host;
  OpenTiming& timing = s->m_open_timing;
#ifdef DLR_HAVE_CUDA
  // The CUDA context (and a cuDNN handle) made on a helper thread while this one parses
  // and compiles; joined before the engine is created, and on every return (RAII).
  std::unique_ptr<CudaContextInit> context;
  if (options.device == DeviceKind::kCUDA) context = std::make_unique<CudaContextInit>(options.cuda_device);
#endif

  // 2. Inputs: the network and the weights file checked against it.
  auto t0 = Clock::now();
  CfgOptions cfg_opt;
  cfg_opt.width = options.width;
  cfg_opt.height = options.height;
  DLR_ASSIGN_OR_RETURN(s->m_net, parse_network_cfg(cfg_path, cfg_opt));
  for (const std::string& w : s->m_net.warnings) DLR_LOG_WARN("{}", w);
  // Before the weights: a cfg without a detector head is the cfg's fault, not the weights'.
  if (s->m_net.output_layers().empty())
    return unsupported(cfg_path + ": the network has no detection output layer (expected [yolo], [region] or "
                                  "[Gaussian_yolo])");
  // A prepared weight file given as the weights (its magic tells) is read as it is;
  // a .weights file is checked against the network.
  const bool storage = options.weights_from == WeightsFrom::kStorage;
  const bool given_prepared = has_prepared_magic(weights_path);
  if (given_prepared && !storage)
    return invalid_argument(weights_path + ": a prepared weight file is read with --weights-from storage (or give the "
                                           ".weights file)");
  if (!given_prepared) {
    DLR_ASSIGN_OR_RETURN(WeightsFile wf, WeightsFile::open(weights_path, s->m_net));
    s->m_weights = std::make_unique<WeightsFile>(std::move(wf));
    s->m_source = weights_file_source(s->m_net, *s->m_weights);
  }
  timing.parse_ms = ms_between(t0, Clock::now());

  // 3. Target and compile.
  t0 = Clock::now();
  Target target = cpu_target();
  if (host) {
    target = host->target();
    if (target.device != options.device)
      return invalid_argument(std::string("the runtime runs on ") + device_name(target.device) +
                              ", the model asks for " + device_name(options.device));
  } else if (options.device == DeviceKind::kCUDA) {
#ifdef DLR_HAVE_CUDA
    // Only stream mode copies weights, so only it resolves (and for auto, maybe probes) a profile.
    // Device properties need the driver, not the context the helper is creating.
    DLR_ASSIGN_OR_RETURN(target, cuda_target(options.cuda_device,
                                             options.mode == WeightMode::kStream ? options.copy_profile : ""));
#else
    return unsupported("this dlrun was built without the CUDA backend (rebuild with -DDLR_CUDA=ON)");
#endif
  }
  timing.target_ms = ms_between(t0, Clock::now());
  t0 = Clock::now();
  DLR_ASSIGN_OR_RETURN(CompiledModel model, compile(s->m_net, target, options));
  s->m_model = std::make_unique<CompiledModel>(std::move(model));
  s->m_letterbox = s->m_model->letterbox;
  timing.compile_ms = ms_between(t0, Clock::now());
  DLR_LOG_DEBUG("compiled {} for {}: {}", cfg_path, target.name, s->m_model->notes.back());
  t0 = Clock::now();
  if (storage) DLR_RETURN_IF_ERROR(s->open_prepared(cfg_path, weights_path, given_prepared));
  timing.prepared_ms = ms_between(t0, Clock::now());

  // 4. Engine; measure-then-replan where the plan needs kernel times; finalize.
  t0 = Clock::now();
  if (options.device == DeviceKind::kCPU) {
    DLR_ASSIGN_OR_RETURN(s->m_engine, CpuEngine::create(*s->m_model, *s->m_source));
  } else {
#ifdef DLR_HAVE_CUDA
    // The helper's failure is not reported here: the engine's own calls name it.
    const Status ctx = context->wait();
    timing.context_ms = context->context_ms();
    timing.context_cudnn_ms = context->cudnn_ms();
    timing.context_prime_ms = context->prime_ms();
    timing.context_wait_ms = context->waited_ms();
    DLR_LOG_DEBUG("CUDA context on the helper thread: {:.1f} ms, cuDNN handle {:.1f} ms, cuDNN priming {:.1f} ms; open "
                  "waited {:.1f} ms{}",
                  timing.context_ms, timing.context_cudnn_ms, timing.context_prime_ms, timing.context_wait_ms,
                  ctx.ok() ? std::string() : " (failed: " + ctx.message() + ")");
    DLR_ASSIGN_OR_RETURN(s->m_engine, create_cuda_engine(*s->m_model, *s->m_source, context.get()));
#endif
  }
  timing.engine_ms = ms_between(t0, Clock::now());
  t0 = Clock::now();
  if (host) {
    DLR_RETURN_IF_ERROR(host->attach(*s->m_engine));
    s->m_engine->set_launch_hook([host](Engine& e) { return host->launched(e); });
    s->m_engine->set_start_hook([host](Engine& e) { return host->starting(e); });
  }
  // A Runtime's streamed model always measures: the runtime splits its budget by them.
  const bool hosted_stream = host && s->m_model->streaming;
  if (s->m_model->needs_layer_times() || hosted_stream) {
    // Kernel times: kept per GPU and model (kernel_times_cache.h), else measured and kept.
    std::vector<double> layer_ms = options.cache_kernel_times ? load_kernel_times(*s->m_model) : std::vector<double>();
    if (!layer_ms.empty()) {
      DLR_LOG_DEBUG("kernel times of {} from the cache", cfg_path);
    } else {
      DLR_ASSIGN_OR_RETURN(layer_ms, s->m_engine->measure_layer_ms());
      if (options.cache_kernel_times) {
        const Status saved = save_kernel_times(*s->m_model, layer_ms);
        if (!saved.ok()) DLR_LOG_WARN("kernel times not kept: {}", saved.message());
      }
    }
    SessionOptions final_options = options;
    if (hosted_stream) {
      DLR_ASSIGN_OR_RETURN(const HostedBudget hb, host->weight_budget(*s->m_model, layer_ms));
      final_options.weight_budget = hosted_weight_budget(hb, s->m_model->plan.weight_bytes());
      final_options.shared_ring_bytes = hb.shared_ring;
      final_options.prefetch_limit_bytes = hb.prefetch_limit;
      final_options.shared_ring_resident = hb.resident_set;
      s->m_options = final_options;
    }
    DLR_ASSIGN_OR_RETURN(CompiledModel again, compile(s->m_net, target, final_options, layer_ms));
    DLR_LOG_DEBUG("compiled again with kernel times measured at open: {}", again.notes.back());
    DLR_RETURN_IF_ERROR(s->m_engine->replan(again, *s->m_source));
    *s->m_model = std::move(again);
    if (hosted_stream) DLR_RETURN_IF_ERROR(host->bind_ring(*s->m_engine));
    if (options.calibrate_copies) DLR_RETURN_IF_ERROR(s->calibrate_copies(target, layer_ms));
    s->m_layer_ms = std::move(layer_ms);
    DLR_LOG_INFO("stream mode: {}", s->m_model->notes.back());
  }
  timing.kernel_times_ms = ms_between(t0, Clock::now());
  t0 = Clock::now();
  DLR_RETURN_IF_ERROR(s->m_engine->finalize());
  timing.finalize_ms = ms_between(t0, Clock::now());
  timing.engine = s->m_engine->open_timing();
  timing.open_ms = ms_between(t_open, Clock::now());
  DLR_LOG_INFO("opened {} ({} layers, {:.3f} GFLOPs @{}x{}) on {}", cfg_path, s->m_net.layers.size(),
               s->m_net.total_gflops(), s->m_net.net.width, s->m_net.net.height, device_name(options.device));
  DLR_LOG_DEBUG("open {:.1f} ms: parse {:.1f}, target {:.1f}, compile {:.1f}, prepared file {:.1f}, engine {:.1f} "
                "(cuDNN handle {:.1f}, weights {:.1f}, convolutions {:.1f}: {} of {} cached, {} with their workspace "
                "size, algorithm cache {}), kernel times {:.1f}, finalize {:.1f} (warm-up {:.1f}{}, graph {:.1f}); CUDA "
                "context {:.1f} on the helper thread (waited {:.1f})",
                timing.open_ms, timing.parse_ms, timing.target_ms, timing.compile_ms, timing.prepared_ms,
                timing.engine_ms, timing.engine.cudnn_handle_ms + timing.context_cudnn_ms, timing.engine.weights_ms,
                timing.engine.conv_setup_ms, timing.engine.convs_cached, timing.engine.convs,
                timing.engine.convs_workspace_cached,
                timing.engine.algo_cache.empty() ? "-" : timing.engine.algo_cache, timing.kernel_times_ms,
                timing.finalize_ms, timing.engine.warmup_ms,
                timing.engine.warmup_run ? "" : ", none: the first inference loads the kernels",
                timing.engine.graph_ms, timing.context_ms, timing.context_wait_ms);
  return s;
}

// Copy calibration (SessionOptions::calibrate_copies): when the plan copies weights from
// host memory every inference, the copy cost inside an inference replaces the probed
// profile (the calibrated one kept with the kernel times, else timed now over
// kCalibrationRuns profiled inferences and fitted, streaming/copy_calibration.h), and
// the model is compiled again with it. A calibration that cannot be made (an engine
// that cannot time copies, too few copies, implausible timings) leaves the probed
// profile, with a warning; it never fails the open.
Status Session::calibrate_copies(const Target& probed_target, const std::vector<double>& layer_ms) {
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
    const auto t0 = std::chrono::steady_clock::now();
    Expected<std::vector<CopyTiming>> copies = m_engine->measure_copy_timings(kCalibrationRuns);
    if (!copies.ok()) {
      DLR_LOG_WARN("copy calibration skipped, the probed copy profile stays: {}", copies.status().message());
      return Status();
    }
    Expected<CopyCalibration> c = calibrate_profile(probed, *copies);
    if (!c.ok()) {
      DLR_LOG_WARN("copy calibration skipped, the probed copy profile stays: {}", c.status().message());
      return Status();
    }
    calibrated = c->profile;
    how = "timed in " + std::to_string(kCalibrationRuns) + " inferences (" +
          std::to_string(int(ms_between(t0, std::chrono::steady_clock::now()))) + " ms): " + c->to_text();
    if (m_options.cache_kernel_times) {
      const Status saved = save_calibrated_profile(m, probed, calibrated);
      if (!saved.ok()) DLR_LOG_WARN("calibrated copy profile not kept: {}", saved.message());
    }
  }
  Target target = probed_target;
  target.probed_copy_profile = probed;
  target.copy_profile = calibrated;
  target.copy_profile_source = "calibrated in an inference from " + probed.name;
  DLR_ASSIGN_OR_RETURN(CompiledModel again, compile(m_net, target, m_options, layer_ms));
  DLR_RETURN_IF_ERROR(m_engine->replan(again, *m_source));
  DLR_LOG_INFO("copy profile calibrated in an inference ({}): peak {:.1f} -> {:.1f} GB/s, at 4 MiB {:.1f} -> {:.1f} GB/s; "
               "predicted {:.3f} -> {:.3f} ms",
               how, probed.peak_gbps(), calibrated.peak_gbps(), double(4 << 20) / (probed.copy_ms(4 << 20) * 1e6),
               double(4 << 20) / (calibrated.copy_ms(4 << 20) * 1e6), m.predicted_ms, again.predicted_ms);
  *m_model = std::move(again);
  return Status();
}

// Weights from storage: the prepared weight file of the compiled plan becomes the
// weight source (the engine reads its blobs each inference). Given as the weights: used
// if it fits the plan. Otherwise --prepared PATH or the user's cache: used when its
// identity matches the cfg and .weights (size, mtime, content hash as written), else
// (missing, stale, corrupt) written from the .weights first, with a log line saying why.
Status Session::open_prepared(const std::string& cfg_path, const std::string& weights_path, bool given_prepared) {
  const ExecutionPlan& plan = m_model->plan;
  if (plan.weights.empty()) return invalid_argument(cfg_path + ": the network has no weights to read from storage");
  std::string path = weights_path;
  DLR_ASSIGN_OR_RETURN(PreparedIdentity id, given_prepared ? PreparedIdentity() : prepared_identity(cfg_path, weights_path, plan));
  if (!given_prepared) {
    bool built = false;
    const auto t0 = std::chrono::steady_clock::now();
    if (m_options.prepared_path.empty()) {
      DLR_ASSIGN_OR_RETURN(path, ensure_prepared(id, plan, *m_source, &built));
    } else {
      path = m_options.prepared_path;
      const Expected<PreparedFile> have = PreparedFile::open(path, plan, &id);
      if (!have.ok()) {
        if (access(path.c_str(), F_OK) == 0) DLR_LOG_WARN("{}; writing it again", have.status().message());
        DLR_RETURN_IF_ERROR(write_prepared_file(path, plan, *m_source, id));
        built = true;
      }
    }
    if (built)
      DLR_LOG_INFO("prepared {} from {} in {:.2f} s", path, weights_path,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  DLR_ASSIGN_OR_RETURN(PreparedFile file, PreparedFile::open(path, plan, given_prepared ? nullptr : &id));
  m_prepared = std::make_unique<PreparedFile>(std::move(file));
  DLR_ASSIGN_OR_RETURN(m_source, prepared_file_source(*m_prepared));
  m_weights.reset();  // every blob now comes from the prepared file
  DLR_LOG_DEBUG("weights from storage: {}", path);
  return Status();
}

Expected<std::vector<std::vector<Detection>>> Session::detect_batch(const ImageView* images, int n) {
  return no_throw("Session::detect", [&] {
    const std::lock_guard<std::mutex> one_at_a_time(m_detect_mutex);
    // A Runtime's models share memory: one inference at a time on the runtime (outputs
    // of the CPU engine live in the shared arena, so post-processing is inside too).
    std::unique_lock<std::mutex> runtime_lock;
    if (m_host) {
      m_host->queued(*m_engine, true);
      runtime_lock = std::unique_lock<std::mutex>(m_host->run_mutex());
      m_host->queued(*m_engine, false);
    }
    const bool choose = m_options.threads == 0;
    const int picked = choose ? m_threads.pick() : m_options.threads;
    const auto t0 = std::chrono::steady_clock::now();
    Expected<std::vector<std::vector<Detection>>> r = [&] {
      const CpuThreadScope threads(picked);
      return detect_batch_impl(images, n);
    }();
    const double ms = ms_between(t0, std::chrono::steady_clock::now());
    if (choose && r.ok()) m_threads.record(picked, ms);
    if (r.ok() && m_open_timing.first_detect_ms == 0) {
      m_open_timing.first_detect_ms = ms;
      DLR_LOG_DEBUG("first detect: {:.1f} ms{}", ms,
                    m_open_timing.engine.warmup_run || m_options.device != DeviceKind::kCUDA
                        ? ""
                        : " (with its kernels' first launches: no warm-up at open)");
    }
    return r;
  });
}

Expected<std::vector<std::vector<Detection>>> Session::detect_batch_impl(const ImageView* images, int n) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  (void)cpu::take_team_size();  // counts this inference's kernels only
  DLR_RETURN_IF_ERROR(m_engine->set_images(images, n, m_letterbox));
  const auto t1 = Clock::now();
  DLR_RETURN_IF_ERROR(m_engine->run());
  const auto t2 = Clock::now();
  PostprocessOptions post;
  post.thresh = m_options.thresh;
  post.nms = m_options.nms;
  post.letterbox = m_letterbox;
  std::vector<std::vector<Detection>> all;
  for (int i = 0; i < n; ++i) {
    std::vector<HeadOutput> heads;
    for (int y : m_net.output_layers()) heads.push_back(head_output(m_net.layers[size_t(y)], m_engine->output(y, i)));
    all.push_back(postprocess(heads, m_net.net.width, m_net.net.height, images[i].width, images[i].height, post));
  }
  const auto t3 = Clock::now();
  m_timing = InferTiming{ms_between(t0, t1), ms_between(t1, t2), ms_between(t2, t3), cpu::take_team_size()};
  return all;
}

Expected<std::vector<Detection>> Session::detect(const ImageView& image) {
  DLR_ASSIGN_OR_RETURN(auto all, detect_batch(&image, 1));
  return std::move(all[0]);
}

Expected<std::vector<std::string>> read_names(const std::string& path) {
  std::ifstream f(path);
  if (!f) return io_error(path + ": cannot open names file");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(f, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    names.push_back(line);
  }
  while (!names.empty() && names.back().empty()) names.pop_back();
  if (names.empty()) return parse_error(path + ": names file is empty");
  return names;
}

}  // namespace dlr
