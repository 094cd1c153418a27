// Open-time measurement and replanning (runtime/engine.h's open sequence): the
// kernel time of every layer on this device, which the compile step turns into
// transfer units chosen by simulation (runtime/streaming/unit_search.h;
// docs/streaming.md section 1, "Units chosen by simulation", and section 6, "Kernel
// times at open"), and the adoption of the recompiled model.
#include <algorithm>
#include <cstring>
#include <random>

#include "kernels/cuda/cuda_check.h"
#include "runtime/core/half.h"
#include "runtime/core/log.h"
#include "runtime/cuda/cuda_engine_impl.h"

namespace dlr {
namespace {

constexpr int kTimingReps = 5;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Per step, the medians of its interval and of its expansion's part (0 where it expands
// nothing: an empty list), less the timing events' cost taken equally from every interval
// (an expanding step holds two), scaled so that the steps sum to `total`, the replay
// without events (ms). Returns the sum of the medians (with the events).
double split_event_cost(const std::vector<std::vector<double>>& per_layer,
                        const std::vector<std::vector<double>>& per_expansion, double total, std::vector<double>* ms,
                        std::vector<double>* ex) {
  const size_t n = per_layer.size();
  ms->assign(n, 0.0);
  ex->assign(n, 0.0);
  double sum = 0;
  size_t events = n;
  for (size_t i = 0; i < n; ++i) {
    sum += (*ms)[i] = median(per_layer[i]);
    (*ex)[i] = median(per_expansion[i]);
    events += !per_expansion[i].empty();
  }
  const double per_event = events > 0 ? std::max(0.0, (sum - total) / double(events)) : 0.0;
  double left = 0;
  for (size_t i = 0; i < n; ++i) {
    const double e = per_expansion[i].empty() ? 0.0 : std::max(0.0, (*ex)[i] - per_event);
    const double k = std::max(0.0, (*ms)[i] - (*ex)[i] - per_event);
    (*ex)[i] = e;
    left += (*ms)[i] = e + k;
  }
  if (left > 0)
    for (size_t i = 0; i < n; ++i) (*ms)[i] *= total / left, (*ex)[i] *= total / left;
  return sum;
}

}  // namespace

Status CudaEngine::fill_pool_like_weights() {
  const size_t bytes = size_t(m_stream_plan.pool_bytes);
  constexpr size_t kPattern = size_t(256) << 10;
  std::vector<uint8_t> pattern(std::min(bytes, kPattern));
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<float> value(-0.1f, 0.1f);
  if (m_plan.options.weight_dtype == DType::kF16) {
    for (size_t i = 0; i + 2 <= pattern.size(); i += 2) {
      const uint16_t h = float_to_half(value(rng));
      std::memcpy(pattern.data() + i, &h, 2);
    }
  } else {
    for (size_t i = 0; i + 4 <= pattern.size(); i += 4) {
      const float f = value(rng);
      std::memcpy(pattern.data() + i, &f, 4);
    }
  }
  cudaStream_t s = m_stream.get();
  char* pool = pool_base();
  DLR_CUDA_CHECK(cudaMemcpyAsync(pool, pattern.data(), pattern.size(), cudaMemcpyHostToDevice, s));
  for (size_t have = pattern.size(); have < bytes;) {  // doubling copies of what is there
    const size_t n = std::min(have, bytes - have);
    DLR_CUDA_CHECK(cudaMemcpyAsync(pool + have, pool, n, cudaMemcpyDeviceToDevice, s));
    have += n;
  }
  DLR_CUDA_CHECK(cudaStreamSynchronize(s));  // `pattern` is pageable host memory about to go
  return Status();
}

Expected<std::vector<double>> CudaEngine::measure_layer_ms(std::vector<double>* expand_ms) {
  std::vector<double> result;
  std::vector<double>* ms = &result;
  // The layers run back to back on the compute stream without copies or waits,
  // reading the pool as filled below (weight-like values: kernel time depends on them,
  // not on which weights they are), int8 weights expanded in line before their step's
  // kernels. Three graphs: one with a timing event after every layer and after every
  // expansion (where the time goes), one without (the total: each event node costs the
  // graph a few microseconds) and one with the output downloads after the layers (the
  // fixed cost of an inference). The events' cost is taken off every interval equally,
  // then the times are scaled to the plain total. Medians of kTimingReps replays.
  cudaStream_t s = m_stream.get();
  const size_t n = m_plan.steps.size();
  // A pool that streams holds nothing between inferences. It is filled with weight-like
  // values (a fixed pattern, uniform in +-0.1, in the weights' dtype; bias bytes read as
  // f32 are finite too), not left as it is or cleared: kernel time depends on the values
  // (docs/streaming.md section 6, "Kernel times at open"). A resident pool
  // (StreamPlan::resident) holds every weight, copied once at open, and is read as it is:
  // overwriting it would leave a model whose replan keeps the placement with wrong weights.
  pool_overwritten();  // by the measurement
  if (m_streaming && !m_stream_plan.resident && m_stream_plan.pool_bytes > 0)
    DLR_RETURN_IF_ERROR(fill_pool_like_weights());
  std::vector<cuda::Event> stamps, expanded;  // after each layer; after each step's expansion (int8)
  size_t expansions = 0;
  for (size_t i = 0; i <= n; ++i) {
    DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(true));
    stamps.push_back(std::move(ev));
    if (i == n) break;
    DLR_ASSIGN_OR_RETURN(cuda::Event ex, cuda::make_event(true));
    expanded.push_back(std::move(ex));
    expansions += m_plan.steps[i].dequant >= 0;
  }
  auto stamp = [&](const cuda::Event& ev) -> Status {
    DLR_CUDA_CHECK(cudaEventRecordWithFlags(ev.get(), s, cudaEventRecordExternal));
    return Status();
  };
  auto layers = [&](bool stamped, bool downloads = false) -> Status {
    if (stamped) DLR_RETURN_IF_ERROR(stamp(stamps[0]));
    for (size_t i = 0; i < n; ++i) {
      const Step& st = m_plan.steps[i];
      if (st.dequant >= 0) {
        DLR_RETURN_IF_ERROR(expand_dequant(st, s));
        if (stamped) DLR_RETURN_IF_ERROR(stamp(expanded[i]));
      }
      DLR_RETURN_IF_ERROR(enqueue_layer_kernels(st, s, true));
      if (stamped) DLR_RETURN_IF_ERROR(stamp(stamps[i + 1]));
      if (downloads) DLR_RETURN_IF_ERROR(enqueue_output(st.index, s));
    }
    return downloads ? join_outputs(s) : Status();
  };
  DLR_ASSIGN_OR_RETURN(cuda::GraphExec with_stamps, capture([&] { return layers(true); }));
  DLR_ASSIGN_OR_RETURN(cuda::GraphExec plain, capture([&] { return layers(false); }));

