// The copy probe (dlprobe, and `--copy-profile auto` on first use): H2D bandwidth and host call time by copy size (pinned and
// pageable), and the depth of the copy queue behind a busy stream. CUDA builds only.
#ifdef DLR_HAVE_CUDA

#include "runtime/cuda/copy_probe.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "kernels/cuda/cuda_handles.h"
#include "kernels/cuda/spin.h"
#include "runtime/core/clock.h"

namespace dlr::probe {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

constexpr double kSpinMs = 300;          // how long the kernel holds the stream in a queue test
constexpr double kBriefSpinMs = 80;      // the same in a brief probe (a deep queue fills in a few ms)
constexpr double kBlockMs = 20;          // a call slower than this blocked the host
constexpr double kDeadlineMarginMs = 60; // stop enqueuing this long before the kernel ends
constexpr double kKernelEndSlackMs = 5;  // a blocked call returns no earlier than this before the kernel's end
constexpr int kQueueCap = 1500;          // copies per queue test at most
constexpr double kSpinCheckMs = 50;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  const double hi = v[mid];
  if (v.size() % 2) return hi;
  return (*std::max_element(v.begin(), v.begin() + mid) + hi) / 2;
}

uint8_t pattern(size_t i) { return uint8_t((i * 131u + (i >> 10)) & 0xffu); }

// Drains the stream when it goes out of scope, so no copy or kernel is still
// reading a buffer when the buffers declared before it are released.
struct StreamDrain {
  explicit StreamDrain(cudaStream_t s) : stream(s) {}
  cudaStream_t stream = nullptr;
  StreamDrain(const StreamDrain&) = delete;
  StreamDrain& operator=(const StreamDrain&) = delete;
  ~StreamDrain() {
    if (stream) DLR_CUDA_CHECK_LOG(cudaStreamSynchronize(stream));
  }
};

struct Bench {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void* dev = nullptr;
};

struct Timing {
  double gbps = 0, call_us = 0;
  int reps = 0;
};

// Times batches of `k` back-to-back copies of `bytes` from `src` between two
// events; repeats until `budget` bytes were moved (min_reps..max_reps batches).
// hold_ms > 0: each batch is enqueued behind a kernel spinning that long and the
// start event is recorded after it, so the events see the copies back to back
// (device time, not the host's issue rate); the calls then meet a busy stream, as
// they do when streaming weights.
Expected<Timing> time_copies(const Bench& b, const void* src, int64_t bytes, int k, double hold_ms, int min_reps,
                             int max_reps, int64_t budget) {
  const size_t n = size_t(bytes);
  DLR_CUDA_CHECK(cudaMemcpyAsync(b.dev, src, n, cudaMemcpyHostToDevice, b.stream));  // warm-up
  DLR_CUDA_CHECK(cudaStreamSynchronize(b.stream));
  std::vector<double> copy_ms, call_us;
  int64_t moved = 0;
  int longer_holds = 0;
  while (int(copy_ms.size()) < max_reps && (int(copy_ms.size()) < min_reps || moved < budget)) {
    const auto t_hold = Clock::now();
    if (hold_ms > 0) DLR_CUDA_CHECK(cuda::launch_spin(b.stream, static_cast<unsigned long long>(hold_ms * 1e6)));
    DLR_CUDA_CHECK(cudaEventRecord(b.start, b.stream));
    for (int i = 0; i < k; ++i) {
      const auto t = Clock::now();
      DLR_CUDA_CHECK(cudaMemcpyAsync(b.dev, src, n, cudaMemcpyHostToDevice, b.stream));
      call_us.push_back(ms_since(t) * 1e3);
    }
    const double enqueue_ms = ms_since(t_hold);
    DLR_CUDA_CHECK(cudaEventRecord(b.stop, b.stream));
    DLR_CUDA_CHECK(cudaEventSynchronize(b.stop));
    float ms = 0;
    DLR_CUDA_CHECK(cudaEventElapsedTime(&ms, b.start, b.stop));
    if (hold_ms > 0 && enqueue_ms > 0.8 * hold_ms && longer_holds < 3) {
      hold_ms = std::min(200.0, 2 * enqueue_ms);  // the hold ended before the batch was queued: discard, hold longer
      ++longer_holds;
      continue;
    }
    copy_ms.push_back(double(ms) / k);
    moved += bytes * k;
  }
  Timing t;
  const double med = median(copy_ms);
  t.gbps = med > 0 ? double(bytes) / (med * 1e6) : 0;
  t.call_us = median(call_us);
  t.reps = int(copy_ms.size());
  return t;
}

