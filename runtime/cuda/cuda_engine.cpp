#include "runtime/cuda/cuda_engine_impl.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_handles.h"
#include "kernels/cuda/cuda_ops.h"
#include "runtime/cache/cache_dir.h"
#include "runtime/cache/conv_algo_cache.h"
#include "runtime/core/log.h"
#include "runtime/cuda/context_init_impl.h"
#include "runtime/cuda/copy_probe.h"
#include "runtime/streaming/profile_select.h"
#include "runtime/weight_store.h"

namespace dlr {

using cuda::DeviceBuffer;
using cuda::PinnedBuffer;

CudaEngine::~CudaEngine() {
  m_pipeline.reset();  // its thread may wait on this engine's events
  if (m_stream) DLR_CUDA_CHECK_LOG(cudaStreamSynchronize(m_stream.get()));
  if (m_copy_stream) DLR_CUDA_CHECK_LOG(cudaStreamSynchronize(m_copy_stream.get()));
}

const char* CudaEngine::blob_ptr(int blob) const {
  if (zero_copy()) return m_staging_dev + m_reads.blob_staging_offset[size_t(blob)];
  if (!m_streaming) return static_cast<const char*>(pool_base()) + m_blob_offsets[size_t(blob)];
  const int64_t off = m_stream_plan.blob_pool_offset[size_t(blob)];
  if (m_stream_plan.is_resident(blob)) return static_cast<const char*>(m_resident.data()) + off;
  if (m_stream_plan.is_staged(blob)) return arena_base() + off;  // copied there every inference
  return static_cast<const char*>(pool_base()) + pool_pos(off);
}

TensorView CudaEngine::view(const ViewRef& v) const {
  if (v.buffer < 0) return TensorView();  // a route its conv reads part by part (conv_over_concat): never run
  const Buffer& b = m_plan.buffer(v);
  const Layout layout = b.layout;
  const int64_t es = int64_t(dtype_size(b.dtype));
  TensorView t;
  t.dtype = b.dtype;
  t.layout = layout;
  t.n = m_plan.options.batch;
  t.c = v.c;
  t.h = b.h;
  t.w = b.w;
  t.n_stride = int64_t(b.c) * b.h * b.w;
  t.pixel_stride = b.c;
  const int64_t elem_off = layout == Layout::kNCHW ? int64_t(v.c_offset) * b.h * b.w : v.c_offset;
  t.data = arena_base() + b.offset + elem_off * es;
  return t;
}

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

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
  ConvAlgoLoadResult r = load_conv_algos(f.path, f.key, int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT));
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

}  // namespace