  // The fixed cost of an inference around its kernels: the graph's launch on an idle
  // GPU and the output downloads (cuda_engine_outputs.cpp), as run() enqueues them.
  DLR_ASSIGN_OR_RETURN(cuda::GraphExec whole, capture([&] { return layers(false, true); }));
  std::vector<std::vector<double>> per_layer(n), per_expansion(n);
  std::vector<double> idle, idle_whole;
  for (int rep = -1; rep < kTimingReps; ++rep) {  // rep -1: warm-up
    DLR_CUDA_CHECK(cudaGraphLaunch(with_stamps.get(), s));
    double i0 = 0, w = 0;
    DLR_RETURN_IF_ERROR(time_replay(plain, &i0));
    DLR_RETURN_IF_ERROR(time_replay(whole, &w));
    if (rep < 0) continue;
    idle.push_back(i0);
    idle_whole.push_back(w);
    for (size_t i = 0; i < n; ++i) {
      float d = 0, x = 0;
      DLR_CUDA_CHECK(cudaEventElapsedTime(&d, stamps[i].get(), stamps[i + 1].get()));
      per_layer[i].push_back(d);
      if (m_plan.steps[i].dequant < 0) continue;
      DLR_CUDA_CHECK(cudaEventElapsedTime(&x, stamps[i].get(), expanded[i].get()));
      per_expansion[i].push_back(x);
    }
  }
  // The layer times sum to the plain replay on an idle GPU (what an inference sees); the
  // downloads after the last kernel, and what launching whole costs beyond that, go
  // to the last layer, the one place in the simulator's model after every kernel.
  const double total = median(idle);
  std::vector<double> ex;
  const double sum = split_event_cost(per_layer, per_expansion, total, ms, &ex);
  const double fixed = std::max(0.0, median(idle_whole) - total);
  if (n > 0) ms->back() += fixed;
  double expanding = 0;
  for (double e : ex) expanding += e;
  DLR_LOG_DEBUG("kernel times measured at open: {:.3f} ms in all on an idle GPU ({:.3f} ms with timing events), "
                "{:.3f} ms of it expanding int8 weights in {} steps, + {:.3f} ms of output downloads and launch (added "
                "to the last layer)",
                total, sum, expanding, expansions, fixed);
  if (expand_ms != nullptr) {
    expand_ms->clear();
    if (expansions > 0) *expand_ms = std::move(ex);
  }
  return result;
}

