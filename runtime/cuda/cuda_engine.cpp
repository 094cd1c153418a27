// CudaEngine's creation (the open's steps), its buffers' addresses and its memory
// report. The other parts of the class: cuda_engine_convs.cpp (the convolutions),
// cuda_engine_run.cpp (inputs and one inference), cuda_engine_graph.cpp (finalize(),
// the CUDA graphs), cuda_engine_sharing.cpp (the Runtime's facets: shared memory, shared
// ring, prefetch), weight_residency.cpp (weights), unit_tuning.cpp (open-time timing,
// replan()).
#include "runtime/compile/dequant_buffers.h"
#include "runtime/cuda/cuda_engine_impl.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_handles.h"
#include "kernels/cuda/cuda_ops.h"
#include "runtime/core/clock.h"
#include "runtime/core/log.h"
#include "runtime/cuda/context_init_impl.h"

namespace dlr {

using cuda::DeviceBuffer;
using cuda::PinnedBuffer;

CudaEngine::~CudaEngine() {
  m_pipeline.reset();  // its thread may wait on this engine's events
  if (m_stream) DLR_CUDA_CHECK_LOG(cudaStreamSynchronize(m_stream.get()));
  if (m_copy_stream) DLR_CUDA_CHECK_LOG(cudaStreamSynchronize(m_copy_stream.get()));
  if (m_expand_stream) DLR_CUDA_CHECK_LOG(cudaStreamSynchronize(m_expand_stream.get()));
  if (m_out_stream) DLR_CUDA_CHECK_LOG(cudaStreamSynchronize(m_out_stream.get()));
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

// The open, step by step; each step adds its time to m_open_timing.
Expected<std::unique_ptr<CudaEngine>> CudaEngine::create(const CompiledModel& model, WeightSource& weights,
                                                         CudaContextInit* init) {
  const EngineSettings& options = model.engine;
  if (options.device != DeviceKind::kCUDA || model.target.device != DeviceKind::kCUDA)
    return invalid_argument("the CUDA engine runs models compiled for a CUDA target");
  const auto t0 = Clock::now();
  DLR_RETURN_IF_ERROR(check_dequant_buffers(model.plan));
  DLR_RETURN_IF_ERROR(check_cuda_device(options.cuda_device));
  DLR_CUDA_CHECK(cudaSetDevice(options.cuda_device));
  std::unique_ptr<CudaEngine> e(new CudaEngine(model));
  DLR_RETURN_IF_ERROR(e->open_streams());
  DLR_RETURN_IF_ERROR(e->open_expansion());
  e->m_open_timing.device_ms = ms_since(t0);
  DLR_RETURN_IF_ERROR(e->open_cudnn(init));
  DLR_LOG_DEBUG("cuda engine: {} buffers, arena {} bytes", e->m_plan.buffers.size(), e->m_plan.arena_bytes);
  const auto t_weights = Clock::now();
  DLR_RETURN_IF_ERROR(e->setup_weights(weights));
  e->m_open_timing.weights_ms = ms_since(t_weights);
  DLR_LOG_DEBUG("cuda engine: weights ready ({})", model.streaming ? "stream" : "preload");
  DLR_RETURN_IF_ERROR(e->alloc_arena_and_input());
  DLR_RETURN_IF_ERROR(e->setup_convs(model));
  DLR_RETURN_IF_ERROR(e->alloc_workspace_and_outputs());
  DLR_RETURN_IF_ERROR(e->choose_fused_convs());  // also keeps the graph plans
  DLR_RETURN_IF_ERROR(e->choose_conv_algos());   // strict fp32: also keeps the measured choices
  const EngineOpenTiming& t = e->m_open_timing;
  DLR_LOG_DEBUG("cuda engine: convolutions ready, workspace {} bytes; open parts: device {:.1f} ms, cuDNN handle {:.1f} "
                "ms, weights {:.1f} ms, buffers {:.1f} ms, convolutions {:.1f} ms (cuBLAS handle {:.1f} ms)",
                e->m_workspace_need, t.device_ms, t.cudnn_handle_ms, t.weights_ms, t.buffers_ms, t.conv_setup_ms,
                t.cublas_handle_ms);
  return e;
}

Status CudaEngine::open_streams() {
  DLR_ASSIGN_OR_RETURN(m_stream, cuda::make_stream());
  for (cuda::Event* ev : {&m_ev_upload, &m_ev_start, &m_ev_end}) {
    DLR_ASSIGN_OR_RETURN(*ev, cuda::make_event(true));
  }
  return Status();
}

Status CudaEngine::open_cudnn(CudaContextInit* init) {
  const auto t0 = Clock::now();
  m_cudnn = cuda::take_cudnn(init, m_options.cuda_device);
  if (!m_cudnn) {
    DLR_ASSIGN_OR_RETURN(m_cudnn, cuda::make_cudnn());
    m_open_timing.cudnn_handle_ms = ms_since(t0);
  }
  return Status();
}

Status CudaEngine::alloc_arena_and_input() {
  const auto t0 = Clock::now();
  if (!m_options.shared_memory) {
    DLR_ASSIGN_OR_RETURN(m_arena, DeviceBuffer::alloc(size_t(m_plan.arena_bytes)));
    DLR_CUDA_CHECK(cudaMemset(m_arena.data(), 0, size_t(m_plan.arena_bytes)));
    m_arena_ptr = static_cast<char*>(m_arena.data());
  }
  DLR_ASSIGN_OR_RETURN(m_input_f32,
                       DeviceBuffer::alloc(size_t(m_plan.options.batch) * size_t(m_plan.input_shape.count()) * 4));
  m_open_timing.buffers_ms = ms_since(t0);
  return Status();
}

Status CudaEngine::alloc_workspace_and_outputs() {
  const auto t0 = Clock::now();
  if (!m_options.shared_memory) {
    DLR_ASSIGN_OR_RETURN(m_workspace, DeviceBuffer::alloc(m_workspace_need));
    m_workspace_ptr = m_workspace.data();
    m_workspace_bytes = m_workspace.bytes();
  }
  // Outputs: every yolo layer, f32, pinned for the final download.
  m_output_offsets.assign(m_plan.layer_out.size(), -1);
  int64_t out_floats = 0;
  for (int y : m_plan.output_layers) {
    m_output_offsets[size_t(y)] = out_floats;
    out_floats += int64_t(m_plan.options.batch) * m_plan.step_of(y).out.count();
  }
  DLR_ASSIGN_OR_RETURN(m_outputs, PinnedBuffer::alloc(size_t(out_floats) * 4));
  m_output_whole.assign(m_plan.layer_out.size(), 1);
  if (const size_t bytes = size_t(m_plan.select_bytes()); bytes > 0) {  // candidates picked on the device
    DLR_ASSIGN_OR_RETURN(m_select_dev, DeviceBuffer::alloc(bytes));
    DLR_ASSIGN_OR_RETURN(m_select_host, PinnedBuffer::alloc(bytes));
    std::memset(m_select_host.data(), 0, bytes);
  }
  DLR_RETURN_IF_ERROR(make_output_downloads());
  DLR_RETURN_IF_ERROR(reserve_images(m_options.max_image_width, m_options.max_image_height));
  m_timings.resize(m_plan.steps.size());
  m_open_timing.buffers_ms += ms_since(t0);
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
const float* CudaEngine::output(int layer, int image) const {
  const int64_t off = m_output_offsets[size_t(layer)];
  DLR_ASSERT(off >= 0);
  if (const Status st = download_output(layer); !st.ok()) {
    DLR_LOG_ERROR("{}", st.message());
    return nullptr;
  }
  return static_cast<const float*>(m_outputs.data()) + off + int64_t(image) * m_plan.step_of(layer).out.count();
}

Status CudaEngine::read_layer(int layer, int image, std::vector<float>* out) const {
  if (layer < 0 || layer >= int(m_plan.layer_out.size()) || image < 0 || image >= m_plan.options.batch)
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
  r.other = int64_t(m_image_dev.bytes() + m_input_f32.bytes() + m_select_dev.bytes());
  r.host_weights = (m_host ? m_host->bytes() : m_pipeline ? m_reads.staging_bytes : 0) +
                   (m_staged_host ? m_staged_host->bytes() : 0);
  r.read_bytes = m_pipeline ? m_reads.read_bytes() : 0;
  return r;
}

std::vector<HostRegion> CudaEngine::streamed_host_regions() const {
  std::vector<HostRegion> r;
  if (m_pipeline)  // weights from storage: reads land in the staging, copied or read by kernels from there
    r.push_back({m_reads.two_stage ? "mapped storage staging" : "storage staging", m_staging_host,
                 m_reads.staging_bytes});
  else if (m_host && m_streaming && !m_stream_plan.resident)
    r.push_back({"host store", m_host->data(), m_host->bytes()});
  if (m_staged_host) r.push_back({"arena-staged store", m_staged_host->data(), m_staged_host->bytes()});
  return r;
}

Expected<std::unique_ptr<Engine>> create_cuda_engine(const CompiledModel& model, WeightSource& weights,
                                                     CudaContextInit* init) {
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<CudaEngine> e, CudaEngine::create(model, weights, init));
  return std::unique_ptr<Engine>(std::move(e));
}

}  // namespace dlr
