#include "runtime/multi/runtime.h"

#include <algorithm>
#include <cstdio>

#include "runtime/backend.h"
#include "runtime/core/log.h"
#include "runtime/engine_sharing.h"
#include "runtime/multi/ring_layout.h"
#include "runtime/multi/runtime_facets.h"
#include "runtime/core/units.h"

namespace dlr {
namespace {

class NoRing final : public SharedRingClient {
 public:
  Status bind_ring(void*, int64_t, int64_t) override { return unsupported("this engine does not share a ring"); }
  bool uses_shared_ring() const override { return false; }
  int64_t ring_start() const override { return -1; }
  int64_t ring_stream_bytes() const override { return 0; }
  Status prefetch(Engine*, int64_t, Engine*) override { return Status(); }
  bool prefetch_pending() const override { return false; }
  int64_t prefetch_issued_bytes() const override { return 0; }
  Status drop_prefetch(Engine&) override { return Status(); }
};

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A model's session options on a runtime: the runtime's device; on the GPU the
// runtime's streaming settings (see Runtime::open).
Status hosted_options(const RuntimeOptions& rt, DeviceKind device, SessionOptions* o) {
  SessionOptions& options = *o;
  if (options.device != device)
    return invalid_argument(std::string("runtime on ") + device_name(device) + ": the model asks for " +
                            device_name(options.device));
  if (options.device != DeviceKind::kCUDA) return Status();
  if (options.cuda_device != rt.cuda_device)
    return invalid_argument("runtime on CUDA device " + std::to_string(rt.cuda_device) +
                            ": the model asks for device " + std::to_string(options.cuda_device));
  // Weights from storage: three stages only (zero copy keeps no device pool for the
  // joint plan to size); such a model is not prefetched across inferences (its copies
  // wait for reads, which no captured graph holds).
  if (options.weights_from == WeightsFrom::kStorage && options.zero_copy == 1)
    return unsupported("runtime: weights from storage with zero copy are not supported on a runtime "
                       "(zero_copy off: read -> copy -> kernel)");
  if (options.weights_from == WeightsFrom::kStorage) options.zero_copy = 0;
  options.mode = WeightMode::kStream;
  options.weight_budget = WeightBudget::min();  // until the joint plan gives the model its share
  options.weight_pool = PoolLayout::kRing;
  options.prefetch_next = rt.prefetch_next && options.weights_from == WeightsFrom::kHost;
  options.copy_profile = rt.copy_profile;
  // The joint plan places every model with the runtime's target (its copy profile);
  // a session calibrating its own profile would compile under another target than the
  // one the joint plan placed it with.
  options.calibrate_copies = false;
  return Status();
}

}  // namespace

// runtime_facets.h
SharedMemoryClient& memory_of(Engine& e) { return *e.shared_memory(); }

SharedRingClient& ring_of(Engine& e) {
  static NoRing none;
  SharedRingClient* r = e.shared_ring();
  return r ? *r : none;
}

RuntimeModel::~RuntimeModel() {
  if (m_runtime) m_runtime->close(this);
}

Expected<std::unique_ptr<Runtime>> Runtime::create(const RuntimeOptions& options) {
  if (options.curve_points < 2) return invalid_argument("runtime: curve points must be >= 2");
  if (options.prefetch_depth < 1 || options.prefetch_depth > 2)
    return invalid_argument("runtime: prefetch depth " + std::to_string(options.prefetch_depth) +
                            ": expected 1 (the next model) or 2 (two models ahead)");
  std::unique_ptr<Runtime> rt(new Runtime());
  rt->m_options = options;
  DLR_ASSIGN_OR_RETURN(rt->m_target, make_target(options.device, options.cuda_device, options.copy_profile));
  if (options.device == DeviceKind::kCUDA && rt->m_target.map_granularity <= 0)
    return unsupported("runtime: this GPU has no virtual memory management, which the shared budget's ring pools "
                       "need");
  DLR_ASSIGN_OR_RETURN(rt->m_shared, make_shared_memory(options.device, options.cuda_device));
  DLR_ASSIGN_OR_RETURN(const WeightBudget b, WeightBudget::parse(options.budget));
  switch (b.kind) {
    case WeightBudget::Kind::kAll:
      rt->m_budget = 0;
      break;
    case WeightBudget::Kind::kBytes:
      rt->m_budget = b.bytes;
      break;
    case WeightBudget::Kind::kFraction:
      if (rt->m_target.memory_bytes <= 0)
        return invalid_argument("runtime budget \"" + options.budget + "\": a percentage is of the device's memory, " +
                                (options.device == DeviceKind::kCPU ? "and the CPU backend has none"
                                                                    : "and this device reports no size") +
                                " (give a size, e.g. 512MiB)");
      rt->m_budget = int64_t(b.fraction * double(rt->m_target.memory_bytes));
      break;
    default:
      return invalid_argument("runtime budget \"" + options.budget + "\": expected all, NN% or a size");
  }
  DLR_LOG_INFO("runtime on {}: budget {}", rt->m_target.name,
               rt->m_budget ? std::to_string(mib(rt->m_budget)) + " MiB" : std::string("none"));
  return rt;
}

Runtime::~Runtime() {
  for (Member& m : m_members) {
    DLR_LOG_ERROR("runtime destroyed with model {} still open (close models before their runtime)",
                  m.model->name());
    m.model->m_runtime = nullptr;
  }
}

Status Runtime::fit_shared_memory(Engine* extra) {
  int64_t arena = 0, workspace = 0;
  auto need = [&](Engine& e) {
    arena = std::max(arena, e.plan().arena_bytes);
    workspace = std::max(workspace, memory_of(e).workspace_needed());
  };
  for (Member& m : m_members) need(m.model->session().engine());
  if (extra) need(*extra);
  arena = (arena + 255) / 256 * 256;
  workspace = (workspace + 255) / 256 * 256;
  const bool moved = arena != m_shared->arena_bytes() || workspace != m_shared->workspace_bytes();
  if (moved) {
    DLR_LOG_DEBUG("runtime: shared arena {:.2f} MiB, workspace {:.2f} MiB", mib(arena), mib(workspace));
    DLR_RETURN_IF_ERROR(m_shared->resize(arena, workspace));
  }
  auto bind = [&](Engine& e) {
    return memory_of(e).bind_shared(m_shared->arena(), m_shared->arena_bytes(), m_shared->workspace(),
                         m_shared->workspace_bytes());
  };
  if (moved)
    for (Member& m : m_members) DLR_RETURN_IF_ERROR(bind(m.model->session().engine()));
  if (extra) DLR_RETURN_IF_ERROR(bind(*extra));
  return Status();
}

Status Runtime::bind_members() {
  const int64_t ring = m_shared->ring_bytes();
  // Each model's stream starts where the previous one's ended (round-robin order), and the
  // gap that closes the cycle goes where no prefetch runs into it (ring_layout.h).
  std::vector<Engine*> engines;
  std::vector<int64_t> stream, prefetch;
  for (Member& m : m_members) {
    Engine& e = m.model->session().engine();
    if (!ring_of(e).uses_shared_ring()) continue;
    const StreamPlan& sp = m.model->session().model().stream;
    engines.push_back(&e);
    stream.push_back(sp.ring_streamed_bytes());
    prefetch.push_back(m_options.prefetch_next ? std::min(sp.prefetch_bytes(), ring) : 0);
  }
  if (engines.empty()) {
    m_pending_offset = 0;
    return Status();
  }
  const std::vector<int64_t> starts = ring_starts(stream, prefetch, ring);
  for (size_t i = 0; i < engines.size(); ++i) DLR_RETURN_IF_ERROR(ring_of(*engines[i]).bind_ring(m_shared->ring(), ring, starts[i]));
  m_pending_offset = (starts.back() + stream.back()) % ring;  // a model being opened: after the last
  return Status();
}

Status Runtime::bind_ring(Engine& engine) {
  if (!shared() || !ring_of(engine).uses_shared_ring()) return Status();
  return ring_of(engine).bind_ring(m_shared->ring(), m_shared->ring_bytes(), m_pending_offset);
}

Expected<RingSplit> Runtime::split_ring(const RingModel* extra) {
  std::vector<RingModel> models;
  int64_t fixed = m_shared->arena_bytes() + m_shared->workspace_bytes();
  for (const Member& m : m_members) {
    if (!m.plan_copy) {
      fixed += m.model->session().weight_budget_bytes();
      continue;
    }
    models.push_back(m.ring);
  }
  if (extra) models.push_back(*extra);
  if (m_budget == 0) {  // no limit: every weight resident
    RingSplit s;
    for (const RingModel& m : models) {
      s.budget.push_back(m.plan->weight_bytes());
      s.in_ring.push_back(0);
      s.resident.push_back(m.plan->weight_bytes());
      s.prefetch_limit.push_back(-1);
      s.prefetch_early.push_back(0);
      s.predicted_ms.push_back(0);
    }
    m_plan_text = "no budget: every weight resident";
    return s;
  }
  const int64_t weight_budget = m_budget - fixed;
  if (weight_budget <= 0) return no_weight_budget(fixed);
  Expected<RingSplit> s = split_shared_ring(models, weight_budget, m_target.map_granularity, m_options.objective);
  if (!s.ok()) {
    if (extra != nullptr && s.status().code() == StatusCode::kOutOfMemory) m_pending_ring_refused = true;
    return split_failed(s.status(), fixed);
  }
  m_plan_text = s->how;
  return s;
}

Status Runtime::apply_ring(const RingSplit& split) {
  DLR_RETURN_IF_ERROR(cancel_prefetch());
  const bool ring_moves = split.ring_bytes != m_shared->ring_bytes();
  if (ring_moves) DLR_RETURN_IF_ERROR(m_shared->resize_ring(0));
  // Resident parts that shrink first, then those that grow: the total stays within the budget.
  for (int phase = 0; phase < 2; ++phase) {
    size_t k = 0;
    for (Member& m : m_members) {
      if (!m.plan_copy) continue;
      const size_t i = k++;
      const Placement want = placement_of(split, i);
      m.prefetch_early = split.prefetch_early[i];
      const bool shrinks =
          want.budget_bytes - want.shared_ring_bytes < m.given.budget_bytes - m.given.shared_ring_bytes;
      if ((phase == 0) != shrinks) continue;
      if (want == m.given) continue;
      DLR_RETURN_IF_ERROR(m.model->session().set_placement(want));
      m.given = want;
    }
  }
  if (ring_moves) DLR_RETURN_IF_ERROR(m_shared->resize_ring(split.ring_bytes));
  return bind_members();
}

Status Runtime::attach(Engine& engine) {
  if (engine.shared_memory() == nullptr) return internal_error("runtime: this engine cannot use the shared memory");
  return fit_shared_memory(&engine);
}

Expected<BudgetSplit> Runtime::split(const ModelCurve* extra) {
  std::vector<ModelCurve> curves;
  int64_t fixed = m_shared->arena_bytes() + m_shared->workspace_bytes();
  for (const Member& m : m_members) {
    if (m.curve.budget_bytes.empty()) {
      fixed += m.model->session().weight_budget_bytes();
      continue;
    }
    curves.push_back(m.curve);
  }
  if (extra) curves.push_back(*extra);
  int64_t weight_budget = int64_t(1) << 62;
  if (m_budget > 0) {
    weight_budget = m_budget - fixed;
    if (weight_budget <= 0) return no_weight_budget(fixed);
  }
  Expected<BudgetSplit> s = split_budget(curves, weight_budget, int64_t(1) << 20, m_options.objective);
  if (!s.ok()) return split_failed(s.status(), fixed);
  m_plan_text = s->how;
  return s;
}

Status Runtime::no_weight_budget(int64_t fixed) const {
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "runtime budget %s (%.2f MiB): the shared arena and workspace (and unstreamed weights) take %.2f MiB",
                m_options.budget.c_str(), mib(m_budget), mib(fixed));
  return out_of_memory(buf);
}