// Holds the stream with a kernel spinning `spin_ms`, then enqueues copies of `bytes`
// from `src` until one call blocks the host: it takes longer than kBlockMs and returns
// only when the kernel is over (a slow call that returns while the kernel still runs
// is a hiccup, not a full queue). Stops early at kQueueCap copies, or when the kernel's
// time runs short (inconclusive: a blocking call could no longer be told apart).
Expected<QueueResult> queue_test(const Bench& b, const void* src, int64_t bytes, bool pinned, double spin_ms) {
  QueueResult r;
  r.bytes = bytes;
  r.pinned = pinned;
  r.spin_ms = spin_ms;
  DLR_CUDA_CHECK(cudaStreamSynchronize(b.stream));
  const auto t0 = Clock::now();
  DLR_CUDA_CHECK(cuda::launch_spin(b.stream, static_cast<unsigned long long>(spin_ms * 1e6)));
  for (int i = 0; i < kQueueCap; ++i) {
    const auto t = Clock::now();
    if (std::chrono::duration<double, std::milli>(t - t0).count() > spin_ms - std::min(kDeadlineMarginMs, 0.4 * spin_ms)) {
      r.inconclusive = true;
      break;
    }
    DLR_CUDA_CHECK(cudaMemcpyAsync(b.dev, src, size_t(bytes), cudaMemcpyHostToDevice, b.stream));
    const double call_ms = ms_since(t);
    if (call_ms > kBlockMs && ms_since(t0) >= spin_ms - kKernelEndSlackMs) {
      r.blocked = true;
      r.block_ms = call_ms;
      break;
    }
    r.max_call_us = std::max(r.max_call_us, call_ms * 1e3);
    r.queued = i + 1;
  }
  DLR_CUDA_CHECK(cudaStreamSynchronize(b.stream));
  r.held_ms = ms_since(t0);
  return r;
}

// A queue test; when the kernel's time ran out first, once more with a 4x longer kernel.
Expected<QueueResult> queue_test_retry(const Bench& b, const void* src, int64_t bytes, bool pinned, double spin_ms,
                                       bool progress) {
  DLR_ASSIGN_OR_RETURN(QueueResult r, queue_test(b, src, bytes, pinned, spin_ms));
  if (!r.inconclusive) return r;
  if (progress)
    std::fprintf(stderr, "dlprobe: %s %lld-byte copies: the kernel ended before the queue filled; again with %.0f ms\n",
                 pinned ? "pinned" : "pageable", static_cast<long long>(bytes), 4 * spin_ms);
  return queue_test(b, src, bytes, pinned, 4 * spin_ms);
}

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

Expected<std::string> device_text(int device, bool* integrated) {
  cudaDeviceProp prop{};
  DLR_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int runtime = 0, driver = 0;
  DLR_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  DLR_CUDA_CHECK(cudaDriverGetVersion(&driver));
  *integrated = prop.integrated != 0;
  return std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
         std::to_string(prop.asyncEngineCount) + " copy engines" + (prop.integrated ? ", integrated" : "") +
         ", CUDA runtime " + version_text(runtime) + ", driver API " + version_text(driver);
}

// The sizes a probe measures: bandwidth (a) and the queue tests (c), pinned and
// pageable, each no larger than options.max_bytes.
struct ProbeSizes {
  std::vector<int64_t> sizes, queue_pinned, queue_pageable;
  int64_t max_bytes = 0;  // the largest of them: the buffers' size
};

