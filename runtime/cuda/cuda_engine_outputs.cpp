// The output downloads of an inference (cuda_engine_impl.h, "cuda_engine_outputs.cpp"):
// each output layer's f32 result into the pinned m_outputs, the first ones under the
// kernels of the layers after them. The planner keeps every output buffer alive to the
// end of the inference (planner.cpp), so a download may start as soon as its layer ends.
#include "runtime/cuda/cuda_engine_impl.h"

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
  float* dst = static_cast<float*>(m_outputs.data()) + m_output_offsets[size_t(layer)];
  const size_t bytes = size_t(v.n) * size_t(v.n_stride) * 4;
  cudaStream_t d = s;
  if (step != m_out_last_step && m_out_stream) {  // under the later layers
    d = m_out_stream.get();
    DLR_CUDA_CHECK(cudaEventRecord(m_out_ready[size_t(k)].get(), s));
    DLR_CUDA_CHECK(cudaStreamWaitEvent(d, m_out_ready[size_t(k)].get(), 0));
    m_out_forked = true;
  }
  DLR_CUDA_CHECK(cudaMemcpyAsync(dst, v.data, bytes, cudaMemcpyDeviceToHost, d));
  return Status();
}

Status CudaEngine::join_outputs(cudaStream_t s) {
  if (!m_out_forked) return Status();
  m_out_forked = false;
  DLR_CUDA_CHECK(cudaEventRecord(m_out_join.get(), m_out_stream.get()));
  DLR_CUDA_CHECK(cudaStreamWaitEvent(s, m_out_join.get(), 0));
  return Status();
}

}  // namespace dlr