Status Runtime::split_failed(const Status& why, int64_t fixed) const {
  return Status(why.code(), "runtime budget " + m_options.budget + ": " + why.message() + " (after " +
                                std::to_string(int64_t(mib(fixed) + 0.5)) + " MiB of shared arena and workspace)");
}

Status Runtime::apply(const BudgetSplit& split, bool shrink_only) {
  size_t k = 0;
  for (Member& m : m_members) {
    if (m.curve.budget_bytes.empty()) continue;
    const int64_t want = split.bytes[k++];
    Session& s = m.model->session();
    const int64_t have = s.weight_budget_bytes();
    if (want == have || (shrink_only && want > have)) continue;
    Placement p;
    p.budget_bytes = want;
    DLR_RETURN_IF_ERROR(s.set_placement(p));
  }
  return Status();
}

Expected<Placement> Runtime::placement(const CompiledModel& model, const std::vector<double>& layer_ms) {
  if (shared()) {
    RingModel rm;
    rm.name = m_pending_name;
    rm.weight = m_pending_weight;
    m_pending_plan = std::make_shared<ExecutionPlan>(model.plan);
    rm.plan = m_pending_plan.get();
    rm.layer_ms = layer_ms;
    rm.target = m_target;
    rm.options = *model.options;
    rm.two_ahead = m_options.prefetch_depth >= 2 && rm.options.prefetch_next;
    rm.input_bytes = int64_t(model.plan.options.batch) * model.plan.input_shape.count() * 4;  // set_input: f32
    DLR_ASSIGN_OR_RETURN(RingSplit s, split_ring(&rm));
    DLR_RETURN_IF_ERROR(apply_ring(s));
    m_pending_ring = rm;
    m_pending_given = placement_of(s, s.budget.size() - 1);
    return m_pending_given;
  }
  SimOptions sim;
  sim.prefetched = model.options->prefetch_next;
  DLR_ASSIGN_OR_RETURN(ModelCurve curve, model_curve(m_pending_name, model.plan, planning_profile(m_target, *model.options), layer_ms,
                                                     m_target.map_granularity, m_options.curve_points, sim));
  curve.weight = m_pending_weight;
  curve.baseline_ms = model.options->alone_ms;
  DLR_ASSIGN_OR_RETURN(BudgetSplit s, split(&curve));
  // The others shrink now, before the new model takes its share; they grow after it opened.
  DLR_RETURN_IF_ERROR(apply(s, true));
  m_pending_curve = curve;
  Placement p;
  p.budget_bytes = s.bytes.back();
  return p;
}

