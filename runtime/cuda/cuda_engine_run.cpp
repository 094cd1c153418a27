// CudaEngine's inference: the input (images or a tensor) on the compute stream, the
// enqueue of one layer and of the output downloads, and run() with its prefetch
// bookkeeping. The graphs run() replays are captured in cuda_engine_graph.cpp.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "runtime/cuda/cuda_engine_impl.h"

namespace dlr {

Status CudaEngine::clear_foreign_arena() {
  if (!m_arena_foreign) return Status();
  // Another model ran in the shared arena (SharedMemoryClient::mark_arena_foreign): on the compute
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

Status CudaEngine::enqueue_step(const Step& st, cudaStream_t s, bool expanded, const StepContext* ctx) {
  // Views of the step's inputs and copies (on the stack for the usual few).
  constexpr size_t kInline = 16;
  using Copy = std::pair<TensorView, TensorView>;
  TensorView in_inline[kInline];
  Copy copies_inline[kInline];
  std::vector<TensorView> in_heap;
  std::vector<Copy> copies_heap;
  TensorView* in = in_inline;
  Copy* copies = copies_inline;
  Copy packs[1];  // an input-channel slice packs one view (runtime/compile/slicing.cpp)
  if (st.inputs.size() > kInline) in = (in_heap.resize(st.inputs.size()), in_heap.data());
  if (st.copies.size() > kInline) copies = (copies_heap.resize(st.copies.size()), copies_heap.data());
  if (st.packs.size() > 1) return internal_error("a step with more than one pack");
  const bool x3 = st.weight >= 0 && m_x3_convs[size_t(st.index)] != nullptr;
  for (size_t i = 0; i < st.inputs.size(); ++i) in[i] = view(st.inputs[i]);
  if (x3) in[0] = view(x3_input(st));  // the slice in place: no pack
  for (size_t i = 0; i < st.copies.size(); ++i) copies[i] = Copy(view(st.copies[i].first), view(st.copies[i].second));
  for (size_t i = 0; i < st.packs.size() && !x3; ++i) packs[i] = Copy(view(st.packs[i].first), view(st.packs[i].second));
  cuda::OpCall call;
  call.layer = st.layer;
  call.params = &st.params;
  call.in = in;
  call.n_in = int(st.inputs.size());
  call.out = view(st.output);
  call.copies = copies;
  call.n_copies = int(st.copies.size());
  call.packs = packs;
  call.n_packs = x3 ? 0 : int(st.packs.size());
  call.accumulate = st.accumulate;
  TensorView residual;
  if (st.residual.buffer >= 0) {  // a shortcut folded into this conv (runtime/compile/fusion.h)
    residual = view(st.residual);
    call.residual = &residual;
    call.residual_act = st.residual_activation;
  }
  call.stream = s;
  if (st.weight >= 0) {
    const WeightBlob& wb = m_plan.weights[size_t(st.weight)];
    const char* blob = blob_ptr(st.weight);
    call.conv = m_convs[size_t(st.index)].get();
    call.fused = m_fused_convs[size_t(st.index)].get();
    call.x3 = m_x3_convs[size_t(st.index)].get();
    call.cudnn = m_cudnn.get();
    call.concat = m_concat_convs[size_t(st.index)].get();
    call.cublas = m_cublas.get();
    call.weights = blob;
    if (st.dequant >= 0) {  // int8: the op reads the weights expanded into the step's buffer
      if (!expanded) DLR_RETURN_IF_ERROR(expand_dequant(st, s));
      call.weights = arena_base() + m_plan.buffers[size_t(st.dequant)].offset;
    }
    call.bias = wb.bias_elems > 0 ? reinterpret_cast<const float*>(blob + wb.bias_offset) : nullptr;
    call.workspace = workspace_ptr();
    call.workspace_bytes = workspace_bytes();
    if (ctx != nullptr) {
      call.cudnn = ctx->cudnn;
      call.workspace = ctx->workspace;
      call.workspace_bytes = ctx->workspace_bytes;
    }
  }
  return cuda::run_op(st.kind, call);
}

Status CudaEngine::enqueue_layer_kernels(const Step& st, cudaStream_t s, bool expanded) {
  if (st.no_op && st.copies.empty()) return Status();
  const Status status = enqueue_step(st, s, expanded);
  if (!status.ok())
    return Status(status.code(),
                  "layer " + std::to_string(st.layer) + " (" + layer_kind_name(st.kind) + "): " + status.message());
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
  forget_whole_outputs();
  DLR_CUDA_CHECK(cudaEventRecord(m_ev_start.get(), s));
  // Prefetched: the leading copies are (being) done on the copy stream; the rest follows.
  // Tail: the previous run copied them, and it has finished (run() synchronised).
  const bool prefetched = m_prefetch_issued > 0;
  const bool tail = !prefetched && m_tail_landed;
  const int skipped = prefetched ? prefetch_units() : tail ? tail_units() : 0;
  m_prefetch_issued = 0;
  m_tail_landed = false;  // until this run has copied them again
  DLR_RETURN_IF_ERROR(note_prefetch_ready(prefetched));
  // Shared ring: the layers wait for their own prefetch chunk instead (enqueue_network).
  if (prefetched && !uses_shared_ring()) DLR_CUDA_CHECK(cudaStreamWaitEvent(s, m_prefetch_done.get(), 0));
  if (m_graph && m_pipeline) {
    DLR_RETURN_IF_ERROR(launch_storage_graph());
  } else if (m_graph && (skipped == 0 || m_graph_body)) {
    DLR_CUDA_CHECK(cudaGraphLaunch(skipped > 0 ? m_graph_body.get() : m_graph.get(), s));
  } else if (m_from_storage && m_pipeline) {
    DLR_RETURN_IF_ERROR(enqueue_network_storage(m_options.profile_layers));
  } else {
    m_skip_units = skipped;
    const Status st = enqueue_network(m_options.profile_layers);
    m_skip_units = 0;
    DLR_RETURN_IF_ERROR(st);
  }
  DLR_CUDA_CHECK(cudaEventRecord(m_ev_end.get(), s));
  // Launched: others may queue work behind it now (a Runtime prefetches other models).
  const Status launch_status = m_launch_hook ? m_launch_hook(*this) : Status();
  DLR_CUDA_CHECK(cudaStreamSynchronize(s));  // the final result download
  m_input_pending = false;
  DLR_RETURN_IF_ERROR(check_read_waits());
  float upload = 0, network = 0;
  DLR_CUDA_CHECK(cudaEventElapsedTime(&upload, m_ev_upload.get(), m_ev_start.get()));
  DLR_CUDA_CHECK(cudaEventElapsedTime(&network, m_ev_start.get(), m_ev_end.get()));
  m_run_timing.upload_ms = upload;
  m_run_timing.network_ms = network;
  m_run_timing.download_ms = 0;  // part of network_ms (the downloads are the last operations)
  m_run_timing.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (m_options.profile_layers) DLR_RETURN_IF_ERROR(read_profile(skipped));
  if (!launch_status.ok()) return launch_status;
  m_tail_landed = tail_units() > 0;  // this run's graph (or enqueue) ended with them
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

}  // namespace dlr
