// Session::choose_slice_axes: with slice_by auto on a GPU, the slicing axis of each
// sliced layer from times measured on this GPU (runtime/compile/slice_choice.h;
// docs/streaming.md section 3, "The axis per layer"). At the first open of a model on a
// GPU both variants (every sliced layer by input channels, every one by filters) are
// compiled and timed, each on an engine made for the measurement alone and released
// before the session's own engine is made. Each layer's faster axis gives the plan with
// the least kernel time; where copies bind, the simulator may predict one of the two
// uniform plans faster. The three are predicted, and every layer stays cut by input
// channels unless another is predicted clearly (kPredictionMargin) faster. The choice is kept
// beside the kernel times (kernel_times_cache.h), so later opens compile the chosen plan
// at once. A choice that cannot be made (a variant that does not compile or cannot be
// timed) leaves every layer cut by input channels, with a warning; it never fails the open.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "runtime/backend.h"
#include "runtime/cache/kernel_times_cache.h"
#include "runtime/compile/compile.h"
#include "runtime/compile/slice_choice.h"
#include "runtime/core/log.h"
#include "runtime/session.h"
#include "runtime/weight_source.h"

namespace dlr {
namespace {

// Whether the model has a choice to make: slice_by auto on a GPU with weights from host
// memory (a prepared file fixes its slices when it is written) and a layer cut by input
// channels.
bool wants_axis_choice(const SessionOptions& o, const ExecutionPlan& plan) {
  if (o.device != DeviceKind::kCUDA || o.slice_by != SliceBy::kAuto || o.weights_from != WeightsFrom::kHost)
    return false;
  for (const Step& st : plan.steps)
    if (st.slices > 0 && st.axis == SliceAxis::kChannels) return true;
  return false;
}

// How much faster than every layer cut by input channels another candidate must be
// predicted before it is taken: the simulator's error between sliced plans reached
// 3.7 % on the H200 (docs/streaming.md section 3, "The axis per layer").
constexpr double kPredictionMargin = 0.05;

// Whether every layer of `axes` is cut by input channels.
bool all_channels(const std::map<int, SliceAxis>& axes) {
  for (const auto& [layer, axis] : axes)
    if (axis != SliceAxis::kChannels) return false;
  return true;
}

// The candidate (slice_axis_candidates) to take, each compiled standalone with the kernel
// times put together for it and predicted: a stream plan's simulated latency (copies
// included), else the kernels' sum. Every layer by input channels unless another is
// predicted kPredictionMargin faster (then the fastest). A candidate that does not compile
// is skipped (`per_layer` when none does). *how: the predictions, for the log.
std::map<int, SliceAxis> fastest_predicted(const NetworkDesc& net, const Target& target, const SessionOptions& options,
                                           const TimedPlan& channels, const TimedPlan& filters,
                                           const std::map<int, SliceAxis>& per_layer, std::string* how) {
  const std::vector<std::map<int, SliceAxis>> candidates = slice_axis_candidates(per_layer);
  std::vector<double> score(candidates.size(), 0.0);  // 0: did not compile
  for (size_t i = 0; i < candidates.size(); ++i) {
    CompileInputs inputs;
    inputs.slice_axes = candidates[i];
    Expected<CompiledModel> m = compile(net, target, options, inputs);
    Expected<std::vector<double>> ms =
        m.ok() ? mixed_step_ms(m->plan, channels, filters) : Expected<std::vector<double>>(m.status());
    if (ms.ok()) {
      inputs.layer_ms = *ms;
      m = compile(net, target, options, inputs);
    }
    if (!ms.ok() || !m.ok()) continue;
    score[i] = m->predicted_ms;
    if (!(score[i] > 0)) {
      score[i] = 0;
      for (double t : *ms) score[i] += t;
    }
    const char* name = i == 0 ? "per layer" : all_channels(candidates[i]) ? "all by channels" : "all by filters";
    char line[96];
    std::snprintf(line, sizeof(line), "%s%s %.3f ms", how->empty() ? "predicted: " : ", ", name, score[i]);
    *how += line;
  }
  size_t base = candidates.size();
  for (size_t i = 0; i < candidates.size(); ++i)
    if (score[i] > 0 && all_channels(candidates[i])) base = i;
  size_t best = base;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (score[i] <= 0 || i == base) continue;
    const bool beats_base = base == candidates.size() || score[i] < score[base] * (1 - kPredictionMargin);
    if (beats_base && (best == base || score[i] < score[best])) best = i;
  }
  return best < candidates.size() ? candidates[best] : per_layer;
}

}  // namespace