Expected<std::unique_ptr<CudaEngine>> CudaEngine::create(const CompiledModel& model, WeightSource& weights,
                                                         CudaContextInit* init) {
  const EngineSettings& options = model.engine;
  if (options.device != DeviceKind::kCUDA || model.target.device != DeviceKind::kCUDA)
    return invalid_argument("the CUDA engine runs models compiled for a CUDA target");
  EngineOpenTiming timing;
  auto t0 = Clock::now();
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    return Status(StatusCode::kCudaError, "--device cuda: no CUDA device is available");
  if (options.cuda_device < 0 || options.cuda_device >= count)
    return invalid_argument("CUDA device " + std::to_string(options.cuda_device) + " does not exist (" +
                            std::to_string(count) + " found)");
  DLR_CUDA_CHECK(cudaSetDevice(options.cuda_device));
  std::unique_ptr<CudaEngine> e(new CudaEngine(model));
  const ExecutionPlan& plan = e->m_plan;
  DLR_ASSIGN_OR_RETURN(e->m_stream, cuda::make_stream());
  for (cuda::Event* ev : {&e->m_ev_upload, &e->m_ev_start, &e->m_ev_end}) {
    DLR_ASSIGN_OR_RETURN(*ev, cuda::make_event(true));
  }
  timing.device_ms = ms_since(t0);
  t0 = Clock::now();
  e->m_cudnn = cuda::take_cudnn(init, options.cuda_device);
  if (!e->m_cudnn) {
    DLR_ASSIGN_OR_RETURN(e->m_cudnn, cuda::make_cudnn());
    timing.cudnn_handle_ms = ms_since(t0);
  }

  DLR_LOG_DEBUG("cuda engine: {} buffers, arena {} bytes", plan.buffers.size(), plan.arena_bytes);
  t0 = Clock::now();
  DLR_RETURN_IF_ERROR(e->setup_weights(weights));
  timing.weights_ms = ms_since(t0);
  DLR_LOG_DEBUG("cuda engine: weights ready ({})", model.streaming ? "stream" : "preload");
  t0 = Clock::now();
  if (!options.shared_memory) {
    DLR_ASSIGN_OR_RETURN(e->m_arena, DeviceBuffer::alloc(size_t(plan.arena_bytes)));
    DLR_CUDA_CHECK(cudaMemset(e->m_arena.data(), 0, size_t(plan.arena_bytes)));
    e->m_arena_ptr = static_cast<char*>(e->m_arena.data());
  }
  DLR_ASSIGN_OR_RETURN(e->m_input_f32,
                       DeviceBuffer::alloc(size_t(plan.options.batch) * size_t(plan.input_shape.count()) * 4));
  timing.buffers_ms = ms_since(t0);

  // Convolutions: descriptors and algorithms chosen once (or taken from the choices
  // kept for this model and GPU); one shared workspace.
  const auto t_conv = Clock::now();
  AlgoCacheFile algo_file;
  if (options.cache_conv_algos) {
    algo_file = open_algo_cache(model, options.cuda_device, &timing);
  } else {
    timing.algo_cache = "off";
  }
  timing.algo_cache_ms = ms_since(t_conv);
  ConvAlgoMap chosen;  // this model's choices, to keep
  e->m_convs.resize(plan.steps.size());
  e->m_concat_convs.resize(plan.steps.size());
  size_t workspace = 0;
  for (const Step& st : plan.steps) {
    if (st.kind != LayerKind::kConv) continue;
    if (st.inputs.size() > 1) {  // over a concatenation's parts: cuBLAS, no workspace
      std::vector<TensorView> parts;
      for (const ViewRef& r : st.inputs) parts.push_back(e->view(r));
      auto cc = cuda::ConcatConv::create(std::get<ConvParams>(st.params), options.precision, parts.data(),
                                         int(parts.size()), e->view(st.output));
      if (!cc.ok())
        return Status(cc.status().code(), model.cfg_path + ": layer " + std::to_string(st.layer) + " (cfg line " +
                                              std::to_string(st.cfg_line) + "): " + cc.status().message());
      e->m_concat_convs[size_t(st.layer)] = std::move(cc).value();
      if (!e->m_cublas) {
        DLR_ASSIGN_OR_RETURN(e->m_cublas, cuda::make_cublas());
      }
      continue;
    }
    cuda::ConvConfig cfg;
    cfg.params = std::get<ConvParams>(st.params);
    cfg.precision = options.precision;
    cfg.policy = options.find_algorithms ? cuda::AlgoPolicy::kFind : cuda::AlgoPolicy::kHeuristic;
    cfg.workspace_limit = size_t(options.workspace_limit);
    const TensorView in = e->view(st.inputs[0]), out = e->view(st.output);
    const auto t_one = Clock::now();
    const std::string conv_key = cuda::CudnnConv::config_key(cfg, in, out);
    if (const auto it = algo_file.stored.find(conv_key); it != algo_file.stored.end()) {
      // Kept from an earlier run: offered to the process-wide cache with its workspace
      // size (a choice this process made already wins); CudnnConv::create then uses it
      // without asking cuDNN (the file's key makes the stored size this GPU's, this
      // cuDNN's and this conv's, runtime/cache/conv_algo_cache.h).
      DLR_ASSIGN_OR_RETURN(const std::string key, cuda::CudnnConv::cache_key(cfg, in, out));
      cuda::AlgoCache::process().insert(key, cudnnConvolutionFwdAlgo_t(it->second.algo), it->second.workspace);
    }
    auto conv = cuda::CudnnConv::create(e->m_cudnn.get(), cfg, in, out);
    if (!conv.ok())
      return Status(conv.status().code(), model.cfg_path + ": layer " + std::to_string(st.layer) + " (cfg line " +
                                              std::to_string(st.cfg_line) + "): " + conv.status().message());
    if (timing.convs == 0) timing.conv_first_ms = ms_since(t_one);
    const cuda::ConvCreateInfo& ci = (*conv)->create_info();
    timing.convs += 1;
    timing.convs_cached += ci.from_cache ? 1 : 0;
    timing.convs_workspace_cached += ci.workspace_cached ? 1 : 0;
    timing.convs_queried += ci.queried ? 1 : 0;
    timing.conv_descriptors_ms += ci.descriptors_ms;
    timing.conv_query_ms += ci.query_ms;
    timing.conv_workspace_ms += ci.workspace_ms;
    chosen[conv_key] = ConvAlgoChoice{int((*conv)->algo()), int64_t((*conv)->workspace_bytes())};
    workspace = std::max(workspace, (*conv)->workspace_bytes());
    e->m_convs[size_t(st.layer)] = std::move(conv).value();
  }
  if (algo_file.on) {
    const auto t_save = Clock::now();
    if (timing.algo_cache == "hit" && timing.convs_queried > 0) timing.algo_cache = "partial";
    if (chosen != algo_file.stored) {
      const Status saved = save_conv_algos(algo_file.path, algo_file.key, chosen);
      if (!saved.ok()) DLR_LOG_WARN("cuDNN algorithm choices not kept: {}", saved.message());
    }
    timing.algo_cache_ms += ms_since(t_save);
  }
  timing.conv_setup_ms = ms_since(t_conv);
  DLR_LOG_DEBUG("cuda engine: {} convolutions in {:.1f} ms (first {:.1f} ms; descriptors {:.1f} ms, cuDNN query {:.1f} "
                "ms for {}, workspace of cached algorithms {:.1f} ms for {} of {} cached, {} with their size; "
                "algorithm cache {} {:.1f} ms{}{})",
                timing.convs, timing.conv_setup_ms, timing.conv_first_ms, timing.conv_descriptors_ms,
                timing.conv_query_ms, timing.convs_queried, timing.conv_workspace_ms,
                timing.convs_cached - timing.convs_workspace_cached, timing.convs_cached,
                timing.convs_workspace_cached, timing.algo_cache, timing.algo_cache_ms, algo_file.on ? ", " : "",
                algo_file.path);
  t0 = Clock::now();
  e->m_workspace_need = workspace;
  if (!options.shared_memory) {
    DLR_ASSIGN_OR_RETURN(e->m_workspace, DeviceBuffer::alloc(workspace));
    e->m_workspace_ptr = e->m_workspace.data();
    e->m_workspace_bytes = e->m_workspace.bytes();
  }

  // Outputs: every yolo layer, f32, pinned for the final download.
  e->m_output_offsets.assign(plan.steps.size(), -1);
  int64_t out_floats = 0;
  for (int y : plan.output_layers) {
    e->m_output_offsets[size_t(y)] = out_floats;
    out_floats += int64_t(plan.options.batch) * plan.steps[size_t(y)].out.count();
  }
  DLR_ASSIGN_OR_RETURN(e->m_outputs, PinnedBuffer::alloc(size_t(out_floats) * 4));
  DLR_RETURN_IF_ERROR(e->reserve_images(options.max_image_width, options.max_image_height));
  e->m_timings.resize(plan.steps.size());
  timing.buffers_ms += ms_since(t0);
  DLR_LOG_DEBUG("cuda engine: convolutions ready, workspace {} bytes; open parts: device {:.1f} ms, cuDNN handle {:.1f} "
                "ms, weights {:.1f} ms, buffers {:.1f} ms, convolutions {:.1f} ms",
                workspace, timing.device_ms, timing.cudnn_handle_ms, timing.weights_ms, timing.buffers_ms,
                timing.conv_setup_ms);
  e->m_open_timing = timing;
  return e;
}

