// Typed session options: every value an application or a tool passes to
// Session::open, parsed from text at the boundary (the parse_* functions, whose
// errors are one line naming the option) and validated by validate_options()
// before any file or device work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/types.h"

namespace dlr {

enum class WeightMode : uint8_t { kPreload, kStream };
const char* weight_mode_name(WeightMode m);
bool parse_weight_mode(const std::string& s, WeightMode* out);


// Which weights stay resident within the weight budget in stream mode
// (runtime/streaming/residency.h): none (every blob streamed through a pool of the
// whole budget), largest-late (the largest blobs, later first), greedy (chosen by
// simulation from kernel times measured at open; the default).
enum class Residency : uint8_t { kNone, kLargestLate, kGreedy };
const char* residency_name(Residency r);
bool parse_residency(const std::string& s, Residency* out);  // "none", "largest-late", "greedy"

// Where streamed weights come from each inference ("--weights-from"): host (every
// streamed blob prepared once in a pinned host store) or storage (read from a prepared
// weight file with direct I/O into a bounded staging ring, runtime/streaming/read_plan.h).
enum class WeightsFrom : uint8_t { kHost, kStorage };
const char* weights_from_name(WeightsFrom w);
bool parse_weights_from(const std::string& s, WeightsFrom* out);  // "host", "storage"

// Device memory for streamed weights ("--weight-budget"). Resolved against the
// plan's weight bytes and the pool minimum by the compile step.
struct WeightBudget {
  // kAuto: the compile step picks the smallest budget predicted within
  // SessionOptions::max_slowdown of preload (or within latency_target_ms).
  enum class Kind : uint8_t { kMin, kAll, kFraction, kBytes, kAuto };
  Kind kind = Kind::kMin;
  double fraction = 0;  // kFraction: (0, 1]
  int64_t bytes = 0;    // kBytes: > 0

  static WeightBudget min() { return {}; }
  static WeightBudget all() { return {Kind::kAll, 0, 0}; }
  static WeightBudget percent(double p) { return {Kind::kFraction, p / 100.0, 0}; }
  static WeightBudget of_bytes(int64_t b) { return {Kind::kBytes, 0, b}; }
  static WeightBudget automatic() { return {Kind::kAuto, 0, 0}; }
  // "min", "all", "auto", "NN%" (0 < NN <= 100, decimals allowed), "N" + KB/MB/GB (1e3..),
  // KiB/MiB/GiB (2^10..) or B, or plain bytes; case-insensitive, blanks around ignored.
  static Expected<WeightBudget> parse(const std::string& text);
  // Bytes for a plan with `total` weight bytes whose smallest pool is `minimal`
  // (min and auto -> minimal: auto is chosen later, from measured kernel times; a
  // percentage is rounded down to whole bytes).
  int64_t resolve(int64_t total, int64_t minimal) const;
  std::string to_string() const;  // parse(to_string()) == *this
  bool operator==(const WeightBudget& o) const {
    return kind == o.kind && fraction == o.fraction && bytes == o.bytes;
  }
};

struct SessionOptions {
  DeviceKind device = DeviceKind::kCPU;
  Precision precision = Precision::kFP32;
  int batch = 1;           // images per inference (1..64)
  int width = 0;           // > 0: override the cfg's network width
  int height = 0;          // > 0: override the cfg's network height
  int letterbox = -1;      // -1: as the cfg's [net] letter_box; 0: stretch; 1: letterbox
  float thresh = 0.25f;    // detection threshold (strict >), [0, 1)
  float nms = 0.45f;       // NMS threshold, (0, 1]
  bool concat_in_place = true;    // route buffers without copies
  bool keep_all_outputs = false;  // debugging: every layer output readable after a run (more memory)
  // CPU threads (OpenMP team size) of this session's kernels, pre- and post-processing,
  // 0..1024. 0 (auto): the CPUs this process may run on (sched_getaffinity) divided by
  // the sessions inside open/detect at that moment, at least 1 (runtime/cpu/cpu_threads.h).
  int threads = 0;