Expected<ProbeSizes> probe_sizes(const ProbeOptions& o) {
  ProbeSizes p;
  p.sizes = {4 * kKiB, 16 * kKiB, 64 * kKiB, 256 * kKiB, 1 * kMiB, 2 * kMiB,
             4 * kMiB, 8 * kMiB,  16 * kMiB, 64 * kMiB,  256 * kMiB};
  p.queue_pinned = {4 * kKiB, 64 * kKiB, 1 * kMiB, 4 * kMiB, 32 * kMiB};
  p.queue_pageable = {64 * kKiB, 4 * kMiB};
  if (o.quick) {
    p.sizes = {4 * kKiB, 16 * kKiB, 64 * kKiB, 256 * kKiB, 1 * kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB};
    p.queue_pinned = {64 * kKiB, 4 * kMiB};
    p.queue_pageable = {4 * kMiB};
  }
  if (o.brief) {  // what the streaming planner reads: pinned sizes around its units, three queue classes
    p.sizes = {64 * kKiB, 256 * kKiB, 1 * kMiB, 4 * kMiB, 16 * kMiB};
    p.queue_pinned = {64 * kKiB, 1 * kMiB, 4 * kMiB};
    p.queue_pageable = {};
  }
  auto too_big = [&](int64_t s) { return s > o.max_bytes; };
  for (std::vector<int64_t>* v : {&p.sizes, &p.queue_pinned, &p.queue_pageable})
    v->erase(std::remove_if(v->begin(), v->end(), too_big), v->end());
  if (p.sizes.empty())
    return invalid_argument("max_bytes " + std::to_string(o.max_bytes) +
                            " leaves no copy size to measure (the smallest is 4 KiB)");
  p.max_bytes = p.sizes.back();
  for (int64_t s : p.queue_pinned) p.max_bytes = std::max(p.max_bytes, s);
  for (int64_t s : p.queue_pageable) p.max_bytes = std::max(p.max_bytes, s);
  return p;
}

// Selects options.device after checking that it exists.
Status select_device(const ProbeOptions& o) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return Status(StatusCode::kCudaError, std::string("no usable CUDA device: cudaGetDeviceCount failed: ") +
                                              cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  if (count == 0) return Status(StatusCode::kCudaError, "no CUDA device found");
  if (o.device < 0 || o.device >= count)
    return invalid_argument("CUDA device " + std::to_string(o.device) + ": this machine has " + std::to_string(count) +
                            " CUDA device(s) (0.." + std::to_string(count - 1) + ")");
  DLR_CUDA_CHECK(cudaSetDevice(o.device));
  return Status();
}

// The holding kernel must really hold the stream, or the queue tests mean nothing:
// a spin of spin_check_ms, timed by events (res->spin_check_ms).
Status check_spin(const Bench& b, double spin_check_ms, ProbeResult* res) {
  DLR_CUDA_CHECK(cudaEventRecord(b.start, b.stream));
  DLR_CUDA_CHECK(cuda::launch_spin(b.stream, static_cast<unsigned long long>(spin_check_ms * 1e6)));
  DLR_CUDA_CHECK(cudaEventRecord(b.stop, b.stream));
  DLR_CUDA_CHECK(cudaEventSynchronize(b.stop));
  float spin_ms = 0;
  DLR_CUDA_CHECK(cudaEventElapsedTime(&spin_ms, b.start, b.stop));
  res->spin_check_ms = spin_ms;
  if (spin_ms < 0.8 * spin_check_ms || spin_ms > 4 * spin_check_ms)
    return internal_error("the spin kernel ran " + std::to_string(spin_ms) + " ms instead of " +
                          std::to_string(int(spin_check_ms)) + " ms: cannot hold the stream for the queue tests");
  return Status();
}