Status CudaEngine::bind_shared(void* arena, int64_t arena_bytes, void* workspace, int64_t workspace_bytes) {
  if (!m_options.shared_memory) return invalid_argument("bind_shared: this engine owns its memory");
  if (arena_bytes < m_plan.arena_bytes || workspace_bytes < int64_t(m_workspace_need) ||
      (arena == nullptr && m_plan.arena_bytes > 0))
    return invalid_argument("bind_shared: " + std::to_string(arena_bytes) + " arena and " +
                            std::to_string(workspace_bytes) + " workspace bytes for an engine needing " +
                            std::to_string(m_plan.arena_bytes) + " and " + std::to_string(m_workspace_need));
  m_arena_ptr = static_cast<char*>(arena);
  m_workspace_ptr = workspace;
  m_workspace_bytes = size_t(workspace_bytes);
  m_bound = true;
  // The graphs hold the old addresses.
  if (m_graph) DLR_RETURN_IF_ERROR(capture_graph());
  return Status();
}

Status CudaEngine::bind_ring(void* base, int64_t bytes, int64_t start) {
  if (!m_options.shared_ring) return invalid_argument("bind_ring: this engine owns its pool");
  if (!uses_shared_ring()) return Status();  // its plan keeps every blob resident: no ring
  if (base == nullptr || bytes != m_stream_plan.pool_bytes || start < 0 || start >= bytes)
    return invalid_argument("bind_ring: a ring of " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(start) + " for a plan streaming through " +
                            std::to_string(m_stream_plan.pool_bytes));
  if (m_sring_base == base && m_sring_bytes == bytes && m_sring_start == start && (m_graph || !m_finalized))
    return Status();  // bound there already
  m_sring_base = static_cast<char*>(base);
  m_sring_bytes = bytes;
  m_sring_start = start;
  m_prefetch_issued = 0;  // a prefetch went to the old place
  // The graphs hold the old addresses.
  if (m_finalized && m_options.cuda_graph) DLR_RETURN_IF_ERROR(capture_graph());
  return Status();
}

Status CudaEngine::drop_prefetch(Engine& waiter) {
  if (m_prefetch_issued == 0) return Status();
  auto* w = dynamic_cast<CudaEngine*>(&waiter);
  if (w == nullptr) return internal_error("drop_prefetch: the waiter is not a CUDA engine");
  // The waiter's compute stream orders everything it enqueues next (its graph, its copy
  // stream's fork) after this engine's prefetch copies.
  DLR_CUDA_CHECK(cudaStreamWaitEvent(w->m_stream.get(), m_prefetch_done.get(), 0));
  m_prefetch_issued = 0;
  return Status();
}