// The kernel times of `variant`: kept per GPU and model, else measured on an engine made
// for this alone (and kept).
Expected<std::vector<double>> Session::variant_times(const CompiledModel& variant, DeviceStart* start) {
  std::vector<double> ms = m_options.cache_kernel_times ? load_kernel_times(variant) : std::vector<double>();
  if (!ms.empty()) return ms;
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, create_engine(variant, *m_source, start));
  DLR_ASSIGN_OR_RETURN(ms, engine->measure_layer_ms(nullptr));
  if (m_options.cache_kernel_times) {
    const Status saved = save_kernel_times(variant, ms);
    if (!saved.ok()) DLR_LOG_WARN("kernel times not kept: {}", saved.message());
  }
  return ms;
}

// Both variants compiled as standalone plans (engines of their own; a Runtime's plan has
// the same steps) and their kernel times.
struct Session::SliceVariants {
  CompiledModel by_channels, by_filters;
  std::vector<double> channels_ms, filters_ms;
  TimedPlan channels() const { return {&by_channels.plan, &channels_ms}; }
  TimedPlan filters() const { return {&by_filters.plan, &filters_ms}; }
};

Expected<Session::SliceVariants> Session::time_slice_variants(DeviceStart* start) {
  SliceVariants v;
  SessionOptions by_filters = m_options;
  by_filters.slice_by = SliceBy::kFilters;
  DLR_ASSIGN_OR_RETURN(v.by_channels, compile(m_net, m_model->target, m_options, CompileInputs()));
  DLR_ASSIGN_OR_RETURN(v.by_filters, compile(m_net, m_model->target, by_filters, CompileInputs()));
  DLR_ASSIGN_OR_RETURN(v.channels_ms, variant_times(v.by_channels, start));
  DLR_ASSIGN_OR_RETURN(v.filters_ms, variant_times(v.by_filters, start));
  return v;
}

Status Session::choose_slice_axes(DeviceStart* start) {
  if (!wants_axis_choice(m_options, m_model->plan)) return Status();
  const auto t0 = std::chrono::steady_clock::now();
  std::map<int, SliceAxis> axes;
  std::optional<SliceVariants> timed;
  std::string predictions;
  if (!m_options.cache_kernel_times || !load_slice_axes(*m_model, &axes)) {
    Expected<SliceVariants> v = time_slice_variants(start);
    Expected<std::map<int, SliceAxis>> chosen =
        v.ok() ? dlr::choose_slice_axes(v->channels(), v->filters()) : Expected<std::map<int, SliceAxis>>(v.status());
    if (!chosen.ok()) {
      DLR_LOG_WARN("slicing axis per layer not chosen, every sliced layer is cut by input channels: {}",
                   chosen.status().message());
      return Status();
    }
    timed = std::move(*v);
    axes = fastest_predicted(m_net, m_model->target, m_options, timed->channels(), timed->filters(), *chosen,
                             &predictions);
  }
  CompileInputs inputs;
  inputs.shared_memory = m_host != nullptr;
  inputs.slice_axes = axes;
  Expected<CompiledModel> model = compile(m_net, m_model->target, m_options, inputs);
  Expected<std::vector<double>> ms = !model.ok() ? Expected<std::vector<double>>(model.status())
                                     : timed     ? mixed_step_ms(model->plan, timed->channels(), timed->filters())
                                                 : Expected<std::vector<double>>(std::vector<double>());
  if (!ms.ok()) {
    DLR_LOG_WARN("slicing axis per layer not used, every sliced layer is cut by input channels: {}",
                 ms.status().message());
    return Status();
  }
  *m_model = std::move(*model);
  m_slice_axes = std::move(axes);
  m_layer_ms = std::move(*ms);
  m_expand_ms.clear();  // the variants' times count their expansions in line
  if (timed && m_options.cache_kernel_times) {
    // The chosen plan's times first: its file may be the channel variant's, which then keeps the axes.
    Status saved = save_kernel_times(*m_model, m_layer_ms);
    if (saved.ok()) saved = save_slice_axes(timed->by_channels, m_slice_axes);
    if (!saved.ok()) DLR_LOG_WARN("slicing axes not kept: {}", saved.message());
  }
  const double ms_taken =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  DLR_LOG_INFO("{} ({})", slice_axes_note(m_model->plan),
               timed ? "both variants timed in " + std::to_string(int(ms_taken)) + " ms; " + predictions
                     : std::string("the choice kept with the kernel times"));
  return Status();
}

}  // namespace dlr
