// CopyProfile: how a device's host-to-device copy engine behaves, measured by
// `dlprobe` or built in. The streaming planner sizes transfer units and bounds
// the copies in flight from it; the simulator predicts copy times from it.
// Plain C++ (no CUDA).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"

namespace dlr {

// Achieved bandwidth of one cudaMemcpyAsync of `bytes` bytes (device-side time, GB/s = 1e9 B/s).
struct BandwidthPoint {
  int64_t bytes = 0;
  double gbps = 0;
};

// Copies of size <= max_bytes: at most `depth` may be queued (issued, not finished)
// before the next cudaMemcpyAsync call blocks the host. depth 0: such a call blocks
// until the queue is empty. Classes are sorted by max_bytes; the last class also
// covers larger copies.
struct QueueClass {
  int64_t max_bytes = 0;
  int depth = 0;
};

// Throughput of O_DIRECT reads from storage: `block_bytes` per read, `queue_depth`
// reads in flight, sequential over a file (GB/s = 1e9 B/s, wall time).
struct StoragePoint {
  int64_t block_bytes = 0;
  int queue_depth = 1;
  double gbps = 0;
};

// How the disk that holds the weight file reads, measured by `dlprobe` (storage phase)
// or built in. The simulator models the read stage of streaming from it.
struct StorageProfile {
  std::string device;               // what was measured: file, filesystem, block device ("" for built-ins)
  std::string reader;               // the BlockReader kind measured best ("uring", "threads"; "" unknown)
  std::vector<StoragePoint> direct; // sorted by (queue_depth, block_bytes), each pair once
  double buffered_gbps = 0;         // buffered sequential reads of an uncached file, 1 MiB reads (0: unknown)
  double cached_gbps = 0;           // buffered re-reads of a file in the page cache (0: unknown)

  bool empty() const { return direct.empty(); }
  // O_DIRECT bandwidth at (block_bytes, queue_depth): for each measured queue depth,
  // linear in log(block_bytes) between its points, flat outside them; between the two
  // measured depths around queue_depth, linear in log(queue_depth); flat beyond the
  // smallest and largest depths. 0 when empty.
  double direct_gbps(int64_t block_bytes, int queue_depth) const;
  // Wall time of reading `bytes` sequentially with O_DIRECT in reads of `block_bytes`
  // (<= 0: one read of `bytes`), `queue_depth` in flight: the block is at most
  // `bytes`, the depth at most the number of reads (a 1 MiB read with 4 MiB blocks is
  // one 1 MiB read at depth 1); time = bytes / direct_gbps(block, depth). Steady-state
  // throughput: no per-request latency term beyond what the points measured. 0 for
  // bytes <= 0 or an empty profile.
  double read_ms(int64_t bytes, int64_t block_bytes, int queue_depth) const;
};

struct CopyProfile {
  std::string name;
  std::string device;                    // what it was measured on ("" for built-ins)
  std::vector<BandwidthPoint> pinned;    // sorted by bytes
  std::vector<BandwidthPoint> pageable;  // sorted by bytes (may be empty)
  double call_us = 2.0;                  // host time of one pinned cudaMemcpyAsync call
  std::vector<QueueClass> queue;
  int64_t chunk_bytes = 4 << 20;         // large blobs are copied in chunks of this size
  int64_t min_unit_bytes = 1 << 20;      // consecutive small blobs are grouped up to this size
  // The disk the weights are streamed from. Empty when the profile has none (a JSON
  // file written before dlprobe measured storage): storage_or_default() then gives
  // default_storage().
  StorageProfile storage;

  // Device time of one pinned copy: bandwidth interpolated linearly in log(bytes)
  // between the `pinned` points, flat outside them; time = bytes / bandwidth.
  // 0 for bytes <= 0 or an empty curve.
  double copy_ms(int64_t bytes) const;
  double peak_gbps() const;  // the largest pinned bandwidth
  int queue_depth(int64_t bytes) const;  // 0 when `queue` is empty (unknown: assume every call blocks)
  const StorageProfile& storage_or_default() const;
  // The storage assumed when a profile has none: the "discrete" built-in's conservative
  // NVMe figures (copy_profile.cpp).
  static const StorageProfile& default_storage();

  // JSON text (dlprobe's format); the nlohmann::json forms are in copy_profile_json.h,
  // which no public header includes. from_json_text validates like load().
  std::string to_json_text(int indent = -1) const;
  static Expected<CopyProfile> from_json_text(const std::string& text, const std::string& what);
  static Expected<CopyProfile> load(const std::string& path);  // a JSON file written by dlprobe
  Status save(const std::string& path) const;

  // Built-ins: "discrete" (a PCIe Gen4 GPU, conservative; a conservative NVMe disk),
  // "h100" (the figures of the H100 machine: 17/47/53/55 GB/s at 64K/1M/4M/16M+, ~1020
  // queued copies of any size; its disk: ~0.6-1 GB/s O_DIRECT at depth 1),
  // "jetson-xavier" (<=64 KB: 14 queued; <=1 MB: 2; <=2 MB: 1; larger: blocks; its
  // bandwidths are assumptions, see copy_profile.cpp; an eMMC-class disk, ~0.3 GB/s).
  static Expected<CopyProfile> builtin(const std::string& name);
  static std::vector<std::string> builtin_names();
  // "auto", a file path or a built-in name. A path is written as one: it contains '/'
  // or ends in ".json" (a profile file "p" in the working directory is "./p"); any
  // other text must be "auto" or a built-in name. check_name() applies that rule
  // without touching a file (validate_options calls it), resolve() then loads or
  // builds the profile. "auto" (this GPU's measured profile, profile_select.h) needs
  // the device: cuda_target() resolves it; resolve("auto") is an error saying so.
  static Status check_name(const std::string& file_or_name);
  static Expected<CopyProfile> resolve(const std::string& file_or_name);
};

// One queue measurement of dlprobe: with the stream held by a long kernel, `depth`
// pinned copies of `bytes` bytes were queued before the next call blocked the host
// (0: the first call blocked).
struct QueueSample {
  int64_t bytes = 0;
  int depth = 0;
};

// Builds (and validates) a profile from dlprobe's measurements. Rules:
//  - queue: samples sorted by bytes; consecutive sizes whose depths are equal or differ
//    by at most 1 % (noise of ~1000-deep queues) form one class (its depth: the
//    smallest; its max_bytes: the largest size), so a copy between two sampled sizes
//    gets the larger size's depth.
//  - the pinned curve is made non-decreasing (running max: dips are interference);
//  - chunk_bytes: the smallest pinned size reaching >= 95 % of the peak bandwidth,
//    at most 8 MiB; if that size is in a depth-0 class, the largest class bound below
//    it with depth > 0 (unchanged when there is none).
//  - min_unit_bytes: the smallest size reaching >= 80 % of the peak, at most chunk_bytes.
Expected<CopyProfile> derive_copy_profile(const std::string& name, const std::string& device,
                                          std::vector<BandwidthPoint> pinned, std::vector<BandwidthPoint> pageable,
                                          double call_us, std::vector<QueueSample> queue);

}  // namespace dlr