// (a) + (b): bandwidth and host call time by size, from pinned `pin` and (not brief)
// pageable `pageable` memory.
Status measure_sizes(const Bench& b, const ProbeOptions& o, const std::vector<int64_t>& sizes, const uint8_t* pin,
                     const uint8_t* pageable, ProbeResult* res) {
  const int min_reps = o.quick || o.brief ? 3 : 5;
  const int max_reps = o.brief ? 5 : o.quick ? 10 : 20;
  const int64_t budget = o.brief ? 32 * kMiB : o.quick ? 128 * kMiB : 512 * kMiB;
  if (o.progress)
    std::fprintf(stderr, "dlprobe: %s\ndlprobe: H2D bandwidth at %zu sizes, %lld KiB..%lld MiB ...\n",
                 res->device.c_str(), sizes.size(), static_cast<long long>(sizes.front() / kKiB),
                 static_cast<long long>(sizes.back() / kMiB));
  for (int64_t s : sizes) {
    SizeResult sr;
    sr.bytes = s;
    // Batches of back-to-back copies up to 32 MiB: streaming issues its chunks back to
    // back, and one copy between two events also times the event gap.
    sr.copies_per_rep = int(std::clamp<int64_t>(32 * kMiB / s, 1, 64));
    // Pinned behind a short hold (enqueuing <= 64 calls takes well under 5 ms); pageable
    // without: its calls stage synchronously, so their host time is part of the copy.
    // A brief probe holds 1 ms (time_copies holds longer where enqueuing took longer).
    const double hold_ms = sr.copies_per_rep > 1 ? (o.brief ? 1.0 : 5.0) : 0.5;
    DLR_ASSIGN_OR_RETURN(const Timing tp,
                         time_copies(b, pin, s, sr.copies_per_rep, hold_ms, min_reps, max_reps, budget));
    Timing tg;  // a brief probe skips pageable copies: streaming copies from pinned memory only
    if (!o.brief) {
      DLR_ASSIGN_OR_RETURN(tg, time_copies(b, pageable, s, sr.copies_per_rep, 0, min_reps, max_reps, budget));
    }
    sr.reps = tp.reps;
    sr.pinned_gbps = tp.gbps;
    sr.pinned_call_us = tp.call_us;
    sr.pageable_gbps = tg.gbps;
    sr.pageable_call_us = tg.call_us;
    res->sizes.push_back(sr);
  }
  return Status();
}

// A second stream and the events that fork work onto it from the bench's stream and
// join it back (owned, and the stream drained before release, by run_probe).
struct SecondStream {
  cudaStream_t stream = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
};

// (a2): one stream against two streams copying at once, same bytes in total (not in a
// brief probe).
Status measure_concurrent(const Bench& b, const SecondStream& two, const ProbeOptions& o, const void* pin,
                          int64_t max_bytes, ProbeResult* res) {
  for (int64_t s : {1 * kMiB, 4 * kMiB, 16 * kMiB}) {
    if (2 * s > max_bytes || o.brief) continue;
    for (int streams : {1, 2}) {
      const int per_stream = int(std::clamp<int64_t>(64 * kMiB / s / streams, 1, 64));
      std::vector<double> gbps;
      for (int rep = 0; rep < (o.quick ? 3 : 7); ++rep) {
        DLR_CUDA_CHECK(cuda::launch_spin(b.stream, 5000000ull));  // 5 ms: every call is queued before the start
        DLR_CUDA_CHECK(cudaEventRecord(b.start, b.stream));
        DLR_CUDA_CHECK(cudaEventRecord(two.fork, b.stream));
        DLR_CUDA_CHECK(cudaStreamWaitEvent(two.stream, two.fork, 0));
        for (int i = 0; i < per_stream; ++i)
          for (int k = 0; k < streams; ++k)
            DLR_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(b.dev) + k * s, pin, size_t(s), cudaMemcpyHostToDevice,
                                           k == 0 ? b.stream : two.stream));
        DLR_CUDA_CHECK(cudaEventRecord(two.join, two.stream));
        DLR_CUDA_CHECK(cudaStreamWaitEvent(b.stream, two.join, 0));
        DLR_CUDA_CHECK(cudaEventRecord(b.stop, b.stream));
        DLR_CUDA_CHECK(cudaEventSynchronize(b.stop));
        float ms = 0;
        DLR_CUDA_CHECK(cudaEventElapsedTime(&ms, b.start, b.stop));
        gbps.push_back(ms > 0 ? double(s) * per_stream * streams / (double(ms) * 1e6) : 0);
      }
      res->concurrent.push_back({s, streams, median(gbps)});
    }
  }
  return Status();
}

