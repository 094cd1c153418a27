// dlrun::Session: the public handle over dlr::Session (runtime/session.h).
#include "dlrun/session.h"

#include <exception>
#include <new>

#include "dlrun/version.h"
#include "loaders/layer_table.h"
#include "runtime/public/convert.h"
#include "runtime/public/options_map.h"
#include "runtime/public/session_impl.h"
#include "runtime/session.h"

namespace dlrun {

Session::Session(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

Result<Session> Session::open(const std::string& cfg_path, const std::string& weights_path, const Options& options) {
  return detail::guarded<Session>("dlrun::Session::open", [&]() -> Result<Session> {
    auto so = detail::to_session_options(options);
    if (!so.ok()) return detail::to_error(so.status());
    auto s = dlr::Session::open(cfg_path, weights_path, *so);
    if (!s.ok()) return detail::to_error(s.status());
    auto impl = std::make_unique<Impl>();
    impl->own = std::move(*s);
    impl->s = impl->own.get();
    impl->options = options;
    return Session(std::move(impl));
  });
}

Result<std::vector<std::vector<Detection>>> Session::detect_batch(const std::vector<ImageView>& images) {
  using Out = std::vector<std::vector<Detection>>;
  return detail::guarded<Out>("dlrun::Session::detect", [&]() -> Result<Out> {
    if (!m_impl) return Error{ErrorCode::kInvalidArgument, "dlrun::Session::detect: the session was moved from"};
    if (images.empty()) return Error{ErrorCode::kInvalidArgument, "dlrun::Session::detect: no images"};
    std::vector<dlr::ImageView> views;
    views.reserve(images.size());
    for (const ImageView& im : images) views.push_back(detail::to_internal(im));
    auto got = m_impl->s->detect_batch(views.data(), int(views.size()));
    if (!got.ok()) return detail::to_error(got.status());
    Out out(got->size());
    for (size_t i = 0; i < got->size(); ++i) out[i] = detail::to_public((*got)[i]);
    return out;
  });
}

Result<std::vector<Detection>> Session::detect(const ImageView& image) {
  auto all = detect_batch(std::vector<ImageView>{image});
  if (!all.ok()) return all.error();
  return std::move((*all)[0]);
}

Report Session::last_report() const {
  Report r;
  if (!m_impl) return r;
  const dlr::InferTiming& t = m_impl->s->last_timing();
  r.preprocess_ms = t.preprocess_ms;
  r.network_ms = t.network_ms;
  r.postprocess_ms = t.postprocess_ms;
  r.threads = t.threads;
  dlr::Engine& e = m_impl->s->engine();
  const dlr::NetworkDesc& net = m_impl->s->network();
  for (const dlr::LayerTiming& l : e.layer_timings()) {
    const char* type = (l.layer >= 0 && size_t(l.layer) < net.layers.size())
                           ? dlr::layer_row(net.layers[size_t(l.layer)].kind).sections[0]
                           : "";
    r.layers.push_back(LayerTiming{l.layer, type, l.start_ms, l.ready_ms, l.end_ms, l.weight_bytes, l.slice});
  }
  const dlr::ExecutionPlan& plan = m_impl->s->plan();
  for (const dlr::CopyTiming& c : e.copy_timings()) {  // the engine names a copy's first step
    const int layer = c.first_layer >= 0 && size_t(c.first_layer) < plan.steps.size()
                          ? plan.steps[size_t(c.first_layer)].layer : c.first_layer;
    r.copies.push_back(CopyTiming{c.unit, layer, c.bytes, c.start_ms, c.end_ms, c.next_inference});
  }
  const dlr::MemoryReport m = e.memory();
  r.memory = MemoryReport{m.weights, m.activations, m.workspace, m.other, m.host_weights};
  return r;
}

NetworkInfo Session::info() const {
  NetworkInfo n;
  if (!m_impl) return n;
  const dlr::NetworkDesc& net = m_impl->s->network();
  n.input_width = net.net.width;
  n.input_height = net.net.height;
  n.batch = m_impl->s->options().batch;
  n.layers = int(net.layers.size());
  n.gflops = net.total_gflops();
  n.letterbox = m_impl->s->letterbox();
  for (int y : net.output_layers()) {
    const dlr::LayerDesc& l = net.layers[size_t(y)];
    if (l.kind == dlr::LayerKind::kYolo) n.classes = l.yolo().classes;
    if (l.kind == dlr::LayerKind::kRegion) n.classes = l.region().classes;
    if (l.kind == dlr::LayerKind::kGaussianYolo) n.classes = l.gaussian_yolo().yolo.classes;
  }
  return n;
}

const Options& Session::options() const {
  static const Options kDefault;
  return m_impl ? m_impl->options : kDefault;
}

std::string Session::plan_text() const { return m_impl ? m_impl->s->plan_text() : std::string(); }

Status apply_thread_options(const Options& options) {
  return detail::guarded_status("dlrun::apply_thread_options", [&]() -> dlr::Status {
    DLR_ASSIGN_OR_RETURN(const dlr::SessionOptions so, detail::to_session_options(options));
    return dlr::apply_thread_options(so);
  });
}

Result<std::vector<std::string>> read_names(const std::string& path) {
  using Out = std::vector<std::string>;
  return detail::guarded<Out>("dlrun::read_names", [&]() -> Result<Out> {
    auto got = dlr::read_names(path);
    if (!got.ok()) return detail::to_error(got.status());
    return std::move(*got);
  });
}

const char* version() { return DLRUN_VERSION_STRING; }

bool has_cuda() {
#ifdef DLR_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace dlrun
