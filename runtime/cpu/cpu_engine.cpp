#include "runtime/cpu/cpu_engine.h"

#include "runtime/cpu/cpu_threads.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "runtime/compile/dequant_buffers.h"

namespace dlr {

void preprocess_image_cpu(const ImageU8& img, int net_w, int net_h, bool letterbox, float* dst,
                          std::vector<float>* tmp) {
  const int c = 3;
  const size_t planar = size_t(c) * size_t(img.width) * size_t(img.height);
  // planar image + horizontal pass (c*ih*ow) + letterbox inner image (c*oh*ow)
  const size_t need = planar + size_t(c) * img.height * net_w + size_t(c) * net_h * net_w;
  if (tmp->size() < need) tmp->resize(need);
  float* rgb = tmp->data();
  float* work = rgb + planar;
  cpu::image_to_planar(img, rgb);
  if (letterbox)
    cpu::letterbox_darknet(rgb, c, img.height, img.width, dst, net_h, net_w, work);
  else
    cpu::resize_darknet(rgb, c, img.height, img.width, dst, net_h, net_w, work);
}

Expected<std::unique_ptr<CpuEngine>> CpuEngine::create(const CompiledModel& model, WeightSource& weights) {
  const ExecutionPlan& plan = model.plan;
  if (plan.options.layout != Layout::kNCHW || plan.options.activation_dtype != DType::kF32 ||
      plan.options.weight_dtype != DType::kF32 || model.streaming || (model.from_storage && !model.reads.two_stage))
    return invalid_argument("the CPU backend runs fp32 NCHW preload plans or two-stage storage plans only");
  if (plan.options.conv_over_concat)
    return invalid_argument("the CPU backend does not run convs over a concatenation's parts (a plan compiled for "
                            "CUDA NHWC)");
  DLR_RETURN_IF_ERROR(check_dequant_buffers(plan));
  std::unique_ptr<CpuEngine> e(new CpuEngine(model));
  if (e->m_storage) {
    const BlobFile* file = weights.blob_file();
    if (!file) return invalid_argument(weights.name() + ": weights from storage need a prepared weight file");
    const std::vector<int64_t>& at = e->m_reads.blob_staging_offset;
    if (at.size() != e->m_plan.weights.size())
      return invalid_argument("read plan: staging offsets for " + std::to_string(at.size()) + " of " +
                              std::to_string(e->m_plan.weights.size()) + " weight blobs");
    // Blobs the read plan does not read (offset -1) are kept: read once here, CRC checked.
    std::vector<char> kept(at.size(), 0);
    for (size_t b = 0; b < at.size(); ++b) kept[b] = at[b] < 0;
    if (std::find(kept.begin(), kept.end(), 1) != kept.end()) {
      DLR_ASSIGN_OR_RETURN(e->m_weights, WeightStore::create_subset(e->m_plan, weights, {}, kept));
    }
    if (!e->m_reads.units.empty()) {
      DLR_ASSIGN_OR_RETURN(e->m_staging, HostBuffer::aligned(size_t(e->m_reads.staging_bytes)));
      DLR_ASSIGN_OR_RETURN(e->m_pipeline,
                           ReadPipeline::open(e->m_reads, *file, static_cast<char*>(e->m_staging.data()),
                                              model.engine.reader, {}, model.engine.prefetch_reads,
                                              model.engine.thread_placement, model.engine.cache_hits));
    }
  } else {
    // Blobs prepared on the session's threads (every CPU for auto), as the convolutions run.
    const int threads = model.engine.threads > 0 ? model.engine.threads : available_cpus();
    const auto t0 = std::chrono::steady_clock::now();
    DLR_ASSIGN_OR_RETURN(e->m_weights, WeightStore::create(e->m_plan, weights, {}, threads));
    e->m_open_timing.weights_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    e->m_open_timing.weights_prepare_ms = e->m_open_timing.weights_ms;
    e->m_open_timing.weights_threads = threads;
  }
  // The convolutions' scratch holds a column tile per thread that may run at once:
  // the session's thread count, or every CPU for auto (cpu_threads.h).
  e->m_scratch_threads = model.engine.threads > 0 ? model.engine.threads : available_cpus();
  int64_t scratch = 0;
  for (const Step& s : e->m_plan.steps)
    if (s.kind == LayerKind::kConv)
      scratch = std::max(scratch, cpu::conv2d_scratch_floats(std::get<ConvParams>(s.params), s.in, s.out,
                                                             e->m_scratch_threads));
  e->m_scratch_need = std::max<int64_t>(scratch, 1);
  e->m_timings.resize(e->m_plan.steps.size());
  const auto t_buffers = std::chrono::steady_clock::now();
  if (!e->m_shared) {
    DLR_ASSIGN_OR_RETURN(e->m_arena, HostBuffer::aligned(size_t(e->m_plan.arena_bytes)));
    std::memset(e->m_arena.data(), 0, e->m_arena.bytes());
    e->m_scratch.assign(size_t(e->m_scratch_need), 0.0f);
    e->m_arena_ptr = static_cast<char*>(e->m_arena.data());
    e->m_scratch_ptr = e->m_scratch.data();
    e->resolve_views();
  }
  e->m_open_timing.buffers_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_buffers).count();
  return e;
}