Status Runtime::replan_all() {
  if (shared()) {
    DLR_ASSIGN_OR_RETURN(RingSplit s, split_ring(nullptr));
    return apply_ring(s);
  }
  DLR_ASSIGN_OR_RETURN(BudgetSplit s, split(nullptr));
  DLR_RETURN_IF_ERROR(apply(s, true));
  return apply(s, false);
}

Expected<std::unique_ptr<Session>> Runtime::open_session(const std::string& cfg_path, const std::string& weights_path,
                                                         const SessionOptions& options) {
  m_pending_curve = ModelCurve();
  m_pending_ring = RingModel();
  m_pending_plan.reset();
  m_pending_given = Placement();
  m_pending_ring_refused = false;
  Expected<std::unique_ptr<Session>> session = Session::open_hosted(cfg_path, weights_path, options, this);
  if (!session.ok()) {
    // Give back what the failed open grew, and what the others gave up for it.
    const Status refit = fit_shared_memory(nullptr);
    if (!refit.ok()) DLR_LOG_ERROR("runtime: after a failed open: {}", refit.message());
    const Status st = replan_all();
    if (!st.ok()) DLR_LOG_ERROR("runtime: after a failed open: {}", st.message());
  }
  return session;
}

Expected<std::unique_ptr<RuntimeModel>> Runtime::open(const std::string& cfg_path, const std::string& weights_path,
                                                      SessionOptions options, double weight) {
  if (!(weight > 0)) return invalid_argument("runtime: a model's weight must be > 0");
  DLR_RETURN_IF_ERROR(hosted_options(m_options, m_target.device, &options));
  const std::lock_guard<std::mutex> lock(m_mutex);
  m_pending_name = base_name(cfg_path);
  m_pending_weight = weight;
  DLR_RETURN_IF_ERROR(cancel_prefetch());
  Expected<std::unique_ptr<Session>> session = open_session(cfg_path, weights_path, options);
  if (!session.ok() && m_pending_ring_refused && options.slot_bytes == 0) {
    DLR_LOG_INFO("runtime: {}: {}; opening it again with {} slots", m_pending_name, session.status().message(),
                 mib_text(kRuntimeSlotBytes));
    options.slot_bytes = kRuntimeSlotBytes;
    session = open_session(cfg_path, weights_path, options);
  }
  if (!session.ok()) return session.status();
  std::unique_ptr<RuntimeModel> model(new RuntimeModel());
  model->m_runtime = this;
  model->m_session = std::move(session).value();
  model->m_name = m_pending_name;
  model->m_weight = weight;
  Member member;
  member.model = model.get();
  member.curve = m_pending_curve;
  member.curve.weight = weight;
  member.ring = m_pending_ring;
  member.plan_copy = m_pending_plan;
  member.given = m_pending_given;
  m_members.push_back(member);
  // Takes the new model out again (this lock is held: its destructor must not close it).
  auto refuse = [&](Status why) {
    m_members.pop_back();
    model->m_runtime = nullptr;
    model.reset();
    Status back = fit_shared_memory(nullptr);
    // The others gave up memory for it: plan them again without it.
    if (back.ok()) back = replan_all();
    if (!back.ok()) DLR_LOG_ERROR("runtime: after a refused open: {}", back.message());
    return why;
  };
  // The budget check covers models that do not stream (the CPU backend) too.
  const int64_t used = memory_locked().total();
  if (m_budget > 0 && used > m_budget) {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "runtime budget %s: %.2f MiB would be in use with %s (budget %.2f MiB)",
                  m_options.budget.c_str(), mib(used), m_pending_name.c_str(), mib(m_budget));
    return refuse(out_of_memory(buf));
  }
  // The new weight decides the split too: plan again with it and grow the others.
  if (shared()) {
    Expected<RingSplit> s = split_ring(nullptr);
    if (s.ok()) {
      const Status moved = apply_ring(*s);
      if (!moved.ok()) return refuse(moved);
    }
  } else {
    Expected<BudgetSplit> s = split(nullptr);
    if (s.ok()) {
      Status moved = apply(*s, true);
      if (moved.ok()) moved = apply(*s, false);
      if (!moved.ok()) return refuse(moved);
    }
  }
  DLR_LOG_INFO("runtime: opened {}; {}", model->m_name, memory_locked().to_text());
  return model;
}

void Runtime::close(RuntimeModel* model) {
  const std::lock_guard<std::mutex> lock(m_mutex);
  auto it = std::find_if(m_members.begin(), m_members.end(), [&](const Member& m) { return m.model == model; });
  if (it == m_members.end()) return;
  Status st = cancel_prefetch();
  if (!st.ok()) DLR_LOG_ERROR("runtime: closing {}: {}", model->name(), st.message());
  m_members.erase(it);
  model->m_session.reset();  // its pool, resident weights and streams go now
  st = fit_shared_memory(nullptr);
  if (st.ok()) st = replan_all();
  if (!st.ok()) DLR_LOG_ERROR("runtime: closing {}: {}", model->name(), st.message());
}

}  // namespace dlr
