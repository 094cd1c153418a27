// The copy probe: measurements of the current GPU's host-to-device copy engine
// (copy_probe.cpp, CUDA builds only), shared by dlprobe and by `--copy-profile auto`,
// which runs a brief probe the first time a GPU is used (runtime/cuda/cuda_target.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/streaming/copy_profile.h"

namespace dlr::probe {

struct ProbeOptions {
  int device = 0;
  bool quick = false;                // fewer sizes and repetitions, fewer queue tests
  // Only what the streaming planner reads: pinned bandwidth at 64 KiB..16 MiB (3-5
  // batches each), three 80 ms queue tests (64 KiB, 1 MiB, 4 MiB), no pageable,
  // concurrent or graph measurements: the queue tests and a few bandwidth batches. The
  // time is reported in ProbeResult::seconds (measured: docs/streaming.md section 4).
  bool brief = false;
  bool progress = true;              // progress lines on stderr
  int64_t max_bytes = 256 << 20;     // the largest copy measured
};

// H2D bandwidth and host call time at one copy size.
struct SizeResult {
  int64_t bytes = 0;
  int copies_per_rep = 1;   // small copies are timed in back-to-back batches
  int reps = 0;
  double pinned_gbps = 0;   // bytes / median device time per copy (CUDA events)
  double pinned_call_us = 0;    // median host time of one cudaMemcpyAsync call
  double pageable_gbps = 0;
  double pageable_call_us = 0;
};

// Copies of `bytes` enqueued behind a spinning kernel until one call blocks the host.
struct QueueResult {
  int64_t bytes = 0;
  bool pinned = true;
  int queued = 0;             // calls that returned at once before the first blocking one (or the cap)
  bool blocked = false;       // a call took longer than the block threshold
  bool inconclusive = false;  // the kernel's time ran out first: queued is a lower bound
  double block_ms = 0;        // host time of the blocking call
  double max_call_us = 0;     // the slowest call that returned at once
  double spin_ms = 0;         // how long the holding kernel spun
  double held_ms = 0;         // kernel launch to stream idle (>= spin_ms if the kernel held)
};

// Pinned H2D copies of `bytes` issued on `streams` streams at once (k per stream,
// queued behind a kernel): aggregate bandwidth. More than one stream may use more
// than one copy engine; whether that adds bandwidth is what this measures.
struct ConcurrentResult {
  int64_t bytes = 0;
  int streams = 1;
  double gbps = 0;  // all streams' bytes / (first copy start .. last copy end), median of reps
};

// Pinned H2D copies of `bytes`, back to back (64 MiB per batch), issued the ways
// streaming issues them: on a stream, captured in a CUDA graph (the engine's default),
// and on a stream while other work keeps device memory busy (a 1 GiB memset loop on
// a second stream, like the layers computing beside the copies).
struct ModeResult {
  int64_t bytes = 0;
  double stream_gbps = 0;
  double graph_gbps = 0;
  double loaded_gbps = 0;
};

struct ProbeResult {
  std::string device;         // name, compute capability, copy engines, CUDA versions
  bool integrated = false;    // an integrated GPU (Jetson): H2D copies are DRAM-to-DRAM
  std::vector<SizeResult> sizes;
  std::vector<QueueResult> queue;
  std::vector<ConcurrentResult> concurrent;
  std::vector<ModeResult> modes;
  double spin_ms = 0;         // how long the holding kernel spins (4x on a retry)
  double spin_check_ms = 0;   // measured duration of a 50 ms spin (sanity check)
  int queue_cap = 0;
  double block_threshold_ms = 0;
  double seconds = 0;         // wall time of the whole probe
};

// Runs every measurement (progress lines on stderr when options.progress). Every
// CUDA call is checked; on failure the stream is drained and everything is released
// before returning. Allocates up to max_bytes of pinned, pageable and device memory.
Expected<ProbeResult> run_probe(const ProbeOptions& options);

// The copy profile of a probe (derive_copy_profile's rules): pinned and pageable
// curves, the median pinned call time, the pinned queue tests. `name` empty:
// default_profile_name(result.device).
Expected<CopyProfile> profile_from_probe(const ProbeResult& result, const std::string& name);
// "probe-nvidia-h100-80gb-hbm3" from "NVIDIA H100 80GB HBM3, sm_90, ...".
std::string default_profile_name(const std::string& device);

}  // namespace dlr::probe