Status CudaEngine::finalize() {
  if (m_options.shared_memory && !m_bound)
    return internal_error("finalize: a shared-memory engine needs bind_shared() first");
  if (!ring_ready()) return internal_error("finalize: a shared-ring engine needs bind_ring() first");
  if (m_weights_deferred)
    return internal_error("finalize: the model needs kernel times measured at open and a replan before it can run");
  if (m_options.profile_layers && m_ev_layer_start.empty()) {
    for (auto* v : {&m_ev_layer_start, &m_ev_layer_ready, &m_ev_layer_end}) {
      for (size_t i = 0; i < m_plan.steps.size(); ++i) {
        DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(true));
        v->push_back(std::move(ev));
      }
    }
  }
  // The warm-up (EngineSettings::warm_up_at_open, always with a CUDA graph) makes the
  // first inference after open a warm one. With a graph it is the graph's first replay:
  // the capture itself loads every kernel (each cuDNN convolution's first call, each of
  // our kernels' first launch), so an eager run before it only did that work twice
  // (yolov4 @608 fp16 on the H100, first session of a process: eager warm-up 226 ms +
  // capture 29 ms before, capture 109-120 ms + replay 2 ms now; docs/streaming.md,
  // "Startup: the graph's first replay is the warm-up"). The network runs eagerly only
  // where the capture fails without an eager run first (cuDNN's first call of a
  // configuration may do what a capture cannot hold: then eager warm-up, capture again)
  // or where no graph is used.
  // Without a graph (weights from storage, --no-graph) the eager warm-up runs unless
  // switched off: measured on the H100 the first inference without it took longer than
  // warm-up + first inference (228 against 111 + 58 ms; docs/streaming.md, "Startup,
  // measured").
  // From storage, the first inference's reads begin now and overlap the warm-up (or the
  // time until the first run()): the reader fills staging with the units that need no
  // earlier copy (as much as staging holds) and then waits, as in any inference, for the
  // first run()'s copies.
  if (m_from_storage && m_pipeline && !m_reads_started) {
    m_pipeline->start();
    m_reads_started = true;
  }
  m_open_timing.warmup_run = m_options.cuda_graph || m_options.warm_up_at_open;
  m_open_timing.warmup_eager = false;
  double eager_ms = 0;
  auto eager_warm_up = [&]() -> Status {
    const auto te = Clock::now();
    // From storage the warm-up runs the layers alone on whatever the pool holds: a full
    // read of the weights would only delay the first detection.
    m_kernels_only = m_from_storage;
    const Status warm = enqueue_network(false);
    m_kernels_only = false;
    DLR_RETURN_IF_ERROR(warm);
    DLR_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
    m_prefetch_issued = 0;  // the warm-up's copies overwrote the pool
    m_open_timing.warmup_eager = true;
    eager_ms = ms_since(te);
    return Status();
  };
  m_graph = cuda::GraphExec();
  if (m_options.cuda_graph) {
    const auto t1 = Clock::now();
    Status st = capture_graph();
    if (!st.ok()) {
      DLR_LOG_DEBUG("cuda engine: graph capture without an eager run first failed ({}); warming up eagerly",
                    st.message());
      DLR_RETURN_IF_ERROR(eager_warm_up());
      st = capture_graph();
    }
    m_open_timing.graph_ms = ms_since(t1) - eager_ms;
    if (!st.ok()) DLR_LOG_WARN("CUDA graph capture failed, running without a graph: {}", st.message());
    DLR_LOG_DEBUG("cuda engine: graph {} ({:.1f} ms)", m_graph ? "captured" : "not used", m_open_timing.graph_ms);
  }
  const auto t2 = Clock::now();
  if (m_open_timing.warmup_run && !m_open_timing.warmup_eager) {
    if (m_graph) {
      DLR_CUDA_CHECK(cudaGraphLaunch(m_graph.get(), m_stream.get()));
      DLR_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
      m_prefetch_issued = 0;  // the replay's copies overwrote the pool
    } else {
      DLR_RETURN_IF_ERROR(eager_warm_up());
    }
  }
  m_open_timing.warmup_ms = eager_ms + ms_since(t2);
  m_finalized = true;
  DLR_LOG_DEBUG("cuda engine: {} ({:.1f} ms)",
                !m_open_timing.warmup_run    ? "no warm-up: the first inference loads the kernels"
                : m_open_timing.warmup_eager ? "warm-up done (eager)"
                                             : "warm-up done (the graph's first replay)",
                m_open_timing.warmup_ms);
  return Status();
}

Status CudaEngine::reserve_images(int max_width, int max_height) {
  const int64_t need = align_up(int64_t(max_width) * max_height * 3, 256);
  if (need <= m_image_capacity) return Status();
  if (m_image_capacity > 0) {
    DLR_LOG_WARN("growing image staging to {}x{} (allocation outside the timed inference)", max_width, max_height);
    DLR_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
  }
  const size_t bytes = size_t(need) * size_t(m_plan.options.batch);
  DLR_ASSIGN_OR_RETURN(m_image_host, PinnedBuffer::alloc(bytes));
  DLR_ASSIGN_OR_RETURN(m_image_dev, DeviceBuffer::alloc(bytes));
  m_image_capacity = need;
  return Status();
}

Status CudaEngine::clear_foreign_arena() {
  if (!m_arena_foreign) return Status();
  // Another model ran in the shared arena (Engine::mark_arena_foreign): on the compute
  // stream, before this inference writes its input.
  DLR_CUDA_CHECK(cudaMemsetAsync(arena_base(), 0, size_t(m_plan.arena_bytes), m_stream.get()));
  m_arena_foreign = false;
  return Status();
}

Status CudaEngine::set_images(const ImageU8* images, int n, bool letterbox) {
  DLR_RETURN_IF_ERROR(check_images(m_plan, images, n));
  DLR_RETURN_IF_ERROR(clear_foreign_arena());
  int max_w = 0, max_h = 0;
  for (int i = 0; i < n; ++i) {
    max_w = std::max(max_w, images[i].width);
    max_h = std::max(max_h, images[i].height);
  }
  DLR_RETURN_IF_ERROR(reserve_images(max_w, max_h));
  // A previous set_images() without run() may still be reading the host staging.
  if (m_input_pending) DLR_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
  cudaStream_t s = m_stream.get();
  DLR_CUDA_CHECK(cudaEventRecord(m_ev_upload.get(), s));
  const TensorView in = view(ViewRef{m_plan.input_buffer, 0, m_plan.input_shape.c});
  for (int i = 0; i < n; ++i) {
    const ImageU8& img = images[i];
    const int64_t row = int64_t(img.width) * 3;
    uint8_t* host = static_cast<uint8_t*>(m_image_host.data()) + i * m_image_capacity;
    for (int y = 0; y < img.height; ++y) std::memcpy(host + y * row, img.data + y * img.row_stride, size_t(row));
    uint8_t* dev = static_cast<uint8_t*>(m_image_dev.data()) + i * m_image_capacity;
    DLR_CUDA_CHECK(cudaMemcpyAsync(dev, host, size_t(row * img.height), cudaMemcpyHostToDevice, s));
    cuda::DeviceImage di{dev, img.width, img.height, row, img.bgr};
    DLR_RETURN_IF_ERROR(cuda::preprocess(di, letterbox, in, i, s));
  }
  m_input_pending = true;
  return Status();
}