// Enqueues k copies of `bytes` from `pin` to the bench's device buffer on `st`.
Status enqueue_copies(const Bench& b, const void* pin, int64_t bytes, int k, cudaStream_t st) {
  for (int i = 0; i < k; ++i) DLR_CUDA_CHECK(cudaMemcpyAsync(b.dev, pin, size_t(bytes), cudaMemcpyHostToDevice, st));
  return Status();
}

// k copies of `bytes` captured on the bench's stream as a graph, instantiated.
Expected<cuda::GraphExec> capture_copies(const Bench& b, const void* pin, int64_t bytes, int k) {
  cudaGraph_t g = nullptr;
  DLR_CUDA_CHECK(cudaStreamBeginCapture(b.stream, cudaStreamCaptureModeThreadLocal));
  const Status captured = enqueue_copies(b, pin, bytes, k, b.stream);
  const cudaError_t end = cudaStreamEndCapture(b.stream, &g);
  if (!captured.ok()) {
    if (g) cudaGraphDestroy(g);
    return captured;
  }
  DLR_CUDA_CHECK(end);
  cudaGraphExec_t exec_raw = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec_raw, g, 0);
  cudaGraphDestroy(g);
  DLR_CUDA_CHECK(inst);
  return cuda::GraphExec(exec_raw);
}

// (a3) at one size: k copies of `bytes` as streaming issues them, on the stream
// (mode 0), as a graph (1), and on the stream while `load` keeps memory busy on the
// second stream (2); each the median of several batches.
Expected<ModeResult> measure_modes_at(const Bench& b, cudaStream_t second, const ProbeOptions& o, const void* pin,
                                      int64_t bytes, void* load, int64_t load_bytes) {
  const int k = int(std::max<int64_t>(1, 64 * kMiB / bytes));
  DLR_ASSIGN_OR_RETURN(const cuda::GraphExec exec, capture_copies(b, pin, bytes, k));
  ModeResult m;
  m.bytes = bytes;
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<double> gbps;
    for (int rep = 0; rep < (o.quick ? 3 : 7); ++rep) {
      if (mode == 2) {  // keep memory busy on the second stream for the whole batch
        for (int i = 0; i < 16; ++i) DLR_CUDA_CHECK(cudaMemsetAsync(load, i, size_t(load_bytes), second));
      }
      DLR_CUDA_CHECK(cuda::launch_spin(b.stream, 2000000ull));  // 2 ms: the batch is queued before it starts
      DLR_CUDA_CHECK(cudaEventRecord(b.start, b.stream));
      if (mode == 1) {
        DLR_CUDA_CHECK(cudaGraphLaunch(exec.get(), b.stream));
      } else {
        DLR_RETURN_IF_ERROR(enqueue_copies(b, pin, bytes, k, b.stream));
      }
      DLR_CUDA_CHECK(cudaEventRecord(b.stop, b.stream));
      DLR_CUDA_CHECK(cudaEventSynchronize(b.stop));
      DLR_CUDA_CHECK(cudaStreamSynchronize(second));
      float ms = 0;
      DLR_CUDA_CHECK(cudaEventElapsedTime(&ms, b.start, b.stop));
      gbps.push_back(ms > 0 ? double(bytes) * k / (double(ms) * 1e6) : 0);
    }
    (mode == 0 ? m.stream_gbps : mode == 1 ? m.graph_gbps : m.loaded_gbps) = median(gbps);
  }
  return m;
}

