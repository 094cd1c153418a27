#include "runtime/session.h"

#include <chrono>
#include <exception>
#include <new>
#include <fstream>

#include "loaders/weights_file.h"
#include "runtime/compile.h"
#include "runtime/core/log.h"
#include "runtime/cpu_engine.h"
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
  DLR_ASSIGN_OR_RETURN(WeightsFile wf, WeightsFile::open(weights_path, s->m_net));
  s->m_weights = std::make_unique<WeightsFile>(std::move(wf));
  s->m_source = weights_file_source(s->m_net, *s->m_weights);

  // 3. Target and compile.
  Target target = cpu_target();
  if (options.device == DeviceKind::kCUDA) {
#ifdef DLR_HAVE_CUDA
    DLR_ASSIGN_OR_RETURN(target, cuda_target(options.cuda_device, options.copy_profile));
#else
    return unsupported("this dlrun was built without the CUDA backend (rebuild with -DDLR_CUDA=ON)");
#endif
  }
  DLR_ASSIGN_OR_RETURN(CompiledModel model, compile(s->m_net, target, options));
  s->m_model = std::make_unique<CompiledModel>(std::move(model));
  s->m_letterbox = s->m_model->letterbox;
  DLR_LOG_DEBUG("compiled {} for {}: {}", cfg_path, target.name, s->m_model->notes.back());

  // 4. Engine; measure-then-replan where the plan needs kernel times; finalize.
  if (options.device == DeviceKind::kCPU) {
    DLR_ASSIGN_OR_RETURN(s->m_engine, CpuEngine::create(*s->m_model, *s->m_source));
  } else {
#ifdef DLR_HAVE_CUDA
    DLR_ASSIGN_OR_RETURN(s->m_engine, create_cuda_engine(*s->m_model, *s->m_source));
#endif
  }
  if (s->m_model->needs_layer_times()) {
    DLR_ASSIGN_OR_RETURN(std::vector<double> layer_ms, s->m_engine->measure_layer_ms());
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
