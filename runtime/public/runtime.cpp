// dlrun::Runtime: the public handle over dlr::Runtime (runtime/multi/runtime.h).
#include "dlrun/runtime.h"

#include "runtime/public/convert.h"
#include "runtime/public/options_map.h"
#include "runtime/public/session_impl.h"

namespace dlrun {

struct Runtime::Impl {
  std::unique_ptr<dlr::Runtime> rt;
  RuntimeOptions options;
};

Runtime::Runtime(std::shared_ptr<Impl> impl) : m_impl(std::move(impl)) {}
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;
Runtime::~Runtime() = default;

Result<Runtime> Runtime::create(const RuntimeOptions& options) {
  return detail::guarded<Runtime>("dlrun::Runtime::create", [&]() -> Result<Runtime> {
    dlr::RuntimeOptions o;
    o.device = options.device == Device::kCUDA ? dlr::DeviceKind::kCUDA : dlr::DeviceKind::kCPU;
    o.cuda_device = options.cuda_device;
    o.budget = options.budget;
    o.copy_profile = options.copy_profile;
    o.prefetch_next = options.prefetch_next;
    o.prefetch_depth = options.prefetch_depth;
    o.shared_ring = options.shared_ring;
    o.objective = options.objective == SplitObjective::kMaxSlowdown ? dlr::SplitObjective::kMaxSlowdown
                                                                     : dlr::SplitObjective::kSum;
    auto rt = dlr::Runtime::create(o);
    if (!rt.ok()) return detail::to_error(rt.status());
    auto impl = std::make_shared<Impl>();
    impl->rt = std::move(*rt);
    impl->options = options;
    return Runtime(std::move(impl));
  });
}

Result<Session> Runtime::open(const std::string& cfg_path, const std::string& weights_path, const Options& options,
                              double weight) {
  return detail::guarded<Session>("dlrun::Runtime::open", [&]() -> Result<Session> {
    if (!m_impl) return Error{ErrorCode::kInvalidArgument, "dlrun::Runtime::open: the runtime was moved from"};
    auto so = detail::to_session_options(options);
    if (!so.ok()) return detail::to_error(so.status());
    auto model = m_impl->rt->open(cfg_path, weights_path, *so, weight);
    if (!model.ok()) return detail::to_error(model.status());
    auto impl = std::make_unique<Session::Impl>();
    impl->runtime = m_impl;
    impl->hosted = std::move(*model);
    impl->s = &impl->hosted->session();
    impl->options = options;
    return Session(std::move(impl));
  });
}

RuntimeMemory Runtime::memory() const {
  RuntimeMemory r;
  if (!m_impl) return r;
  const dlr::RuntimeMemory m = m_impl->rt->memory();
  r.budget = m.budget;
  r.activations = m.arena;
  r.workspace = m.workspace;
  r.weights = m.weights;
  r.ring = m.ring;
  r.other = m.other;
  r.host_weights = m.host_weights;
  for (const dlr::RuntimeMemory::Model& x : m.models) {
    RuntimeMemory::Network n;
    n.name = x.name;
    n.weight_budget = x.weight_budget;
    n.resident = x.resident;
    n.pool = x.pool;
    n.shared_ring = x.shared_ring;
    n.streamed = x.streamed;
    n.prefetched = x.prefetched;
    n.activations = x.arena_need;
    n.workspace = x.workspace_need;
    n.other = x.other;
    n.host_weights = x.host_weights;
    n.predicted_ms = x.predicted_ms;
    r.networks.push_back(std::move(n));
  }
  return r;
}

std::string Runtime::plan_text() const { return m_impl ? m_impl->rt->plan_text() : std::string(); }

const RuntimeOptions& Runtime::options() const {
  static const RuntimeOptions kDefault;
  return m_impl ? m_impl->options : kDefault;
}

}  // namespace dlrun
