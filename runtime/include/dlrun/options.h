// dlrun public API: everything Session::open takes besides the two files.
// Every field has a working default; open() checks every value and names the
// field in its error. docs/library.md lists them with the tools' equivalents.
//
// Adding a field: one line here and its row in runtime/options_table.h (the mapping to
// the runtime, set_option() and the Python keyword come from the row).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dlrun/result.h"

namespace dlrun {

enum class Device : uint8_t { kCPU, kCUDA };
enum class Precision : uint8_t { kFP32, kTF32, kFP16 };  // CPU: fp32 only
// Preload: every weight resident on the device. Stream: demand layering, weights
// streamed layer by layer into a pool within `weight_budget` (CUDA only).
enum class Mode : uint8_t { kPreload, kStream };
enum class PoolLayout : uint8_t { kAuto, kSlots, kRing };
enum class Residency : uint8_t { kNone, kLargestLate, kGreedy };
// How a conv larger than slot_bytes is cut: filters (slices of its output channels),
// channels (of its input channels) or auto: on CUDA with weights from host memory the
// faster of the two for each layer, both timed at the first open of the model on the GPU
// (and kept with its kernel times when cache_kernel_times is on; channels from storage);
// filters on the CPU.
enum class SliceBy : uint8_t { kAuto, kFilters, kChannels };
// How conv weights are stored and streamed: fp (in the run's precision) or int8 (one
// scale per output channel, for filters of 128 weights or more, the smaller ones kept fp;
// expanded to the run's precision as each conv runs: about half the bytes of fp16 to copy,
// read from storage and keep; docs/streaming.md, "Compressed weights").
enum class WeightFormat : uint8_t { kFp, kInt8 };
// CUDA: what a convolution's epilogue takes in: off (conv, a bias + activation pass, a
// shortcut pass), epilogue (a shortcut right after a conv added in the conv's bias +
// activation pass), cudnn (also conv + bias + activation + that shortcut as one cuDNN
// graph where cuDNN runs it) or auto (cudnn for each conv where it measures faster at
// open, else epilogue). Detections are Darknet's in every mode (docs/architecture.md, "Fused steps").
enum class Fusion : uint8_t { kAuto, kOff, kEpilogue, kCudnn };
// CUDA: where the [yolo] heads' candidates (objectness > thresh) are picked: gpu (on the
// device, only their rows downloaded), cpu (every output downloaded whole and scanned on
// the host) or auto (gpu for batches of more than one image, where it is faster, else cpu).
// The detections are the same either way (docs/library.md, "Options").
enum class Decode : uint8_t { kAuto, kCpu, kGpu };
// The priority of the runtime's threads (and, through apply_thread_options(), of the
// caller's): normal (nothing changed), high (nice -10), realtime (SCHED_FIFO 10). Raising
// needs CAP_SYS_NICE or RLIMIT_NICE / RLIMIT_RTPRIO; where not permitted, one warning
// line and the threads keep their own (docs/library.md, "Thread priority and CPU placement").
enum class ThreadPriority : uint8_t { kNormal, kHigh, kRealtime };

struct Options {
  // ---- general ----
  Device device = Device::kCPU;
  Precision precision = Precision::kFP32;
  int batch = 1;             // images per inference, 1..64
  int width = 0;             // > 0: network input width instead of the cfg's (the cfg parser checks it)
  int height = 0;            // > 0: network input height instead of the cfg's
  int letterbox = -1;        // -1: as the cfg's [net] letter_box; 0: stretch; 1: letterbox
  float thresh = 0.25f;      // detection threshold (strict >), [0, 1)
  float nms = 0.45f;         // NMS IoU threshold, (0, 1]
  // CPU threads for this session's kernels, pre/post-processing and weight preparation at open, 0..1024.
  // 0 (auto): the CPUs the process may use, divided among the sessions inside
  // open()/detect() at the same moment (docs/library.md, "CPU threads").
  int threads = 0;
  int max_image_width = 1920;  // image staging sized at open (grows if a larger image comes)
  int max_image_height = 1080;
  // The runtime's threads (storage reader, pread workers); the caller's through apply_thread_options().
  ThreadPriority thread_priority = ThreadPriority::kNormal;
  std::string cpu_affinity;  // their CPUs, "2,3" or "4-7" ("": unchanged); one the process may not use fails open()