Status CudaEngine::set_input(const float* nchw, int n) {
  if (n < 1 || n > m_plan.options.batch)
    return invalid_argument("got " + std::to_string(n) + " inputs for a batch of " +
                            std::to_string(m_plan.options.batch));
  DLR_RETURN_IF_ERROR(clear_foreign_arena());
  cudaStream_t s = m_stream.get();
  DLR_CUDA_CHECK(cudaEventRecord(m_ev_upload.get(), s));
  const size_t bytes = size_t(n) * size_t(m_plan.input_shape.count()) * 4;
  DLR_CUDA_CHECK(cudaMemcpyAsync(m_input_f32.data(), nchw, bytes, cudaMemcpyHostToDevice, s));
  TensorView src = TensorView::packed(m_input_f32.data(), DType::kF32, Layout::kNCHW, n, m_plan.input_shape);
  TensorView dst = view(ViewRef{m_plan.input_buffer, 0, m_plan.input_shape.c});
  dst.n = n;
  DLR_RETURN_IF_ERROR(cuda::copy_channels(src, dst, s));
  m_input_pending = true;
  return Status();
}

Status CudaEngine::enqueue_step(const Step& st, cudaStream_t s) {
  // Views of the step's inputs and copies (on the stack for the usual few).
  constexpr size_t kInline = 16;
  using Copy = std::pair<TensorView, TensorView>;
  TensorView in_inline[kInline];
  Copy copies_inline[kInline];
  std::vector<TensorView> in_heap;
  std::vector<Copy> copies_heap;
  TensorView* in = in_inline;
  Copy* copies = copies_inline;
  if (st.inputs.size() > kInline) in = (in_heap.resize(st.inputs.size()), in_heap.data());
  if (st.copies.size() > kInline) copies = (copies_heap.resize(st.copies.size()), copies_heap.data());
  for (size_t i = 0; i < st.inputs.size(); ++i) in[i] = view(st.inputs[i]);
  for (size_t i = 0; i < st.copies.size(); ++i) copies[i] = Copy(view(st.copies[i].first), view(st.copies[i].second));
  cuda::OpCall call;
  call.layer = st.layer;
  call.params = &st.params;
  call.in = in;
  call.n_in = int(st.inputs.size());
  call.out = view(st.output);
  call.copies = copies;
  call.n_copies = int(st.copies.size());
  call.stream = s;
  if (st.weight >= 0) {
    const WeightBlob& wb = m_plan.weights[size_t(st.weight)];
    const char* blob = blob_ptr(st.weight);
    call.conv = m_convs[size_t(st.layer)].get();
    call.cudnn = m_cudnn.get();
    call.concat = m_concat_convs[size_t(st.layer)].get();
    call.cublas = m_cublas.get();
    call.weights = blob;
    call.bias = reinterpret_cast<const float*>(blob + wb.bias_offset);
    call.workspace = workspace_ptr();
    call.workspace_bytes = workspace_bytes();
  }
  return cuda::run_op(st.kind, call);
}

Status CudaEngine::enqueue_layer_kernels(const Step& st, cudaStream_t s) {
  if (st.no_op && st.copies.empty()) return Status();
  const Status status = enqueue_step(st, s);
  if (!status.ok())
    return Status(status.code(),
                  "layer " + std::to_string(st.layer) + " (" + layer_kind_name(st.kind) + "): " + status.message());
  return Status();
}

Status CudaEngine::enqueue_outputs(cudaStream_t s) {
  // One download per yolo layer into pinned memory (the only D2H of an inference).
  for (int y : m_plan.output_layers) {
    const TensorView v = view(m_plan.layer_out[size_t(y)]);
    DLR_ASSERT(v.contiguous() && v.dtype == DType::kF32);
    float* dst = static_cast<float*>(m_outputs.data()) + m_output_offsets[size_t(y)];
    DLR_CUDA_CHECK(cudaMemcpyAsync(dst, v.data, size_t(v.n) * size_t(v.n_stride) * 4, cudaMemcpyDeviceToHost, s));
  }
  return Status();
}

Expected<cuda::GraphExec> CudaEngine::capture(const std::function<Status()>& enqueue) {
  cudaStream_t s = m_stream.get();
  cudaGraph_t graph = nullptr;
  DLR_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  m_capturing = true;
  const Status st = enqueue();
  m_capturing = false;
  if (!st.ok() && m_copy_stream) {
    // The enqueue failed after forking the copy stream into the capture: join it back,
    // or the capture cannot end cleanly (cudaErrorStreamCaptureUnjoined).
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(m_copy_stream.get(), &cs) == cudaSuccess && cs == cudaStreamCaptureStatusActive) {
      DLR_CUDA_CHECK_LOG(cudaEventRecord(m_join.get(), m_copy_stream.get()));
      DLR_CUDA_CHECK_LOG(cudaStreamWaitEvent(s, m_join.get(), 0));
    }
  }
  const cudaError_t end = cudaStreamEndCapture(s, &graph);
  // A failed end of capture leaves its error as the thread's last CUDA error, which the
  // next launch check (cudaGetLastError) would report as its own: clear it here.
  if (end != cudaSuccess) (void)cudaGetLastError();
  if (!st.ok()) {
    if (graph) DLR_CUDA_CHECK_LOG(cudaGraphDestroy(graph));
    return st;
  }
  if (end != cudaSuccess) return cuda::cuda_status(end, "cudaStreamEndCapture", __FILE__, __LINE__);
  cudaGraphExec_t exec = nullptr;
  if (fault::hit(cuda::kFaultSite)) {  // a checked call (cuda_check.h): skipped and failed
    DLR_CUDA_CHECK_LOG(cudaGraphDestroy(graph));
    return cuda::injected(cuda::cuda_status(cudaErrorUnknown, "cudaGraphInstantiate", __FILE__, __LINE__));
  }
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  DLR_CUDA_CHECK_LOG(cudaGraphDestroy(graph));
  if (inst != cudaSuccess) return cuda::cuda_status(inst, "cudaGraphInstantiate", __FILE__, __LINE__);
  return cuda::GraphExec(exec);
}

