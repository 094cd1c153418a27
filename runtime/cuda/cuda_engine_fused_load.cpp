// CudaEngine's load of the kept cuDNN graph plans on several threads (docs/architecture.md,
// "Kernels loaded at open"). Each distinct configuration whose plan the cache file holds
// is loaded once, before setup_convs' pass over the steps, on up to warm_threads threads:
// thread 0 with the engine's handle, the others with a cuDNN handle of their own that the
// engine keeps (m_aux_cudnn) for as long as the plans, since a plan keeps the handle it
// was made with; every run passes its own handle. The warm-up runs on those handles too.
// make_fused_conv takes a loaded plan in place of loading it; a plan that did not load is
// loaded again there, with its warning.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "runtime/core/clock.h"
#include "runtime/core/log.h"
#include "runtime/core/thread_fan.h"
#include "runtime/cuda/cuda_engine_impl.h"

namespace dlr {
namespace {

// One plan to load: its configuration, views and text, and what came of it.
struct PlanLoad {
  std::string key;
  cuda::FusedConvConfig config;
  TensorView in, out;
  const std::string* plan = nullptr;
  Expected<std::unique_ptr<cuda::FusedConv>> made = unsupported("not loaded");
};

}  // namespace

cuda::FusedConvConfig CudaEngine::fused_config(const Step& st) const {
  cuda::FusedConvConfig cfg;
  cfg.params = std::get<ConvParams>(st.params);
  cfg.residual = st.residual.buffer >= 0;
  cfg.post = st.residual_activation;
  cfg.workspace_limit = size_t(m_options.workspace_limit);
  // find_algorithms: several of cuDNN's engines finalised, timed by choose_fused_convs
  cfg.max_plans = chooses_fused() && m_options.find_algorithms ? kFusedPlansToTime : 1;
  return cfg;
}

Status CudaEngine::load_fused_plans_on_threads() {
  m_fused_loaded.clear();
  const int asked = m_options.warm_threads;
  // As the warm-up: not on a Runtime's engines (their helper handles would add up).
  if (asked <= 1 || m_fused.stored.empty() || m_options.shared_memory || m_options.shared_ring) return Status();
  std::vector<PlanLoad> loads;
  std::set<std::string> seen;
  for (const Step& st : m_plan.steps) {
    if (st.kind != LayerKind::kConv || st.inputs.size() != 1 || !wants_fused(st)) continue;
    PlanLoad l;
    l.config = fused_config(st);
    l.in = view(st.inputs[0]);
    l.out = view(st.output);
    l.key = cuda::FusedConv::key(l.config, l.in, l.out);
    const auto stored = m_fused.stored.find(l.key);
    if (stored == m_fused.stored.end() || stored->second.plan.empty() || !seen.insert(l.key).second) continue;
    l.plan = &stored->second.plan;
    loads.push_back(std::move(l));
  }
  if (loads.size() < 2) return Status();
  const auto t0 = Clock::now();
  const int n = std::min(asked, int(loads.size()));
  m_aux_cudnn.resize(size_t(n - 1));
  // Thread t loads plans t, t + n, ... on `cudnn`.
  auto load = [&](int t, cudnnContext* cudnn) {
    for (size_t i = size_t(t); i < loads.size(); i += size_t(n))
      loads[i].made = cuda::FusedConv::load(cudnn, loads[i].config, loads[i].in, loads[i].out, *loads[i].plan);
  };
  const ThreadFan fan = run_on_threads(n, [&](int t) -> Status {
    if (t == 0) {
      load(0, m_cudnn.get());
      return Status();
    }
    DLR_CUDA_CHECK(cudaSetDevice(m_options.cuda_device));
    DLR_ASSIGN_OR_RETURN(m_aux_cudnn[size_t(t - 1)], cuda::make_cudnn());
    load(t, m_aux_cudnn[size_t(t - 1)].get());
    return Status();
  });
  // A thread that did not run or failed leaves its plans to make_fused_conv.
  for (int t = 1; t < n; ++t)
    if (!fan.started[size_t(t)] || !fan.status[size_t(t)].ok())
      DLR_LOG_DEBUG("cuda engine: plan-loading thread {} did not run: {}", t,
                    fan.started[size_t(t)] ? fan.status[size_t(t)].message() : std::string("no thread could be started"));
  int loaded = 0;
  for (PlanLoad& l : loads) {
    if (!l.made.ok()) continue;
    m_fused_loaded[l.key] = std::move(l.made).value();
    ++loaded;
  }
  m_open_timing.fused_ms += ms_since(t0);
  DLR_LOG_DEBUG("cuda engine: {} of {} kept cuDNN graph plans loaded on {} threads in {:.1f} ms", loaded,
                loads.size(), n, ms_since(t0));
  return Status();
}

}  // namespace dlr