Expected<std::vector<CopyTiming>> CudaEngine::measure_copy_timings(int runs) {
  pool_overwritten();  // the timed inferences copy everything
  if (!m_streaming || m_stream_plan.resident || m_from_storage || m_weights_deferred || m_stream_plan.units.empty())
    return unsupported("copy timings: this plan copies no weights from host memory during an inference");
  if (runs < 1) return invalid_argument("copy timings: runs must be >= 1");
  // The timing events of a profiled run (profile_layers), made here when the session did
  // not ask for them; replan() makes the copy events again as the options say.
  if (m_ev_layer_start.size() != m_plan.steps.size()) {
    for (auto* v : {&m_ev_layer_start, &m_ev_layer_ready, &m_ev_layer_end}) {
      v->clear();
      for (size_t i = 0; i < m_plan.steps.size(); ++i) {
        DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(true));
        v->push_back(std::move(ev));
      }
    }
  }
  if (m_ev_copy_start.size() != m_stream_plan.units.size()) {
    for (auto* v : {&m_ev_copy_start, &m_ev_copy_end}) {
      v->clear();
      for (size_t u = 0; u < m_stream_plan.units.size(); ++u) {
        DLR_ASSIGN_OR_RETURN(cuda::Event ev, cuda::make_event(true));
        v->push_back(std::move(ev));
      }
    }
  }
  // Replayed as a graph with the events inside, like the timed runs: the copies are
  // issued and overlap the kernels as in an inference. One untimed replay first.
  DLR_ASSIGN_OR_RETURN(cuda::GraphExec graph, capture([&] { return enqueue_network(true); }));
  cudaStream_t s = m_stream.get();
  std::vector<CopyTiming> all;
  for (int r = -1; r < runs; ++r) {
    DLR_CUDA_CHECK(cudaEventRecord(m_ev_start.get(), s));
    DLR_CUDA_CHECK(cudaGraphLaunch(graph.get(), s));
    DLR_CUDA_CHECK(cudaStreamSynchronize(s));
    if (r < 0) continue;
    DLR_RETURN_IF_ERROR(read_profile(0));
    all.insert(all.end(), m_copy_timings.begin(), m_copy_timings.end());
  }
  m_copy_timings.clear();
  return all;
}

Status CudaEngine::replan(const CompiledModel& model, WeightSource& weights) {
  // Same network and options: the execution plan is unchanged. The weight placement
  // may differ: only the cut of the byte stream (units, waits, order), or also the
  // resident set and the pool (residency chosen from the measured times), which is
  // then set up again (allocation at open).
  if (model.plan.steps.size() != m_plan.steps.size() || model.streaming != m_streaming)
    return invalid_argument("replan: the model differs from the open one in more than its weight placement");
  if (!m_streaming) return Status();
  // A prefetch may still be copying into the pool this replaces.
  if (m_copy_stream) DLR_CUDA_CHECK(cudaStreamSynchronize(m_copy_stream.get()));
  pool_overwritten();  // a prefetch or tail copy was made for the old plan's units
  const StreamPlan& s = model.stream;
  // Same placement: every blob at the same device (and host) offset, so what the pool and
  // the resident region hold stays valid. A resident plan (its pool copied once at open)
  // also needs the same units, which are where the open copied each blob to.
  auto same_units = [](const std::vector<TransferUnit>& a, const std::vector<TransferUnit>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].host_offset != b[i].host_offset || a[i].bytes != b[i].bytes || a[i].pool_offset != b[i].pool_offset)
        return false;
    return true;
  };
  const bool same_placement = !m_weights_deferred && m_options.shared_ring == model.engine.shared_ring &&
                              s.pool_bytes == m_stream_plan.pool_bytes &&
                              s.layout == m_stream_plan.layout && s.resident == m_stream_plan.resident &&
                              s.blob_resident == m_stream_plan.blob_resident &&
                              s.blob_pool_offset == m_stream_plan.blob_pool_offset &&
                              s.blob_host_offset == m_stream_plan.blob_host_offset &&
                              (!s.resident || same_units(s.units, m_stream_plan.units));
  m_stream_plan = s;
  m_reads = model.reads;
  m_options.shared_ring = model.engine.shared_ring;  // where the pool lives is part of the placement
  // A Runtime binds its shared ring after every replan (Runtime::apply_ring, settle_placement):
  // the binding kept from an earlier placement may point into a ring freed since (a ring
  // resized while this engine kept its blobs resident), and ring_ready() would take it at
  // an equal size. Dropped here: no graph is captured against it until bind_ring().
  m_sring_base = nullptr;
  m_sring_bytes = 0;
  m_sring_start = 0;
  m_profile_name = model.target.copy_profile.name;
  if (same_placement) {
    DLR_RETURN_IF_ERROR(make_stream_events());
    if (m_from_storage && !m_stream_plan.resident) DLR_RETURN_IF_ERROR(setup_storage_reads(weights));
  } else {
    m_weights_deferred = false;
    DLR_RETURN_IF_ERROR(setup_stream_weights(weights));
  }
  if (m_graph) DLR_RETURN_IF_ERROR(capture_graph());
  return Status();
}

}  // namespace dlr
