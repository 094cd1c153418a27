// CudaEngine's convolutions (create()'s step): cuDNN descriptors and algorithms per
// conv of one input, cuBLAS for a conv over a concatenation's parts, the algorithm
// choices read from and kept in the user's cache (runtime/cache/conv_algo_cache.h), and
// the workspace the largest conv needs.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_graph.h"
#include "kernels/cuda/cuda_check.h"
#include "runtime/cache/conv_algo_cache.h"
#include "runtime/core/clock.h"
#include "runtime/core/log.h"
#include "runtime/cuda/cuda_engine_impl.h"
#include "runtime/streaming/profile_select.h"

namespace dlr {
namespace {

// The cuDNN algorithm choices kept for this model and GPU (runtime/cache/conv_algo_cache.h).
struct AlgoCacheFile {
  bool on = false;
  std::string path;
  ConvAlgoKey key;
  ConvAlgoMap stored;  // as read (empty when absent or ignored)
};

// Finds and reads the file; any problem turns the cache off or ignores the file, with
// a warning, never an error.
AlgoCacheFile open_algo_cache(const CompiledModel& model, int device, EngineOpenTiming* t) {
  AlgoCacheFile f;
  cudaDeviceProp prop{};
  const cudaError_t pe = cudaGetDeviceProperties(&prop, device);
  if (pe != cudaSuccess) {
    t->algo_cache = std::string("off: cudaGetDeviceProperties: ") + cudaGetErrorString(pe);
    DLR_LOG_WARN("cuDNN algorithm choices not kept: {}", t->algo_cache);
    return f;
  }
  f.key = conv_algo_key(model, uuid_hex(prop.uuid.bytes), int64_t(cudnnGetVersion()));
  const Expected<std::string> path = conv_algos_path(model.model_name, f.key);
  if (!path.ok()) {
    t->algo_cache = "off: " + path.status().message();
    DLR_LOG_WARN("cuDNN algorithm choices not kept: {}", path.status().message());
    return f;
  }
  f.on = true;
  f.path = *path;
  t->algo_cache_path = f.path;
  ConvAlgoLoadResult r = load_conv_algos(f.path, f.key, kAlgoCount);
  switch (r.state) {
    case ConvAlgoLoad::kAbsent:
      t->algo_cache = "absent";
      break;
    case ConvAlgoLoad::kIgnored:
      t->algo_cache = "ignored: " + r.reason;
      DLR_LOG_WARN("cuDNN algorithm cache {}; ignored (choosing again and rewriting it)", r.reason);
      break;
    case ConvAlgoLoad::kLoaded:
      f.stored = std::move(r.algos);
      t->algo_cache = "hit";  // "partial" after the convolutions if some were not in it
      break;
  }
  return f;
}

// The cuDNN graph plans kept for this model and GPU (runtime/cache/fused_plan_cache.h),
// beside the algorithm choices and under the same switch; path empty: not kept.
void open_fused_plans(const AlgoCacheFile& algos, const std::string& model_name, Fusion fusion,
                      FusedSetup* f, EngineOpenTiming* t) {
  if (!algos.on || fusion == Fusion::kOff || fusion == Fusion::kEpilogue) return;
  const Expected<std::string> path = fused_plans_path(model_name, fused_plans_key(algos.key, model_name));
  if (!path.ok()) {
    DLR_LOG_WARN("cuDNN graph plans not kept: {}", path.status().message());
    return;
  }
  f->path = *path;
  f->key = fused_plans_key(algos.key, model_name);
  std::string reason;
  f->stored = load_fused_plans(f->path, f->key, &reason);
  if (!reason.empty()) DLR_LOG_WARN("cuDNN graph plan cache {}; ignored (building again and rewriting it)", reason);
  f->keep = f->stored;  // the configurations of other plans of this model stay
  t->fused_plans_stored = int(f->stored.size());
}

// A conv's creation error, naming the layer and its cfg line.
Status layer_error(const std::string& cfg_path, const Step& st, const Status& why) {
  return Status(why.code(), cfg_path + ": layer " + std::to_string(st.layer) + " (cfg line " +
                                std::to_string(st.cfg_line) + "): " + why.message());
}

// Writes this model's choices where they differ from the file's (a failure is a warning).
void keep_algo_choices(const AlgoCacheFile& f, const ConvAlgoMap& chosen, EngineOpenTiming* t) {
  const auto t_save = Clock::now();
  if (t->algo_cache == "hit" && t->convs_queried > 0) t->algo_cache = "partial";
  if (chosen != f.stored) {
    const Status saved = save_conv_algos(f.path, f.key, chosen);
    if (!saved.ok()) DLR_LOG_WARN("cuDNN algorithm choices not kept: {}", saved.message());
  }
  t->algo_cache_ms += ms_since(t_save);
}

void log_conv_setup(const EngineOpenTiming& t, const AlgoCacheFile& f) {
  DLR_LOG_DEBUG("cuda engine: {} convolutions in {:.1f} ms (first {:.1f} ms; descriptors {:.1f} ms, cuDNN query {:.1f} "
                "ms for {}, workspace of cached algorithms {:.1f} ms for {} of {} cached, {} with their size; "
                "algorithm cache {} {:.1f} ms{}{})",
                t.convs, t.conv_setup_ms, t.conv_first_ms, t.conv_descriptors_ms, t.conv_query_ms, t.convs_queried,
                t.conv_workspace_ms, t.convs_cached - t.convs_workspace_cached, t.convs_cached,
                t.convs_workspace_cached, t.algo_cache, t.algo_cache_ms, f.on ? ", " : "", f.path);
}

}  // namespace

Status CudaEngine::setup_convs(const CompiledModel& model) {
  EngineOpenTiming& timing = m_open_timing;
  const auto t_conv = Clock::now();
  AlgoCacheFile algo_file;
  if (m_options.cache_conv_algos) {
    algo_file = open_algo_cache(model, m_options.cuda_device, &timing);
  } else {
    timing.algo_cache = "off";
  }
  timing.algo_cache_ms = ms_since(t_conv);
  ConvAlgoMap chosen;  // this model's choices, to keep
  m_fused = FusedSetup();
  m_algo_setup = AlgoSetup();
  open_fused_plans(algo_file, model.model_name, m_options.fusion, &m_fused, &timing);
  DLR_RETURN_IF_ERROR(load_fused_plans_on_threads());
  std::map<std::string, std::shared_ptr<const cuda::FusedConv>> fused_made;
  m_convs.resize(m_plan.steps.size());
  m_concat_convs.resize(m_plan.steps.size());
  m_fused_convs.resize(m_plan.steps.size());
  m_x3_convs.clear();
  m_x3_convs.resize(m_plan.steps.size());
  m_workspace_need = 0;
  for (const Step& st : m_plan.steps) {
    if (st.kind != LayerKind::kConv) continue;
    if (st.inputs.size() > 1) {
      DLR_RETURN_IF_ERROR(make_concat_conv(st, model.cfg_path));
    } else {
      DLR_RETURN_IF_ERROR(make_conv(st, model.cfg_path, algo_file.stored, &chosen));
      DLR_RETURN_IF_ERROR(make_fused_conv(st, model.cfg_path, &fused_made));
    }
  }
  if (algo_file.on) {
    keep_algo_choices(algo_file, chosen, &timing);
    m_algo_setup.path = algo_file.path;
    m_algo_setup.key = algo_file.key;
  }
  m_fused_loaded.clear();
  m_algo_setup.stored = std::move(algo_file.stored);
  m_algo_setup.chosen = std::move(chosen);
  timing.conv_setup_ms = ms_since(t_conv);
  log_conv_setup(timing, algo_file);
  return Status();
}

Status CudaEngine::make_concat_conv(const Step& st, const std::string& cfg_path) {
  std::vector<TensorView> parts;
  for (const ViewRef& r : st.inputs) parts.push_back(view(r));
  auto cc = cuda::ConcatConv::create(std::get<ConvParams>(st.params), m_options.precision, parts.data(),
                                     int(parts.size()), view(st.output));
  if (!cc.ok()) return layer_error(cfg_path, st, cc.status());
  m_concat_convs[size_t(st.index)] = std::move(cc).value();
  return make_cublas();
}

Status CudaEngine::make_cublas() {
  if (m_cublas) return Status();
  const auto t0 = Clock::now();
  DLR_ASSIGN_OR_RETURN(m_cublas, cuda::make_cublas());
  m_open_timing.cublas_handle_ms += ms_since(t0);
  return Status();
}

Expected<std::unique_ptr<cuda::Tf32x3Conv>> CudaEngine::make_x3_conv(const Step& st, int algo) {
  cuda::Tf32x3Config cfg;
  cfg.params = std::get<ConvParams>(st.params);
  cfg.form = algo == kAlgo3xTf32Gemm ? cuda::Tf32x3Form::kGemm : cuda::Tf32x3Form::kChunks;
  if (cfg.form == cuda::Tf32x3Form::kGemm) DLR_RETURN_IF_ERROR(make_cublas());
  cfg.workspace_limit = size_t(m_options.workspace_limit);
  cfg.accumulate = st.accumulate;
  return cuda::Tf32x3Conv::create(m_cudnn.get(), cfg, view(x3_input(st)), view(st.output));
}

// A 3xTF32 conv takes channel-slice views, so an input-channel slice whose plan packs its
// channels for cuDNN (Step::packs) reads them in place: the pack's source. Both the conv's
// creation and enqueue_step (which then skips the pack) read its input here.
ViewRef CudaEngine::x3_input(const Step& st) { return st.packs.size() == 1 ? st.packs[0].first : st.inputs[0]; }

// A conv chosen as 3xTF32 at an earlier open (`kept`) or by this process: only its
// Tf32x3Conv is made (no cuDNN query), and nothing is timed for it again.
Status CudaEngine::make_x3_step(const Step& st, int algo, const std::string& cfg_path, const std::string& conv_key,
                                const std::string& process_key, const ConvAlgoChoice* kept, ConvAlgoMap* chosen) {
  const auto t0 = Clock::now();
  auto made = make_x3_conv(st, algo);
  m_open_timing.x3_setup_ms += ms_since(t0);
  if (!made.ok()) return layer_error(cfg_path, st, made.status());
  m_open_timing.convs_x3 += 1;
  ConvAlgoChoice choice{algo, int64_t((*made)->workspace_bytes())};
  if (kept != nullptr && kept->algo == algo) choice.ms = kept->ms;
  register_x3_choice(process_key, algo);
  m_open_timing.convs += 1;
  m_open_timing.convs_cached += 1;
  m_open_timing.convs_workspace_cached += 1;
  m_algo_setup.steps[conv_key].push_back(st.index);
  (*chosen)[conv_key] = choice;
  m_workspace_need = std::max(m_workspace_need, (*made)->workspace_bytes());
  m_x3_convs[size_t(st.index)] = std::move(made).value();
  return Status();
}

cuda::ConvConfig CudaEngine::conv_config(const Step& st) const {
  cuda::ConvConfig cfg;
  cfg.params = std::get<ConvParams>(st.params);
  cfg.precision = m_options.precision;
  cfg.policy = m_options.find_algorithms ? cuda::AlgoPolicy::kFind : cuda::AlgoPolicy::kHeuristic;
  cfg.workspace_limit = size_t(m_options.workspace_limit);
  cfg.accumulate = st.accumulate;
  return cfg;
}

Status CudaEngine::make_conv(const Step& st, const std::string& cfg_path, const ConvAlgoMap& stored,
                             ConvAlgoMap* chosen) {
  EngineOpenTiming& timing = m_open_timing;
  const cuda::ConvConfig cfg = conv_config(st);
  const TensorView in = view(st.inputs[0]), out = view(st.output);
  const auto t_one = Clock::now();
  const std::string conv_key = cuda::CudnnConv::config_key(cfg, in, out);
  DLR_ASSIGN_OR_RETURN(const std::string process_key, cuda::CudnnConv::cache_key(cfg, in, out));
  const auto kept = stored.find(conv_key);
  const int chosen_here = x3_chosen(process_key);  // this process's choice wins over the file's
  const int x3 = chosen_here >= 0 ? chosen_here : kept != stored.end() && is_x3(kept->second.algo) ? kept->second.algo : -1;
  if (kept != stored.end() && !is_x3(kept->second.algo)) {
    // Kept from an earlier run: offered to the process-wide cache with its workspace
    // size (a choice this process made already wins); CudnnConv::create then uses it
    // without asking cuDNN (the file's key makes the stored size this GPU's, this
    // cuDNN's and this conv's, runtime/cache/conv_algo_cache.h).
    cuda::AlgoCache::process().insert(process_key, cudnnConvolutionFwdAlgo_t(kept->second.algo),
                                      kept->second.workspace);
  }
  if (x3 >= 0)
    return make_x3_step(st, x3, cfg_path, conv_key, process_key, kept != stored.end() ? &kept->second : nullptr, chosen);
  auto conv = cuda::CudnnConv::create(m_cudnn.get(), cfg, in, out);
  if (!conv.ok()) return layer_error(cfg_path, st, conv.status());
  if (timing.convs == 0) timing.conv_first_ms = ms_since(t_one);
  const cuda::ConvCreateInfo& ci = (*conv)->create_info();
  timing.convs += 1;
  timing.convs_cached += ci.from_cache ? 1 : 0;
  timing.convs_workspace_cached += ci.workspace_cached ? 1 : 0;
  timing.convs_queried += ci.queried ? 1 : 0;
  timing.conv_descriptors_ms += ci.descriptors_ms;
  timing.conv_query_ms += ci.query_ms;
  timing.conv_workspace_ms += ci.workspace_ms;
  ConvAlgoChoice choice{int((*conv)->algo()), int64_t((*conv)->workspace_bytes())};
  if (kept != stored.end() && kept->second.algo == choice.algo) choice.ms = kept->second.ms;  // measured earlier
  std::vector<int>& same = m_algo_setup.steps[conv_key];
  if (same.empty() && !choice.measured() && m_options.times_fp32_algorithms()) m_algo_setup.to_time.push_back(conv_key);
  same.push_back(st.index);
  (*chosen)[conv_key] = choice;
  m_workspace_need = std::max(m_workspace_need, (*conv)->workspace_bytes());
  m_convs[size_t(st.index)] = std::move(conv).value();
  return Status();
}

// Whether the engine runs `st` as one cuDNN graph (fp16 or tf32 NHWC, a whole conv with
// its bias; never strict fp32, whose convs must not round to TF32). auto: only where the
// plans are kept between runs (their first build compiles kernels for seconds; a later
// open loads them).
bool CudaEngine::wants_fused(const Step& st) const {
  const Fusion f = m_options.fusion;
  const Precision p = m_options.precision;
  return (f == Fusion::kCudnn || (f == Fusion::kAuto && m_options.cache_conv_algos)) &&
         (p == Precision::kFP16 || p == Precision::kTF32) &&
         m_plan.options.layout == Layout::kNHWC && st.kind == LayerKind::kConv && st.inputs.size() == 1 &&
         !st.accumulate && st.weight >= 0 && m_plan.weights[size_t(st.weight)].bias_elems > 0;
}

// auto times the graph against the conv + epilogue pass where the engine may run kernels
// on its own buffers at open (a Runtime's engines share their arena and ring: not there).
bool CudaEngine::chooses_fused() const {
  return m_options.fusion == Fusion::kAuto && !m_options.shared_memory && !m_options.shared_ring;
}

Status CudaEngine::make_fused_conv(const Step& st, const std::string& cfg_path,
                                   std::map<std::string, std::shared_ptr<const cuda::FusedConv>>* made) {
  if (!wants_fused(st)) return Status();
  const cuda::FusedConvConfig cfg = fused_config(st);
  const TensorView in = view(st.inputs[0]), out = view(st.output);
  const std::string key = cuda::FusedConv::key(cfg, in, out);
  m_fused.steps[key].push_back(st.index);
  if (const auto it = made->find(key); it != made->end()) {  // a step of the same configuration decided
    if (it->second) m_open_timing.convs_fused += 1;
    if (!it->second && m_fused.keep.count(key) && m_fused.keep[key].plan.empty()) m_open_timing.fused_slower += 1;
    m_fused_convs[size_t(st.index)] = it->second;
    return Status();
  }
  const auto stored = m_fused.stored.find(key);
  // Measured slower than the epilogue pass: not built, also by engines that do not time.
  if (stored != m_fused.stored.end() && stored->second.plan.empty() && m_options.fusion == Fusion::kAuto) {
    m_fused.keep[key] = stored->second;
    m_open_timing.fused_slower += 1;
    (*made)[key] = nullptr;
    return Status();
  }
  const auto t0 = Clock::now();
  Expected<std::unique_ptr<cuda::FusedConv>> fused = unsupported("not built");
  if (const auto loaded = m_fused_loaded.find(key); loaded != m_fused_loaded.end()) {
    fused = std::move(loaded->second);
    m_fused_loaded.erase(loaded);
  } else if (stored != m_fused.stored.end() && !stored->second.plan.empty()) {
    fused = cuda::FusedConv::load(m_cudnn.get(), cfg, in, out, stored->second.plan);
    if (!fused.ok()) DLR_LOG_WARN("layer {}: stored cuDNN plan not taken ({}); building it", st.layer, fused.status().message());
  }
  if (!fused.ok()) fused = cuda::FusedConv::create(m_cudnn.get(), cfg, in, out);
  m_open_timing.fused_ms += ms_since(t0);
  if (!fused.ok()) {
    if (fused.status().code() != StatusCode::kUnsupported) return layer_error(cfg_path, st, fused.status());
    m_open_timing.fused_refused += 1;
    (*made)[key] = nullptr;
    DLR_LOG_DEBUG("layer {}: {}; conv + epilogue pass", st.layer, fused.status().message());
    return Status();
  }
  DLR_LOG_DEBUG("layer {}: {} in {:.1f} ms, workspace {} bytes", st.layer, (*fused)->describe(),
                (*fused)->info().build_ms, (*fused)->workspace_bytes());
  m_open_timing.convs_fused += 1;
  m_open_timing.fused_loaded += (*fused)->info().loaded ? 1 : 0;
  m_workspace_need = std::max(m_workspace_need, (*fused)->max_workspace_bytes());
  FusedPlanEntry entry;
  if ((*fused)->info().loaded) {
    entry = stored->second;
  } else if (Expected<std::string> text = (*fused)->serialize(); text.ok()) {
    entry.plan = std::move(text).value();
  }
  if (!entry.plan.empty()) m_fused.keep[key] = entry;
  std::shared_ptr<cuda::FusedConv> shared = std::move(fused).value();
  if (chooses_fused() && !entry.measured()) {
    m_fused.to_time.push_back(key);
    m_fused.built[key] = shared;
  }
  (*made)[key] = shared;
  m_fused_convs[size_t(st.index)] = std::move(shared);
  return Status();
}

}  // namespace dlr
