// The output downloads of an inference (cuda_engine_impl.h, "cuda_engine_outputs.cpp"):
// each output layer's f32 result into the pinned m_outputs, or for a [yolo] layer the
// plan selects, its candidates picked by a kernel into m_select_host; the first ones under
// the kernels of the layers after them. The planner keeps every output buffer alive to the
// end of the inference (planner.cpp), so a download may start as soon as its layer ends.
#include "runtime/cuda/cuda_engine_impl.h"

#include <cstdint>

#include "kernels/cuda/cuda_ops.h"

namespace dlr {

Status CudaEngine::make_output_downloads() {
  m_out_index.assign(m_plan.steps.size(), -1);
  for (size_t k = 0; k < m_plan.output_layers.size(); ++k)
    m_out_index[size_t(m_plan.layer_step[size_t(m_plan.output_layers[k])])] = int(k);
  m_out_last_step = int(m_plan.steps.size()) - 1;
  bool early = false;
  for (int y : m_plan.output_layers) early = early || m_plan.layer_step[size_t(y)] != m_out_last_step;
  if (!early || m_out_stream) return Status();
  DLR_ASSIGN_OR_RETURN(m_out_stream, cuda::make_stream());
  DLR_ASSIGN_OR_RETURN(m_out_join, cuda::make_event(false));
  m_out_ready.clear();
  for (size_t k = 0; k < m_plan.output_layers.size(); ++k) {
    DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(false));
    m_out_ready.push_back(std::move(ev));
  }
  return Status();
}

Status CudaEngine::enqueue_output(int step, cudaStream_t s) {
  const int k = step < int(m_out_index.size()) ? m_out_index[size_t(step)] : -1;
  if (k < 0) return Status();
  const int layer = m_plan.output_layers[size_t(k)];
  const TensorView v = view(m_plan.layer_out[size_t(layer)]);
  DLR_ASSERT(v.contiguous() && v.dtype == DType::kF32);
  cudaStream_t d = s;
  if (step != m_out_last_step && m_out_stream) {  // under the later layers
    d = m_out_stream.get();
    DLR_CUDA_CHECK(cudaEventRecord(m_out_ready[size_t(k)].get(), s));
    DLR_CUDA_CHECK(cudaStreamWaitEvent(d, m_out_ready[size_t(k)].get(), 0));
    m_out_forked = true;
  }
  if (const OutputSelect* sel = m_plan.select_of(layer)) {  // its candidates only
    char* dev = static_cast<char*>(m_select_dev.data()) + sel->offset;
    DLR_RETURN_IF_ERROR(cuda::yolo_select(v, sel->anchors, sel->entries, m_plan.options.select_thresh, sel->capacity,
                                          reinterpret_cast<int32_t*>(dev),
                                          reinterpret_cast<int32_t*>(dev + sel->keys_offset),
                                          reinterpret_cast<float*>(dev + sel->rows_offset), d));
    DLR_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(m_select_host.data()) + sel->offset, dev, size_t(sel->bytes),
                                   cudaMemcpyDeviceToHost, d));
    return Status();
  }
  return copy_whole_output(layer, d);
}

Status CudaEngine::copy_whole_output(int layer, cudaStream_t s) const {
  const TensorView v = view(m_plan.layer_out[size_t(layer)]);
  float* dst = static_cast<float*>(m_outputs.data()) + m_output_offsets[size_t(layer)];
  DLR_CUDA_CHECK(cudaMemcpyAsync(dst, v.data, size_t(v.n) * size_t(v.n_stride) * 4, cudaMemcpyDeviceToHost, s));
  return Status();
}

OutputRows CudaEngine::output_rows(int layer, int image) const {
  const OutputSelect* sel = m_plan.select_of(layer);
  if (sel == nullptr || image < 0 || image >= m_plan.options.batch) return {};
  const char* block = static_cast<const char*>(m_select_host.data()) + sel->offset;
  OutputRows r;
  r.count = reinterpret_cast<const int32_t*>(block)[image];
  r.capacity = sel->capacity;
  r.entries = sel->entries;
  r.keys = reinterpret_cast<const int32_t*>(block + sel->keys_offset) + int64_t(image) * sel->capacity;
  r.rows = reinterpret_cast<const float*>(block + sel->rows_offset) + int64_t(image) * sel->capacity * sel->entries;
  return r;
}

Status CudaEngine::download_output(int layer) const {
  if (layer < 0 || size_t(layer) >= m_output_whole.size() || m_output_whole[size_t(layer)]) return Status();
  DLR_RETURN_IF_ERROR(copy_whole_output(layer, m_stream.get()));
  DLR_CUDA_CHECK(cudaStreamSynchronize(m_stream.get()));
  m_output_whole[size_t(layer)] = 1;
  return Status();
}

// After each run: a selected layer's whole output is not in m_outputs until asked for.
void CudaEngine::forget_whole_outputs() {
  for (const OutputSelect& sel : m_plan.selects) m_output_whole[size_t(sel.layer)] = 0;
}

Status CudaEngine::join_outputs(cudaStream_t s) {
  if (!m_out_forked) return Status();
  m_out_forked = false;
  DLR_CUDA_CHECK(cudaEventRecord(m_out_join.get(), m_out_stream.get()));
  DLR_CUDA_CHECK(cudaStreamWaitEvent(s, m_out_join.get(), 0));
  return Status();
}

}  // namespace dlr
