#include "runtime/session.h"

#include <unistd.h>

#include <chrono>
#include <exception>
#include <new>
#include <fstream>

#include "loaders/weights_file.h"
#include "runtime/compile.h"
#include "runtime/core/log.h"
#include "runtime/kernel_times_cache.h"
#include "runtime/cpu_engine.h"
#include "runtime/storage/prepared_file.h"
#include "runtime/cpu_threads.h"
#include "kernels/cpu/threads.h"
#include "runtime/weight_source.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr {
namespace {

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
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
    return open_impl(cfg_path, weights_path, options);
  });
}

Expected<std::unique_ptr<Session>> Session::open_impl(const std::string& cfg_path, const std::string& weights_path,
                                                      const SessionOptions& options) {
  // 1. Options: every value checked before any file or device work.
  DLR_RETURN_IF_ERROR(validate_options(options));
  std::unique_ptr<Session> s(new Session());
  s->m_options = options;

  // 2. Inputs: the network and the weights file checked against it.
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

  // 3. Target and compile.
  Target target = cpu_target();
  if (options.device == DeviceKind::kCUDA) {
#ifdef DLR_HAVE_CUDA
    // Only stream mode copies weights, so only it resolves (and for auto, maybe probes) a profile.
    DLR_ASSIGN_OR_RETURN(target, cuda_target(options.cuda_device,
                                             options.mode == WeightMode::kStream ? options.copy_profile : ""));
#else
    return unsupported("this dlrun was built without the CUDA backend (rebuild with -DDLR_CUDA=ON)");
#endif
  }
  DLR_ASSIGN_OR_RETURN(CompiledModel model, compile(s->m_net, target, options));
  s->m_model = std::make_unique<CompiledModel>(std::move(model));
  s->m_letterbox = s->m_model->letterbox;
  DLR_LOG_DEBUG("compiled {} for {}: {}", cfg_path, target.name, s->m_model->notes.back());
  if (storage) DLR_RETURN_IF_ERROR(s->open_prepared(cfg_path, weights_path, given_prepared));

  // 4. Engine; measure-then-replan where the plan needs kernel times; finalize.
  if (options.device == DeviceKind::kCPU) {
    DLR_ASSIGN_OR_RETURN(s->m_engine, CpuEngine::create(*s->m_model, *s->m_source));
  } else {
#ifdef DLR_HAVE_CUDA
    DLR_ASSIGN_OR_RETURN(s->m_engine, create_cuda_engine(*s->m_model, *s->m_source));
#endif
  }
  if (s->m_model->needs_layer_times()) {
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
    DLR_ASSIGN_OR_RETURN(CompiledModel again, compile(s->m_net, target, options, layer_ms));
    DLR_LOG_DEBUG("compiled again with kernel times measured at open: {}", again.notes.back());
    DLR_RETURN_IF_ERROR(s->m_engine->replan(again, *s->m_source));
    *s->m_model = std::move(again);
    DLR_LOG_INFO("stream mode: {}", s->m_model->notes.back());
  }
  DLR_RETURN_IF_ERROR(s->m_engine->finalize());
  DLR_LOG_INFO("opened {} ({} layers, {:.3f} GFLOPs @{}x{}) on {}", cfg_path, s->m_net.layers.size(),
               s->m_net.total_gflops(), s->m_net.net.width, s->m_net.net.height, device_name(options.device));
  return s;
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
    const bool choose = m_options.threads == 0;
    const int picked = choose ? m_threads.pick() : m_options.threads;
    const auto t0 = std::chrono::steady_clock::now();
    Expected<std::vector<std::vector<Detection>>> r = [&] {
      const CpuThreadScope threads(picked);
      return detect_batch_impl(images, n);
    }();
    if (choose && r.ok()) m_threads.record(picked, ms_between(t0, std::chrono::steady_clock::now()));
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