// Both graphs or neither: after a failure the engine holds no graph (never one of an
// earlier placement) and runs eagerly.
Status CudaEngine::capture_graph() {
  m_graph = cuda::GraphExec();
  m_graph_body = cuda::GraphExec();
  if (!ring_ready()) return Status();  // captured once the runtime binds the ring (bind_ring)
  DLR_ASSIGN_OR_RETURN(cuda::GraphExec graph, capture([&] { return enqueue_network(m_options.profile_layers); }));
  cuda::GraphExec body;
  if (prefetch_units() > 0) {
    m_skip_prefetched = true;
    Expected<cuda::GraphExec> b = capture([&] { return enqueue_network(m_options.profile_layers); });
    m_skip_prefetched = false;
    DLR_RETURN_IF_ERROR(b.status());
    body = std::move(b).value();
  }
  m_graph = std::move(graph);
  m_graph_body = std::move(body);
  return Status();
}

int64_t CudaEngine::prefetch_issued_bytes() const {
  int64_t bytes = 0;
  for (int u = 0; u < m_prefetch_issued; ++u) bytes += m_stream_plan.units[size_t(u)].bytes;
  return bytes;
}

Status CudaEngine::prefetch(Engine* after, int64_t limit_bytes, Engine* behind) {
  const int all = prefetch_units();
  const int n = limit_bytes < 0 ? all : std::min(all, m_stream_plan.prefetch_units_within(limit_bytes));
  if (n <= m_prefetch_issued || m_weights_deferred || !m_host || !ring_ready()) return Status();
  cudaStream_t cs = m_stream.get();
  cudaStream_t ps = m_copy_stream.get();
  // After whatever the compute stream still holds (a failed run may have left work that
  // reads the pool); normally that is nothing, run() having synchronised.
  DLR_CUDA_CHECK(cudaEventRecord(m_fork.get(), cs));
  DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, m_fork.get(), 0));
  // After the launched engine's own copies: the copy engine is a FIFO that its inference
  // needs first (a prefetch in between would delay its input upload and its units).
  auto* other = dynamic_cast<CudaEngine*>(after);
  if (other && other != this && other->m_copies_end)
    DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, other->m_copies_end.get(), 0));
  // Shared ring: the launched engine may still read the ring bytes these copies fill;
  // each copy waits for the layer of it that reads them last (its release events).
  const bool shared = uses_shared_ring();
  const bool cross = shared && other && other != this && other->uses_shared_ring() &&
                     other->m_sring_base == m_sring_base;
  // ... and after what the launched engine's compute stream waited for before its
  // inference: a prefetch of a third model given up for it (drop_prefetch) may still be
  // copying into these bytes, and a resident model records no copies to wait for.
  if (shared && other && other != this) DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, other->m_ev_start.get(), 0));
  // Behind another engine's prefetch just enqueued (it runs first: its copies go first).
  auto* first_in_line = dynamic_cast<CudaEngine*>(behind);
  if (first_in_line && first_in_line != this && first_in_line->m_prefetch_issued > 0)
    DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, first_in_line->m_prefetch_done.get(), 0));
  int waited = -1;  // release events are in layer order: a later one covers the earlier ones
  // Runs of units contiguous on both sides go as one copy: the host cost of the enqueue
  // (inside another model's run() when a Runtime calls this) stays a few microseconds.
  // In the shared ring a run stays inside one prefetch chunk (the first layers wait
  // for their chunk only). A call with a limit may end inside a chunk: the call that
  // goes on from there records the chunk's event.
  for (int first = m_prefetch_issued; first < n;) {
    const TransferUnit& u0 = m_stream_plan.units[size_t(first)];
    const int chunk = shared ? prefetch_chunk(first) : 0;
    const int chunk_end = shared ? m_chunk_first[size_t(chunk) + 1] : n;
    int64_t bytes = u0.bytes;
    int next = first + 1;
    for (; next < std::min(chunk_end, n); ++next) {
      const TransferUnit& u = m_stream_plan.units[size_t(next)];
      if (u.host_offset != u0.host_offset + bytes || u.pool_offset != u0.pool_offset + bytes) break;
      bytes += u.bytes;
    }
    const int64_t pos = pool_pos(u0.pool_offset);
    if (cross) {
      const int release = other->release_index(pos, bytes);
      if (release > waited) {
        DLR_CUDA_CHECK(cudaStreamWaitEvent(ps, other->m_release_ev[size_t(release)].get(), 0));
        waited = release;
      }
    }
    DLR_CUDA_CHECK(cudaMemcpyAsync(pool_base() + pos, copy_source(u0), size_t(bytes), cudaMemcpyHostToDevice, ps));
    if (shared && next == chunk_end) DLR_CUDA_CHECK(cudaEventRecord(m_chunk_ev[size_t(chunk)].get(), ps));
    first = next;
  }
  DLR_CUDA_CHECK(cudaEventRecord(m_prefetch_done.get(), ps));
  m_prefetch_issued = n;
  return Status();
}