  // ---- CUDA ----
  int cuda_device = 0;
  Mode mode = Mode::kPreload;
  // Stream mode: device memory for weights: "min", "all", "auto", "NN%", "NNMiB",
  // "NNMB", "NNGiB", ... or plain bytes (dlrun --weight-budget).
  std::string weight_budget = "min";
  // Stream mode: the copy engine's profile: "auto" (this GPU's, probed once and cached per GPU),
  // a dlprobe JSON file or a built-in profile name.
  std::string copy_profile = "auto";
  int64_t chunk_bytes = 0;            // stream mode: copy chunk override (0: the profile's)
  // > 0: every layer whose weights exceed this many bytes runs as slices that fit (cut
  // as slice_by says), so the weight pool can be smaller than the largest layer; 0: none,
  // unless the pool of whole layers does not fit (a session's weight_budget size takes the
  // largest slot that fits; a Runtime opens the model again with 1 MiB slots).
  int64_t slot_bytes = 0;
  SliceBy slice_by = SliceBy::kAuto;
  WeightFormat weight_format = WeightFormat::kFp;
  Fusion fusion = Fusion::kAuto;  // CUDA only
  PoolLayout weight_pool = PoolLayout::kAuto;
  bool unit_search = true;            // transfer units chosen by simulation (false: equal chunks)
  Residency residency = Residency::kGreedy;
  // Stream mode, ring: streamed weights may be copied into activation bytes idle at that
  // point of the network instead of the ring, where the plan predicts it faster.
  bool arena_staging = true;
  // With slices (slot_bytes, or a budget below two of the largest layer): a layer above
  // the slot whose whole weights find room in idle activation bytes before it runs is
  // copied there whole and runs unsliced.
  bool stage_whole = true;
  double max_slowdown = 0.05;         // weight_budget "auto": at most this fraction slower than preload
  double latency_target_ms = 0;       // weight_budget "auto": > 0 replaces max_slowdown
  // -1 auto; 0 NCHW; 1 NHWC. auto: NHWC for fp16 and tf32; strict fp32 NHWC where the first
  // open times 3xTF32 tensor-core convs against the FMA ones (cache_kernel_times on, preload,
  // find_algorithms off, not a Runtime's model, a GPU with TF32 tensor cores), else NCHW.
  // CUDA fp32 on NHWC with cache_kernel_times: 3xTF32 convs where measured faster (within
  // the strict tolerance; more workspace: docs/benchmarks.md, "Strict fp32").
  int layout = -1;
  bool cuda_graph = true;             // capture the network once and replay it
  Decode decode = Decode::kAuto;      // where [yolo] candidates are picked (see Decode)
  bool profile_layers = false;        // per-layer CUDA event timing for Report::layers
  bool find_algorithms = false;       // cudnnFind instead of heuristics
  int64_t workspace_limit = int64_t(256) << 20;  // cuDNN workspace per convolution, bytes
  bool cache_kernel_times = false;    // reuse what is kept per GPU and model in the cache: stream mode's kernel
                                      // times and (CUDA) the cuDNN algorithm choices
  bool calibrate_copies = true;       // stream mode: fit the copy cost in a few inferences at open and plan with it
  // On a Runtime: host time (ms, 0..1000) the application spends before this model's
  // inference once the model before it has finished, without copies to the GPU (decoding,
  // CPU pre-processing); the joint plan lets this model's prefetch count it. 0: conservative.
  double prefetch_lead_ms = 0;
  // On a Runtime splitting by the largest slowdown: this model's latency alone (ms, as
  // measured in a session of its own), the denominator of its slowdown. 0: the runtime's
  // own estimate (its all-resident prediction).
  double alone_ms = 0;

  // ---- weights from storage (CPU, or CUDA stream mode; docs/streaming.md section 7) ----
  bool weights_from_storage = false;  // read the weights each inference from a prepared weight file
  int64_t host_budget = 0;            // host bytes for weights (0: the minimum, 2 x the largest read): on a GPU the
                                      // staging for reads (below that minimum the copy units shrink so that two
                                      // reads fit); on the CPU also blobs kept in memory, largest first
  int zero_copy = -1;                 // CUDA: 1 reads land in memory the kernels read; 0 read->copy->kernel; -1 auto
  int read_depth = 8;                 // reads in flight, 1..64
  int64_t read_block_bytes = int64_t(1) << 20;  // bytes per read request, a multiple of 4096
  std::string reader = "auto";        // "auto" (io_uring if available), "uring" or "threads"
  std::string prepared_path;          // the prepared weight file ("": the user's cache, made on first use)
  int64_t cache_max_bytes = -1;       // the user's cache of prepared files: bound in bytes, least recently used
                                      // evicted first; -1: $DLR_CACHE_MAX_BYTES, else min(4 GiB, 1/10 of its
                                      // file system); 0: no bound
};

// Sets the field `name` of `options` from its text form, as the tools and the Python
// keywords give it: enums by name ("cuda", "fp16", "stream", "ring", "greedy", "realtime"), integers
// and numbers in decimal, booleans as true/false (on/off, yes/no, 1/0), weight_budget as
// "min", "auto", "50%" or a size, reader as "auto", "uring" or "threads". An unknown name
// or a value of the wrong form is an error naming the field and what was expected; the
// ranges are checked when a session opens.
Status set_option(Options& options, const std::string& name, const std::string& value);

// The names set_option() knows (every field of Options), in a fixed order.
const std::vector<std::string>& option_names();
// Whether the field `name` is a text (std::string: weight_budget, copy_profile, ...), which
// a binding must not fill from a number: a budget of 64 is no size (64MiB? 64 bytes?).
// False for an unknown name.
bool option_is_text(const std::string& name);

}  // namespace dlrun