void CpuEngine::resolve_views() {
  m_views.clear();
  for (const Step& s : m_plan.steps) {
    StepViews v;
    for (const ViewRef& r : s.inputs) v.in.push_back(view(r));
    v.out = view(s.output);
    for (const auto& cp : s.copies) v.copies.emplace_back(view(cp.first), view(cp.second));
    for (const auto& cp : s.packs) v.packs.emplace_back(view(cp.first), view(cp.second));
    if (s.residual.buffer >= 0) v.residual = view(s.residual);
    m_views.push_back(std::move(v));
  }
}

Status CpuEngine::bind_shared(void* arena, int64_t arena_bytes, void* workspace, int64_t workspace_bytes) {
  if (!m_shared) return invalid_argument("bind_shared: this engine owns its memory");
  if (arena_bytes < m_plan.arena_bytes || workspace_bytes < m_scratch_need * 4 || arena == nullptr ||
      workspace == nullptr)
    return invalid_argument("bind_shared: " + std::to_string(arena_bytes) + " arena and " +
                            std::to_string(workspace_bytes) + " workspace bytes for an engine needing " +
                            std::to_string(m_plan.arena_bytes) + " and " + std::to_string(m_scratch_need * 4));
  m_arena_ptr = static_cast<char*>(arena);
  m_scratch_ptr = static_cast<float*>(workspace);
  resolve_views();
  return Status();
}

TensorView CpuEngine::view(const ViewRef& v) const {
  if (v.buffer < 0) return TensorView();  // a route with no buffer (PlannerOptions::conv_over_concat)
  const Buffer& b = m_plan.buffer(v);
  TensorView t;
  t.data = arena_base() + b.offset + int64_t(v.c_offset) * b.h * b.w * 4;
  t.dtype = DType::kF32;
  t.layout = Layout::kNCHW;
  t.n = m_plan.options.batch;
  t.c = v.c;
  t.h = b.h;
  t.w = b.w;
  t.n_stride = int64_t(b.c) * b.h * b.w;
  t.pixel_stride = b.c;
  return t;
}

Status CpuEngine::reserve_images(int max_width, int max_height) {
  const int nw = m_plan.input_shape.w, nh = m_plan.input_shape.h;
  const size_t need = size_t(3) * max_width * max_height + size_t(3) * max_height * nw + size_t(3) * nh * nw;
  if (m_image_tmp.size() < need) m_image_tmp.resize(need);
  return Status();
}

Status CpuEngine::set_images(const ImageU8* images, int n, bool letterbox) {
  DLR_RETURN_IF_ERROR(check_images(m_plan, images, n));
  const TensorView in = view(ViewRef{m_plan.input_buffer, 0, m_plan.input_shape.c});
  for (int i = 0; i < n; ++i)
    preprocess_image_cpu(images[i], in.w, in.h, letterbox, in.f32() + i * in.n_stride, &m_image_tmp);
  return Status();
}

Status CpuEngine::set_input(const float* nchw, int n) {
  if (n < 1 || n > m_plan.options.batch)
    return invalid_argument("got " + std::to_string(n) + " inputs for a batch of " +
                            std::to_string(m_plan.options.batch));
  const TensorView in = view(ViewRef{m_plan.input_buffer, 0, m_plan.input_shape.c});
  std::memcpy(in.data, nchw, size_t(n) * size_t(m_plan.input_shape.count()) * 4);
  return Status();
}

void CpuEngine::run_step(const Step& s) {
  const StepViews& v = m_views[size_t(s.index)];
  cpu::OpCall call;
  call.layer = s.layer;
  call.params = &s.params;
  call.in = v.in.data();
  call.n_in = int(v.in.size());
  call.out = v.out;
  call.copies = v.copies.data();
  call.n_copies = int(v.copies.size());
  call.packs = v.packs.data();
  call.n_packs = int(v.packs.size());
  call.accumulate = s.accumulate;
  call.residual = s.residual.buffer >= 0 ? &v.residual : nullptr;
  call.residual_act = s.residual_activation;
  if (s.weight >= 0) {
    const WeightBlob& wb = m_plan.weights[size_t(s.weight)];
    const char* blob = this->blob(s.weight);
    call.weights = reinterpret_cast<const float*>(blob);
    if (s.dequant >= 0) {  // int8: expanded into the step's buffer first
      float* w = reinterpret_cast<float*>(m_arena_ptr + m_plan.buffers[size_t(s.dequant)].offset);
      cpu::dequantize_weights(reinterpret_cast<const int8_t*>(blob), reinterpret_cast<const float*>(blob + wb.scale_offset),
                              wb.scale_elems, wb.weight_elems / wb.scale_elems, w, m_scratch_threads);
      call.weights = w;
    }
    call.bias = wb.bias_elems > 0 ? reinterpret_cast<const float*>(blob + wb.bias_offset) : nullptr;
    call.scratch = m_scratch_ptr;
    call.scratch_threads = m_scratch_threads;
  }
  cpu::run_op(s.kind, call);
}