Status CudaEngine::run() {
  const auto t0 = std::chrono::steady_clock::now();
  cudaStream_t s = m_stream.get();
  if (!ring_ready()) return internal_error("run: the shared ring is not bound at the plan's size");
  // A Runtime gives up another model's prefetch into the shared ring here.
  if (m_start_hook) DLR_RETURN_IF_ERROR(m_start_hook(*this));
  // A prefetch begun in part (two models ahead) and not gone on with: the rest now, so
  // that the inference without the prefetched copies applies (nothing else runs).
  if (m_prefetch_issued > 0 && m_prefetch_issued < prefetch_units()) DLR_RETURN_IF_ERROR(prefetch());
  if (!m_input_pending) DLR_CUDA_CHECK(cudaEventRecord(m_ev_upload.get(), s));
  DLR_RETURN_IF_ERROR(clear_foreign_arena());
  DLR_CUDA_CHECK(cudaEventRecord(m_ev_start.get(), s));
  // Prefetched: the leading copies are (being) done on the copy stream; the rest follows.
  const bool prefetched = m_prefetch_issued > 0;
  m_prefetch_issued = 0;
  DLR_RETURN_IF_ERROR(note_prefetch_ready(prefetched));
  // Shared ring: the layers wait for their own prefetch chunk instead (enqueue_network).
  if (prefetched && !uses_shared_ring()) DLR_CUDA_CHECK(cudaStreamWaitEvent(s, m_prefetch_done.get(), 0));
  if (m_graph && (!prefetched || m_graph_body)) {
    DLR_CUDA_CHECK(cudaGraphLaunch(prefetched ? m_graph_body.get() : m_graph.get(), s));
  } else if (m_from_storage && m_pipeline) {
    DLR_RETURN_IF_ERROR(enqueue_network_storage(m_options.profile_layers));
  } else {
    m_skip_prefetched = prefetched;
    const Status st = enqueue_network(m_options.profile_layers);
    m_skip_prefetched = false;
    DLR_RETURN_IF_ERROR(st);
  }
  DLR_CUDA_CHECK(cudaEventRecord(m_ev_end.get(), s));
  // Launched: others may queue work behind it now (a Runtime prefetches other models).
  const Status launch_status = m_launch_hook ? m_launch_hook(*this) : Status();
  DLR_CUDA_CHECK(cudaStreamSynchronize(s));  // the final result download
  m_input_pending = false;
  float upload = 0, network = 0;
  DLR_CUDA_CHECK(cudaEventElapsedTime(&upload, m_ev_upload.get(), m_ev_start.get()));
  DLR_CUDA_CHECK(cudaEventElapsedTime(&network, m_ev_start.get(), m_ev_end.get()));
  m_run_timing.upload_ms = upload;
  m_run_timing.network_ms = network;
  m_run_timing.download_ms = 0;  // part of network_ms (the downloads are the last operations)
  m_run_timing.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (m_options.profile_layers) DLR_RETURN_IF_ERROR(read_profile(prefetched));
  if (!launch_status.ok()) return launch_status;
  // The next inference's leading units, while the host post-processes this one's outputs
  // (with a launch hook, the hook's owner decides when).
  return m_launch_hook ? Status() : prefetch();
}

Status CudaEngine::note_prefetch_ready(bool prefetched) {
  m_run_timing.prefetch_ready_bytes = -1;
  if (!prefetched) return Status();
  // True when the event has completed; cudaEventQuery never waits.
  auto landed = [](const cuda::Event& ev, bool* done) -> Status {
    const cudaError_t e = cudaEventQuery(ev.get());
    if (e == cudaErrorNotReady) {
      *done = false;
      return Status();
    }
    DLR_CUDA_CHECK(e);
    *done = true;
    return Status();
  };
  m_run_timing.prefetch_ready_bytes = 0;
  bool done = false;
  if (!uses_shared_ring() || m_chunk_ev.empty()) {
    DLR_RETURN_IF_ERROR(landed(m_prefetch_done, &done));
    m_run_timing.prefetch_ready_bytes = done ? m_stream_plan.prefetch_bytes() : 0;
    return Status();
  }
  for (size_t c = 0; c < m_chunk_ev.size(); ++c) {  // chunks land in order on the copy stream
    DLR_RETURN_IF_ERROR(landed(m_chunk_ev[c], &done));
    if (!done) break;
    for (int u = m_chunk_first[c]; u < m_chunk_first[c + 1]; ++u)
      m_run_timing.prefetch_ready_bytes += m_stream_plan.units[size_t(u)].bytes;
  }
  return Status();
}

const float* CudaEngine::output(int layer, int image) const {
  const int64_t off = m_output_offsets[size_t(layer)];
  DLR_ASSERT(off >= 0);
  return static_cast<const float*>(m_outputs.data()) + off + int64_t(image) * m_plan.steps[size_t(layer)].out.count();
}

Status CudaEngine::read_layer(int layer, int image, std::vector<float>* out) const {
  if (layer < 0 || layer >= int(m_plan.steps.size()) || image < 0 || image >= m_plan.options.batch)
    return invalid_argument("read_layer: layer or image out of range");
  const ViewRef ref = m_plan.layer_out[size_t(layer)];
  if (ref.buffer < 0 || m_plan.buffer(ref).last_step < int(m_plan.steps.size()))
    return invalid_argument("layer " + std::to_string(layer) +
                            " output is not kept after the run (plan with keep_all_outputs)");
  TensorView src = view(ref);
  src.data = static_cast<char*>(src.data) + int64_t(image) * src.n_stride * int64_t(dtype_size(src.dtype));
  src.n = 1;
  const Shape3 shape = src.shape();
  DLR_ASSIGN_OR_RETURN(DeviceBuffer tmp, DeviceBuffer::alloc(size_t(shape.count()) * 4));
  const TensorView dst = TensorView::packed(tmp.data(), DType::kF32, Layout::kNCHW, 1, shape);
  DLR_RETURN_IF_ERROR(cuda::copy_channels(src, dst, m_stream.get()));
  out->resize(size_t(shape.count()));
  DLR_CUDA_CHECK(cudaMemcpyAsync(out->data(), tmp.data(), tmp.bytes(), cudaMemcpyDeviceToHost, m_stream.get()));
  DLR_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
  return Status();
}