// (a3): the same batches as streaming issues them: stream, graph, stream under load
// (not in a brief probe).
Status measure_modes(const Bench& b, cudaStream_t second, const ProbeOptions& o, const void* pin, int64_t max_bytes,
                     ProbeResult* res) {
  if (o.brief) return Status();
  const int64_t load_bytes = o.quick ? 256 * kMiB : 1024 * kMiB;
  DLR_ASSIGN_OR_RETURN(cuda::DeviceBuffer load, cuda::DeviceBuffer::alloc(size_t(load_bytes)));
  for (int64_t s : {4 * kMiB, 8 * kMiB, 16 * kMiB, 32 * kMiB}) {
    if (s > max_bytes) continue;
    DLR_ASSIGN_OR_RETURN(const ModeResult m, measure_modes_at(b, second, o, pin, s, load.data(), load_bytes));
    res->modes.push_back(m);
  }
  return Status();
}

// The copies must have moved the data: the first `bytes` of the device buffer read
// back equal the source pattern.
Status check_readback(const Bench& b, void* readback, size_t bytes) {
  DLR_CUDA_CHECK(cudaMemcpyAsync(readback, b.dev, bytes, cudaMemcpyDeviceToHost, b.stream));
  DLR_CUDA_CHECK(cudaStreamSynchronize(b.stream));
  const auto* back = static_cast<const uint8_t*>(readback);
  for (size_t i = 0; i < bytes; ++i)
    if (back[i] != pattern(i))
      return internal_error("device data differ from the copied source at byte " + std::to_string(i) +
                            ": the copies did not run");
  return Status();
}

// (c): queue depth behind a busy stream, pinned then pageable sizes.
Status measure_queues(const Bench& b, const ProbeSizes& p, const ProbeOptions& o, double spin_ms, const void* pin,
                      const void* pageable, ProbeResult* res) {
  if (o.progress)
    std::fprintf(stderr, "dlprobe: copy queue, %zu tests of about %.0f ms ...\n",
                 p.queue_pinned.size() + p.queue_pageable.size(), spin_ms);
  for (int64_t s : p.queue_pinned) {
    DLR_ASSIGN_OR_RETURN(QueueResult q, queue_test_retry(b, pin, s, true, spin_ms, o.progress));
    res->queue.push_back(q);
  }
  for (int64_t s : p.queue_pageable) {
    DLR_ASSIGN_OR_RETURN(QueueResult q, queue_test_retry(b, pageable, s, false, spin_ms, o.progress));
    res->queue.push_back(q);
  }
  return Status();
}

}  // namespace