const char* CpuEngine::blob(int index) const {
  if (m_storage && m_reads.blob_staging_offset[size_t(index)] >= 0)
    return static_cast<const char*>(m_staging.data()) + m_reads.blob_staging_offset[size_t(index)];
  return static_cast<const char*>(m_weights.blob(index));
}

std::vector<ReadTiming> CpuEngine::read_timings() const {
  return m_pipeline ? m_pipeline->timings() : std::vector<ReadTiming>();
}

int64_t CpuEngine::read_cached_bytes() const { return m_pipeline ? m_pipeline->cached_bytes() : 0; }

// Two stages: before a layer, the read bringing its weights; after it, staging it frees.
Status CpuEngine::run_storage() {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto ms_since = [&](Clock::time_point t) { return std::chrono::duration<double, std::milli>(t - t0).count(); };
  m_pipeline->start();
  for (const Step& s : m_plan.steps) {
    const auto start = Clock::now();
    const int unit = m_reads.layer_read_unit[size_t(s.index)];
    if (unit >= 0) {
      Status st = m_pipeline->wait_unit(unit);
      if (!st.ok()) {
        m_pipeline->abort();
        (void)m_pipeline->finish();
        return st;
      }
    }
    const auto ready = Clock::now();
    if (!s.no_op || !s.copies.empty()) run_step(s);
    if (m_reads.layer_releases[size_t(s.index)]) m_pipeline->progress(s.index);
    LayerTiming& t = m_timings[size_t(s.index)];
    t = LayerTiming{s.layer, ms_since(start), ms_since(Clock::now()), ms_since(ready), 0, s.index, s.slice};
    t.weight_bytes = s.weight >= 0 ? m_plan.weights[size_t(s.weight)].bytes : 0;
  }
  DLR_RETURN_IF_ERROR(m_pipeline->finish());
  m_last_ms = ms_since(Clock::now());
  return Status();
}

Status CpuEngine::run() {
  if (m_arena_ptr == nullptr && m_plan.arena_bytes > 0)
    return internal_error("run: a shared-memory engine needs bind_shared() first");

  if (m_pipeline) return run_storage();  // storage with every blob kept runs as preload
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto ms_since = [&](Clock::time_point t) { return std::chrono::duration<double, std::milli>(t - t0).count(); };
  for (const Step& s : m_plan.steps) {
    refresh_cpu_threads();  // auto threads: follow the number of sessions running now
    const auto start = Clock::now();
    if (!s.no_op || !s.copies.empty()) run_step(s);
    const double begin = ms_since(start);
    m_timings[size_t(s.index)] = LayerTiming{s.layer, begin, ms_since(Clock::now()), begin, 0, s.index, s.slice};
  }
  m_last_ms = ms_since(Clock::now());
  return Status();
}

const float* CpuEngine::output(int layer, int image) const {
  const TensorView v = view(m_plan.layer_out[size_t(layer)]);
  return v.f32() + int64_t(image) * v.n_stride;
}

Status CpuEngine::read_layer(int layer, int image, std::vector<float>* out) const {
  if (layer < 0 || layer >= int(m_plan.layer_out.size()) || image < 0 || image >= m_plan.options.batch)
    return invalid_argument("read_layer: layer or image out of range");
  const TensorView v = view(m_plan.layer_out[size_t(layer)]);
  const Buffer& b = m_plan.buffer(m_plan.layer_out[size_t(layer)]);
  if (b.last_step < int(m_plan.steps.size()))
    return invalid_argument("layer " + std::to_string(layer) +
                            " output is not kept after the run (plan with keep_all_outputs)");
  const int64_t count = int64_t(v.c) * v.h * v.w;
  out->assign(v.f32() + image * v.n_stride, v.f32() + image * v.n_stride + count);
  return Status();
}

MemoryReport CpuEngine::memory() const {
  MemoryReport r;
  r.weights = m_weights.bytes();  // preload: every blob; storage: the blobs kept (read once at open)
  r.host_weights = m_storage ? int64_t(m_staging.bytes()) : 0;  // the staging area
  r.read_bytes = m_pipeline ? m_reads.read_bytes() : 0;
  r.activations = m_shared ? 0 : m_plan.arena_bytes;
  r.workspace = int64_t(m_scratch.size()) * 4;
  if (m_shared) {
    r.shared_activations = m_plan.arena_bytes;
    r.shared_workspace = m_scratch_need * 4;
  }
  r.other = int64_t(m_image_tmp.size()) * 4;
  return r;
}

}  // namespace dlr