MemoryReport CudaEngine::memory() const {
  MemoryReport r;
  r.weights = int64_t(m_weights.bytes() + m_ring.bytes() + m_resident.bytes());
  r.activations = int64_t(m_arena.bytes());
  r.workspace = int64_t(m_workspace.bytes());
  if (m_options.shared_memory) {
    r.shared_activations = m_plan.arena_bytes;
    r.shared_workspace = int64_t(m_workspace_need);
  }
  r.other = int64_t(m_image_dev.bytes() + m_input_f32.bytes());
  r.host_weights = (m_host ? m_host->bytes() : m_pipeline ? m_reads.staging_bytes : 0) +
                   (m_staged_host ? m_staged_host->bytes() : 0);
  r.read_bytes = m_pipeline ? m_reads.read_bytes() : 0;
  return r;
}

Status cuda_memory_info(int device, int64_t* free_bytes, int64_t* total_bytes) {
  DLR_CUDA_CHECK(cudaSetDevice(device));
  size_t f = 0, t = 0;
  DLR_CUDA_CHECK(cudaMemGetInfo(&f, &t));
  *free_bytes = int64_t(f);
  *total_bytes = int64_t(t);
  return Status();
}

std::string cuda_device_description(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return "no CUDA device";
  int driver = 0;
  cudaDriverGetVersion(&driver);
  const size_t cudnn = cudnnGetVersion();
  return std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
         std::to_string(prop.multiProcessorCount) + " SMs, driver CUDA " + std::to_string(driver / 1000) + "." +
         std::to_string((driver % 1000) / 10) + ", cuDNN " + std::to_string(cudnn / 10000) + "." +
         std::to_string((cudnn % 10000) / 100) + "." + std::to_string(cudnn % 100);
}

Expected<std::unique_ptr<Engine>> create_cuda_engine(const CompiledModel& model, WeightSource& weights,
                                                     CudaContextInit* init) {
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<CudaEngine> e, CudaEngine::create(model, weights, init));
  return std::unique_ptr<Engine>(std::move(e));
}

Expected<Target> cuda_target(int device, const std::string& copy_profile) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    return Status(StatusCode::kCudaError, "--device cuda: no CUDA device is available");
  if (device < 0 || device >= count)
    return invalid_argument("CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                            " found)");
  cudaDeviceProp prop{};
  DLR_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  Target t;
  t.device = DeviceKind::kCUDA;
  t.name = cuda_device_description(device);
  t.integrated = prop.integrated != 0;
  t.memory_bytes = int64_t(prop.totalGlobalMem);
  DLR_ASSIGN_OR_RETURN(t.map_granularity, cuda::MirroredBuffer::granularity(device));
  if (copy_profile.empty()) return t;  // no copies planned (preload): no profile
  if (copy_profile != "auto") {
    DLR_ASSIGN_OR_RETURN(t.copy_profile, CopyProfile::resolve(copy_profile));
    t.copy_profile_source = "given (--copy-profile " + copy_profile + ")";
    DLR_LOG_INFO("copy profile {}: {}", t.copy_profile.name, t.copy_profile_source);
    return t;
  }
  // auto: this GPU's own profile (cache by UUID, else a brief probe, else the nearest built-in).
  GpuIdentity gpu;
  gpu.uuid = uuid_hex(prop.uuid.bytes);
  gpu.name = prop.name;
  gpu.integrated = prop.integrated != 0;
  gpu.major = prop.major;
  gpu.minor = prop.minor;
  const Expected<std::string> dir = user_cache_dir();
  const ProbeFunction probe = [device](double* seconds) -> Expected<CopyProfile> {
    // The context first (cudaFree(nullptr) creates it), so the probe's reported time is
    // the probe's own; an open creates the context anyway.
    DLR_CUDA_CHECK(cudaSetDevice(device));
    DLR_CUDA_CHECK(cudaFree(nullptr));
    probe::ProbeOptions o;
    o.device = device;
    o.brief = true;
    o.progress = false;
    o.max_bytes = int64_t(16) << 20;
    DLR_ASSIGN_OR_RETURN(probe::ProbeResult r, probe::run_probe(o));
    *seconds = r.seconds;
    return probe::profile_from_probe(r, "");
  };
  // One probe at a time in this process: sessions opened together on a new GPU would
  // disturb each other's measurements; the second one then reads the cache.
  static std::mutex probe_mutex;
  const std::lock_guard<std::mutex> lock(probe_mutex);
  ResolvedProfile r = resolve_auto_profile(gpu, dir.ok() ? *dir : std::string(), probe,
                                           dir.ok() ? std::string() : dir.status().message());
  t.copy_profile = std::move(r.profile);
  t.copy_profile_source = std::move(r.source);
  if (r.cached || r.probed)
    DLR_LOG_INFO("copy profile auto -> {}: {}", t.copy_profile.name, t.copy_profile_source);
  else
    DLR_LOG_WARN("copy profile auto -> {}: {}", t.copy_profile.name, t.copy_profile_source);
  return t;
}

}  // namespace dlr