  // ---- CUDA backend ----
  int cuda_device = 0;
  WeightMode mode = WeightMode::kPreload;  // preload: all weights resident; stream: demand layering
  WeightBudget weight_budget;              // stream mode: device pool for weights
  // stream mode: "auto" (measured on this GPU on first use and cached per GPU UUID;
  // runtime/streaming/profile_select.h), a dlprobe JSON file or a built-in profile name
  std::string copy_profile = "auto";
  int64_t chunk_bytes = 0;                 // stream mode: copy chunk size override (0 = the profile's)
  PoolLayout weight_pool = PoolLayout::kAuto;  // stream mode: ring (double-mapped) or slots; auto: ring if possible
  bool unit_search = true;                 // stream mode, ring, no chunk_bytes: transfer units chosen by simulation
                                           // from kernel times measured at open (unit_search.h); false: equal chunks
  double unit_search_min_gain = 0.01;      // keep a searched cut only when predicted this fraction faster, [0, 1)
  Residency residency = Residency::kGreedy;  // stream mode, ring: which blobs stay resident within the budget
  // Stream mode, ring, CUDA, weights from host: streamed blobs may be copied into bytes
  // of the activation arena that no activation holds then, instead of the ring, where
  // the simulator predicts the inference faster (runtime/streaming/arena_staging.h).
  bool arena_staging = true;
  double max_slowdown = 0.05;     // weight budget auto: predicted latency at most (1 + this) x preload's, [0, 10]
  double latency_target_ms = 0;   // weight budget auto: > 0 replaces max_slowdown with this predicted latency
  // Stream mode, weights from host: after each inference, copy the next one's leading
  // units (those that wait for no layer) at once, so that the next detect() finds them on
  // the device (prefetch across inferences; docs/streaming.md section 8). Plans are
  // chosen knowing it. On in a Runtime (runtime/multi/runtime.h); off by default alone,
  // where back-to-back inferences leave it little to hide.
  bool prefetch_next = false;
  // A Runtime's joint plan: host time the application spends before this model's
  // inference once the model before it has finished, without copies to the device
  // (decoding, CPU pre-processing), during which this model's prefetch goes on. The plan
  // adds it to the model's prefetch window, less the link time of the input's upload that
  // follows. An upload inside that time does not count: it queues behind the prefetch on
  // the copy engine (docs/streaming.md section 8). 0: none (the window ends when the
  // previous model's kernels do). [0, 1000] ms.
  double prefetch_lead_ms = 0;
  // A Runtime's joint plan with SplitObjective::kMaxSlowdown: this model's latency alone
  // (ms), as the application measured it (a session of its own, e.g. dlbench's "own
  // process ms"), the denominator of its slowdown. 0 (unknown): the plan's all-resident
  // prediction from the kernel times measured at open, which reads 3-4 % above a session
  // alone in its process on the H100, not equally for every model. [0, 1000000] ms.
  double alone_ms = 0;
  // ---- weights from storage (CPU, or CUDA stream mode) ----
  WeightsFrom weights_from = WeightsFrom::kHost;
  int64_t host_budget = 0;        // storage: host bytes for weights (0 = the minimum, 2 x the largest read): a GPU's
                                  // staging; on the CPU staging + blobs kept in memory (choose_host_resident)
  int zero_copy = -1;             // storage, CUDA: 1 reads land in mapped pinned memory the kernels read (two
                                  // stages, no device pool); 0 read -> copy -> compute; -1 auto (1 on integrated GPUs)
  int read_depth = 8;             // storage: reads in flight (1..64)
  int64_t read_block_bytes = int64_t(1) << 20;  // storage: bytes per read request (multiple of 4096, 4 KiB..64 MiB)
  std::string prepared_path;      // storage: the prepared weight file ("" = the user's cache, built on first use)
  ReaderKind reader = ReaderKind::kAuto;  // storage: io_uring or a pool of pread threads (auto: io_uring if available)
  bool prefetch_reads = true;     // storage, CPU backend: once an inference's reads are done, read the next
                                  // inference's first units while it still computes (same staging; not
                                  // stored in the compiled-model JSON; docs/streaming.md section 7)
  int layout = -1;                // -1: auto (NHWC for fp16/tf32, NCHW for fp32); 0: NCHW; 1: NHWC
  bool cuda_graph = true;         // capture the network once and replay it
  bool warm_up_at_open = false;   // CUDA: run the network once at open even where no CUDA graph is captured
                                  // (weights from storage, cuda_graph off; with a graph the warm-up is its
                                  // first replay, always): the first inference then finds its kernels
                                  // loaded. Off, that inference loads them itself while its reads run: on
                                  // the H100 the first result came 25 ms sooner that way (median of 6
                                  // paired processes; not stored in the compiled-model JSON;
                                  // docs/streaming.md "Startup measured again")
  bool cache_kernel_times = false;  // keep what is measured or chosen at open per GPU and model in the user's
                                    // cache directory and reuse it: stream mode's kernel times
                                    // (runtime/cache/kernel_times_cache.h) and, on CUDA, the cuDNN algorithm
                                    // choices of every mode (runtime/cache/conv_algo_cache.h); dlrun turns it on
  bool calibrate_copies = true;   // stream mode, CUDA, copies per inference: after the kernel times, time the
                                  // copies of a few streamed inferences, fit their cost and compile again with
                                  // the calibrated copy profile (runtime/streaming/copy_calibration.h; kept
                                  // with the kernel times when cache_kernel_times is on)
  bool profile_layers = false;    // per-layer CUDA event timing (event nodes inside the graph)
  bool find_algorithms = false;   // cudnnFind (timed) instead of heuristics
  int64_t workspace_limit = int64_t(256) << 20;  // cuDNN workspace per conv, bytes (>= 0)
  int max_image_width = 1920;     // host/device image staging sized at open (grows if exceeded)
  int max_image_height = 1080;
};

// "5%" or "5" (percent, decimals allowed, >= 0) -> 0.05; errors name `what`.
Expected<double> parse_percentage(const std::string& text, const std::string& what);

// Checks every option's range and that the options fit together (e.g. the CPU
// backend runs fp32 preload only). Touches no file and no device. One-line errors
// naming the option.
Status validate_options(const SessionOptions& options);

}  // namespace dlr