Expected<ProbeResult> run_probe(const ProbeOptions& o) {
  const auto t_start = Clock::now();
  DLR_RETURN_IF_ERROR(select_device(o));
  ProbeResult res;
  DLR_ASSIGN_OR_RETURN(res.device, device_text(o.device, &res.integrated));
  const double queue_spin_ms = o.brief ? kBriefSpinMs : kSpinMs;
  const double spin_check_ms = o.brief ? 20 : kSpinCheckMs;
  res.spin_ms = queue_spin_ms;
  res.queue_cap = kQueueCap;
  res.block_threshold_ms = kBlockMs;
  DLR_ASSIGN_OR_RETURN(const ProbeSizes p, probe_sizes(o));
  const int64_t max_bytes = p.max_bytes;

  // Resources (released in reverse order; `drain` first).
  DLR_ASSIGN_OR_RETURN(cuda::Stream stream, cuda::make_stream());
  DLR_ASSIGN_OR_RETURN(cuda::Event ev_start, cuda::make_event(true));
  DLR_ASSIGN_OR_RETURN(cuda::Event ev_stop, cuda::make_event(true));
  DLR_ASSIGN_OR_RETURN(cuda::DeviceBuffer dev, cuda::DeviceBuffer::alloc(size_t(max_bytes)));
  DLR_ASSIGN_OR_RETURN(cuda::PinnedBuffer pinned, cuda::PinnedBuffer::alloc(size_t(max_bytes)));
  const size_t check_bytes = size_t(std::min<int64_t>(max_bytes, 1 * kMiB));
  DLR_ASSIGN_OR_RETURN(cuda::PinnedBuffer readback, cuda::PinnedBuffer::alloc(check_bytes));
  std::unique_ptr<uint8_t[]> pageable(new (std::nothrow) uint8_t[size_t(max_bytes)]);
  if (!pageable) return out_of_memory("cannot allocate " + std::to_string(max_bytes) + " bytes of pageable memory");
  const StreamDrain drain(stream.get());
  auto* pin = static_cast<uint8_t*>(pinned.data());
  for (size_t i = 0; i < size_t(max_bytes); ++i) pin[i] = pageable[i] = pattern(i);  // also faults the pages in
  const Bench b{stream.get(), ev_start.get(), ev_stop.get(), dev.data()};

  DLR_RETURN_IF_ERROR(check_spin(b, spin_check_ms, &res));
  DLR_RETURN_IF_ERROR(measure_sizes(b, o, p.sizes, pin, pageable.get(), &res));
  DLR_ASSIGN_OR_RETURN(cuda::Stream stream2, cuda::make_stream());
  const StreamDrain drain2(stream2.get());
  DLR_ASSIGN_OR_RETURN(cuda::Event ev_fork, cuda::make_event(false));
  DLR_ASSIGN_OR_RETURN(cuda::Event ev_join, cuda::make_event(false));
  const SecondStream two{stream2.get(), ev_fork.get(), ev_join.get()};
  DLR_RETURN_IF_ERROR(measure_concurrent(b, two, o, pin, max_bytes, &res));
  DLR_RETURN_IF_ERROR(measure_modes(b, stream2.get(), o, pin, max_bytes, &res));
  // Pinned and pageable sources hold the same pattern: whichever copy came last, the
  // device buffer must hold it.
  DLR_RETURN_IF_ERROR(check_readback(b, readback.data(), check_bytes));
  DLR_RETURN_IF_ERROR(measure_queues(b, p, o, queue_spin_ms, pin, pageable.get(), &res));
  DLR_CUDA_CHECK(cudaGetLastError());
  res.seconds = ms_since(t_start) / 1e3;
  return res;
}

Expected<CopyProfile> profile_from_probe(const ProbeResult& r, const std::string& name) {
  std::vector<BandwidthPoint> pinned, pageable;
  std::vector<double> calls;
  for (const SizeResult& s : r.sizes) {
    if (s.pinned_gbps > 0) pinned.push_back({s.bytes, s.pinned_gbps});
    if (s.pageable_gbps > 0) pageable.push_back({s.bytes, s.pageable_gbps});
    calls.push_back(s.pinned_call_us);
  }
  std::sort(calls.begin(), calls.end());
  const double call_us = calls.empty() ? 0 : calls[calls.size() / 2];
  std::vector<QueueSample> queue;
  for (const QueueResult& q : r.queue)
    if (q.pinned) queue.push_back({q.bytes, q.queued});
  return derive_copy_profile(name.empty() ? default_profile_name(r.device) : name, r.device, std::move(pinned),
                             std::move(pageable), call_us, std::move(queue));
}

std::string default_profile_name(const std::string& device) {
  std::string n = "probe-";
  bool dash = false;
  for (char c : device.substr(0, device.find(','))) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      n += char(std::tolower(static_cast<unsigned char>(c)));
      dash = false;
    } else if (!dash) {
      n += '-';
      dash = true;
    }
  }
  while (!n.empty() && n.back() == '-') n.pop_back();
  return n;
}

}  // namespace dlr::probe

#endif  // DLR_HAVE_CUDA
