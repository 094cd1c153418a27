#include "runtime/session.h"

#include <unistd.h>

#include <chrono>
#include <exception>
#include <new>
#include <fstream>

#include "loaders/weights_file.h"
#include "runtime/compile/compile.h"
#include "runtime/core/log.h"
#include "runtime/engine_outputs.h"
#include "runtime/storage/prepared_file.h"
#include "runtime/cpu/cpu_threads.h"
#include "kernels/cpu/threads.h"
#include "runtime/weight_source.h"

namespace dlr {
namespace {

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Threads preparing a prepared file's blobs: the session's threads option, else every CPU.
int prepare_threads(const SessionOptions& o) { return o.threads > 0 ? o.threads : available_cpus(); }

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
    return open_impl(cfg_path, weights_path, options, nullptr);
  });
}

Expected<std::unique_ptr<Session>> Session::open_hosted(const std::string& cfg_path, const std::string& weights_path,
                                                        const SessionOptions& options, SessionHost* host) {
  return no_throw("Runtime::open", [&] {
    const CpuThreadScope threads(options.threads);
    if (host == nullptr) return Expected<std::unique_ptr<Session>>(internal_error("open_hosted: needs a host"));
    return open_impl(cfg_path, weights_path, options, host);
  });
}

int64_t Session::weight_budget_bytes() const {
  return m_model->streaming ? m_model->stream.device_bytes() : m_model->plan.weight_bytes();
}

Status Session::set_placement(const Placement& placement) {
  return no_throw("Session::set_placement", [&]() -> Status {
    if (!m_model->streaming) return invalid_argument("set_placement: the session does not stream its weights");
    if (m_layer_ms.empty()) return internal_error("set_placement: no kernel times measured at open");
    const std::optional<Placement> before = m_placement;
    m_placement = placement;
    const Status st = recompile(m_model->target);
    if (!st.ok()) {
      m_placement = before;
      return st;
    }
    DLR_LOG_INFO("{}: weight budget {:.2f} MiB: {}", m_model->model_name, double(placement.budget_bytes) / (1 << 20),
                 m_model->notes.back());
    return Status();
  });
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
  PreparedUse in_use;  // the cached file's read lock until the source below holds its own
  if (!given_prepared) {
    bool built = false;
    const auto t0 = std::chrono::steady_clock::now();
    if (m_options.prepared_path.empty()) {
      DLR_ASSIGN_OR_RETURN(path, ensure_prepared(id, plan, *m_source, &built, PreparedCheck::kHeader, nullptr,
                                                 {m_options.cache_max_bytes, &in_use, prepare_threads(m_options)}));
    } else {
      path = m_options.prepared_path;
      const Expected<PreparedFile> have = PreparedFile::open(path, plan, &id);
      if (!have.ok()) {
        if (access(path.c_str(), F_OK) == 0) DLR_LOG_WARN("{}; writing it again", have.status().message());
        DLR_RETURN_IF_ERROR(write_prepared_file(path, plan, *m_source, id, prepare_threads(m_options)));
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
  // The images of a batch are decoded and suppressed independently: one per thread of the
  // session's team (CpuThreadScope), each into its own slot. An exception (bad_alloc) may
  // not leave the parallel region: it is kept per image and rethrown after it, for
  // detect_batch's no_throw to turn into an error.
  std::vector<std::vector<Detection>> all(static_cast<size_t>(n));
  std::vector<std::exception_ptr> failed(static_cast<size_t>(n));
  const std::vector<int> outputs = m_net.output_layers();
  DLR_RETURN_IF_ERROR(download_overflowed_outputs(*m_engine, outputs, n));
#pragma omp parallel for schedule(static) if (n > 1)
  for (int i = 0; i < n; ++i) {
    try {
      std::vector<HeadOutput> heads;
      for (int y : outputs) heads.push_back(engine_head(*m_engine, m_net.layers[size_t(y)], i));
      all[size_t(i)] = postprocess(heads, m_net.net.width, m_net.net.height, images[i].width, images[i].height, post);
    } catch (...) {
      failed[size_t(i)] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  const auto t3 = Clock::now();
  m_timing = InferTiming{ms_between(t0, t1), ms_between(t1, t2), ms_between(t2, t3), cpu::take_team_size()};
  return all;
}

Expected<std::vector<Detection>> Session::detect(const ImageView& image) {
  DLR_ASSIGN_OR_RETURN(auto all, detect_batch(&image, 1));
  return std::move(all[0]);
}

Status apply_thread_options(const SessionOptions& options) {
  return place_calling_thread(thread_placement(options));
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
