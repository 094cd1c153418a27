// CudaEngine's expansion of int8 weights (WeightFormat::kInt8) on a stream of its own.
// The int8 steps come in expansion groups (Step::dequant_group); group g's weights are
// expanded into their dequant buffers on the expand stream, in one launch, ordered by
// events only:
//  - after the start of group g - 1's first step (every step before it has finished:
//    the buffers' liveness in the plan, runtime/compile/dequant_buffers.h);
//  - after the copies of the group's weights into the pool (stream mode), or the
//    prefetch chunks holding them (shared ring);
// and each step's kernels wait for the launch that expanded its weights. So the next
// group is expanded while the current one runs, off the compute stream. A group whose
// weights land with several copies of the inference is expanded in a launch per copy,
// each waiting for its own (the simulator's expansion stage, SimOptions::expand_ms, runs
// the same batches); and in part where a step of it would wait otherwise (its later
// weights' copies not enqueued yet). Weights read by the kernels from mapped staging
// (zero copy) are expanded step by step, once the engine's thread has waited for their
// read.
#include <algorithm>
#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "runtime/compile/dequant_buffers.h"
#include "runtime/cuda/cuda_engine_impl.h"

namespace dlr {

Status CudaEngine::open_expansion() {
  ExpansionEntries e = expansion_entries(m_plan);
  m_dq_steps = std::move(e.steps);
  m_dq_index = std::move(e.entry);
  m_group_first = std::move(e.group_first);
  if (m_dq_steps.empty()) return Status();
  for (size_t g = 0; g + 1 < m_group_first.size(); ++g)
    if (m_group_first[g + 1] - m_group_first[g] > cuda::kMaxDequantJobs)
      return internal_error("expansion group " + std::to_string(g) + " of more than " +
                            std::to_string(cuda::kMaxDequantJobs) + " steps");
  DLR_ASSIGN_OR_RETURN(m_expand_stream, cuda::make_stream());
  DLR_ASSIGN_OR_RETURN(m_ex_fork, cuda::make_event(false));
  DLR_ASSIGN_OR_RETURN(m_ex_join, cuda::make_event(false));
  m_dq_start.clear();
  m_dq_done.clear();
  for (size_t g = 0; g + 1 < m_group_first.size(); ++g) {
    DLR_ASSIGN_OR_RETURN(cuda::Event start, cuda::make_event(false));
    m_dq_start.push_back(std::move(start));
  }
  for (size_t k = 0; k < m_dq_steps.size(); ++k) {
    DLR_ASSIGN_OR_RETURN(cuda::Event done, cuda::make_event(false));
    m_dq_done.push_back(std::move(done));
  }
  m_dq_last.assign(m_dq_steps.size(), -1);
  return Status();
}

cuda::DequantJob CudaEngine::dequant_job(const Step& st) const {
  const WeightBlob& wb = m_plan.weights[size_t(st.weight)];
  const char* blob = blob_ptr(st.weight);
  cuda::DequantJob j;
  j.src = reinterpret_cast<const int8_t*>(blob);
  j.scales = reinterpret_cast<const float*>(blob + wb.scale_offset);
  j.dst = arena_base() + m_plan.buffers[size_t(st.dequant)].offset;
  j.filters = wb.scale_elems;
  j.row = wb.weight_elems / wb.scale_elems;
  return j;
}

Status CudaEngine::expand_dequant(const Step& st, cudaStream_t s) {
  const cuda::DequantJob j = dequant_job(st);
  return cuda::dequantize_weights(j.src, j.scales, j.filters, j.row, m_plan.weights[size_t(st.weight)].dtype, j.dst,
                                  s);
}

Status CudaEngine::expand_entries(size_t k0, size_t k1, cudaStream_t s) {
  cuda::DequantJob jobs[cuda::kMaxDequantJobs];
  DType dtype = DType::kF32;
  for (size_t k = k0; k < k1; ++k) {
    const Step& st = m_plan.steps[size_t(m_dq_steps[k])];
    jobs[k - k0] = dequant_job(st);
    dtype = m_plan.weights[size_t(st.weight)].dtype;
  }
  return cuda::dequantize_weights_batch(jobs, int(k1 - k0), dtype, s);
}

Status CudaEngine::expand_begin(Expansion* x) {
  if (m_dq_steps.empty()) return Status();
  // The expand stream joins after everything already on the compute stream.
  DLR_CUDA_CHECK(cudaEventRecord(m_ex_fork.get(), m_stream.get()));
  DLR_CUDA_CHECK(cudaStreamWaitEvent(m_expand_stream.get(), m_ex_fork.get(), 0));
  return expand_issue(x);
}

Status CudaEngine::expand_issue(Expansion* x, int need) {
  cudaStream_t es = m_expand_stream.get();
  while (x->next < m_dq_steps.size()) {
    const size_t k0 = x->next;
    const int g = m_plan.steps[size_t(m_dq_steps[k0])].dequant_group;
    if (g > 0 && g - 1 > x->started_group) break;  // group g - 1 has not started
    // The entries of the group from k0 on whose weights are in place, up to the first
    // whose weights land with a later copy of this inference than entry k0's (the next
    // batch: a batch waits for one copy, not for the group's last).
    const size_t end = size_t(m_group_first[size_t(g) + 1]);
    size_t k = k0;
    int copy_unit = -1, chunk = -1, batch_unit = -1;
    bool split = false;
    for (; k < end; ++k) {
      const Step& st = m_plan.steps[size_t(m_dq_steps[k])];
      if (st.index > x->read_through) break;  // not in mapped staging yet
      const int unit = x->copies ? m_stream_plan.blob_last_unit[size_t(st.weight)] : -1;
      const int copied_in = unit >= x->skipped ? unit : -1;
      if (k == k0) batch_unit = copied_in;
      if (k > k0 && copied_in > batch_unit) {
        split = true;
        break;
      }
      if (unit >= x->skipped) {
        if (unit > x->copied) break;  // its copy is not enqueued yet
        copy_unit = std::max(copy_unit, unit);
      } else if (x->chunked && unit >= 0) {
        chunk = std::max(chunk, prefetch_chunk(unit));
      }
    }
    if (k == k0 || (k < end && !split && need < int(k0))) break;  // whole batches unless a step waits
    if (g > 0 && g - 1 > x->waited_start) {
      DLR_CUDA_CHECK(cudaStreamWaitEvent(es, m_dq_start[size_t(g) - 1].get(), 0));
      x->waited_start = g - 1;
    }
    if (copy_unit > x->waited_unit) {
      DLR_CUDA_CHECK(cudaStreamWaitEvent(es, m_copy_done[size_t(copy_unit)].get(), 0));
      x->waited_unit = copy_unit;
    }
    if (chunk > x->waited_chunk) {
      DLR_CUDA_CHECK(cudaStreamWaitEvent(es, m_chunk_ev[size_t(chunk)].get(), x->wait_flags));
      x->waited_chunk = chunk;
    }
    DLR_RETURN_IF_ERROR(expand_entries(k0, k, es));
    DLR_CUDA_CHECK(cudaEventRecord(m_dq_done[k - 1].get(), es));
    for (size_t e = k0; e < k; ++e) m_dq_last[e] = int(k - 1);
    x->next = k;
  }
  return Status();
}

Status CudaEngine::expand_before_kernels(const Step& st, Expansion* x) {
  const int k = m_dq_index.empty() ? -1 : m_dq_index[size_t(st.index)];
  if (k < 0) return Status();
  cudaStream_t cs = m_stream.get();
  const int g = st.dequant_group;
  if (m_group_first[size_t(g)] == k) {  // the group's first step: the next group may be expanded from here
    if (size_t(g) + 2 < m_group_first.size()) DLR_CUDA_CHECK(cudaEventRecord(m_dq_start[size_t(g)].get(), cs));
    x->started_group = g;
  }
  DLR_RETURN_IF_ERROR(expand_issue(x, k));
  if (x->next <= size_t(k))
    return internal_error("step " + std::to_string(st.index) + ": its int8 weights were not expanded");
  const int last = m_dq_last[size_t(k)];
  if (last > x->waited_done) {
    DLR_CUDA_CHECK(cudaStreamWaitEvent(cs, m_dq_done[size_t(last)].get(), 0));
    x->waited_done = last;
  }
  return Status();
}

Status CudaEngine::expand_end() {
  if (m_dq_steps.empty()) return Status();
  DLR_CUDA_CHECK(cudaEventRecord(m_ex_join.get(), m_expand_stream.get()));
  DLR_CUDA_CHECK(cudaStreamWaitEvent(m_stream.get(), m_ex_join.get(), 0));
  return Status();
}

}  // namespace dlr
