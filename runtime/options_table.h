// Every session option, one row each (docs/architecture.md, "Adding an option"). From
// this table come SessionOptions' members (runtime/options.h), their range checks
// (validate_options), the options record of a compiled model's JSON
// (runtime/compile/compile_json.cpp), the mapping from the public dlrun::Options and the
// public dlrun::set_option() by name, and with it the Python keywords
// (runtime/public/options_map.cpp). Nothing else lists the options.
//
//   X(name, Type, default, scope, valid, message)
//
// name     the member of SessionOptions, the key of the options record, the option's
//          name in dlrun::set_option() and the Python keyword
// Type     its C++ type; typed values (enums, WeightBudget) read and write their text
//          form (runtime/options_text.h)
// default  the value SessionOptions{} holds
// scope    PUBLIC: also a field of dlrun::Options with the same name and meaning;
//          PUBLIC_STORAGE: public as `bool weights_from_storage`;
//          INTERNAL: set by the tools, the runtime of several models or tests
// valid    an expression over `v`, the value, that must hold (`true`: any value)
// message  the one-line error when it does not (an expression; may use `v`)
//
// Checks that relate several options (the CPU runs fp32 preload only, storage options
// need weights from storage, ...) follow the table in validate_options().
#pragma once

#define DLR_SESSION_OPTIONS(X)                                                                                        \
  /* ---- general ---- */                                                                                              \
  X(device, DeviceKind, DeviceKind::kCPU, PUBLIC, true, "")                                                           \
  X(precision, Precision, Precision::kFP32, PUBLIC, true, "")                                                         \
  /* images per inference */                                                                                          \
  X(batch, int, 1, PUBLIC, v >= 1 && v <= 64, "batch " + std::to_string(v) + " is out of range (1..64)")              \
  /* > 0: the network's input width / height instead of the cfg's (multiples of 32; the cfg parser checks) */         \
  X(width, int, 0, PUBLIC, v >= 0, "network width/height overrides must be > 0 (0 keeps the cfg's)")                  \
  X(height, int, 0, PUBLIC, v >= 0, "network width/height overrides must be > 0 (0 keeps the cfg's)")                 \
  /* -1: as the cfg's [net] letter_box; 0: stretch; 1: letterbox */                                                   \
  X(letterbox, int, -1, PUBLIC, v >= -1 && v <= 1, "letterbox must be -1 (cfg), 0 or 1")                              \
  /* detection threshold (strict >) and NMS IoU threshold */                                                          \
  X(thresh, float, 0.25f, PUBLIC, v >= 0.0f && v < 1.0f, "thresh must be in [0, 1)")                                  \
  X(nms, float, 0.45f, PUBLIC, v > 0.0f && v <= 1.0f, "nms must be in (0, 1]")                                        \
  /* route buffers without copies; debugging: every layer output readable after a run (more memory) */               \
  X(concat_in_place, bool, true, INTERNAL, true, "")                                                                  \
  X(keep_all_outputs, bool, false, INTERNAL, true, "")                                                                \
  /* CPU threads (OpenMP team) of the session's kernels, pre- and post-processing; 0 (auto): the CPUs this process   \
     may run on divided by the sessions inside open/detect at that moment, at least 1 (runtime/cpu/cpu_threads.h).   \
     Weight preparation at open runs on this many threads too (auto: every CPU the process may run on) */            \
  X(threads, int, 0, PUBLIC, v >= 0 && v <= 1024,                                                                     \
    "threads " + std::to_string(v) + " is out of range (0 = auto, 1..1024)")                                          \
  /* image staging sized at open (grows when a larger image comes) */                                                 \
  X(max_image_width, int, 1920, PUBLIC, v >= 1, "image staging size must be at least 1x1")                            \
  X(max_image_height, int, 1080, PUBLIC, v >= 1, "image staging size must be at least 1x1")                           \
  /* the priority of the runtime's threads (the storage reader thread, the pread workers) and, through             \
     apply_thread_options() (runtime/session.h), of the caller's inference thread: normal (nothing changed), high     \
     (nice -10) or realtime (SCHED_FIFO 10); where not permitted one warning line, and the threads keep their own     \
     (runtime/core/thread_placement.h) */                                                                            \
  X(thread_priority, ThreadPriority, ThreadPriority::kNormal, PUBLIC, true, "")                                      \
  /* the CPUs of the same threads, "2,3" or "4-7" (empty: unchanged); a CPU the process may not use fails open */   \
  X(cpu_affinity, CpuList, CpuList{}, PUBLIC, true, "")                                                              \
  /* ---- CUDA ---- */                                                                                                \
  X(cuda_device, int, 0, PUBLIC, true, "")                                                                            \
  /* preload: every weight resident; stream: demand layering */                                                       \
  X(mode, WeightMode, WeightMode::kPreload, PUBLIC, true, "")                                                         \
  /* stream mode: device memory for weights (resident blobs and the pool) */                                          \
  X(weight_budget, WeightBudget, WeightBudget::min(), PUBLIC, weight_budget_valid(v), weight_budget_error(v))         \
  /* stream mode: the copy engine's profile: "auto" (this GPU's, measured on first use and cached per GPU UUID;      \
     runtime/streaming/profile_select.h), a dlprobe JSON file or a built-in name (the name's syntax checked here) */  \
  X(copy_profile, std::string, "auto", PUBLIC, copy_profile_name_valid(v), copy_profile_name_error(v))                \
  /* stream mode: copy chunk size (0: the profile's) */                                                               \
  X(chunk_bytes, int64_t, 0, PUBLIC, v >= 0, "chunk size must be >= 0 bytes (0: the copy profile's)")                 \
  /* > 0: a conv whose weight blob is larger runs as slices, each blob at most this many bytes, so the weight pool    \
     can be smaller than the largest layer (runtime/compile/slicing.h); 0: no slices, unless the pool of whole        \
     layers does not fit (stream mode on CUDA: a session's budget takes the largest slot that fits                    \
     (compile/slot_choice.h), a Runtime's joint plan kRuntimeSlotBytes) */                                            \
  X(slot_bytes, int64_t, 0, PUBLIC, v >= 0, "slot size must be >= 0 bytes (0: no layer is sliced)")                   \
  /* how a sliced conv is cut: auto (channels on CUDA, filters on the CPU), filters (output channels) or channels    \
     (input channels, partial sums added into the output) */                                                          \
  X(slice_by, SliceBy, SliceBy::kAuto, PUBLIC, true, "")                                                              \
  /* how conv weights are stored and streamed: fp (the run's precision) or int8 (one f32 scale per output channel,   \
     filters of kInt8MinFilterWeights or more, runtime/compile/blob_layout.h; expanded to the run's precision as     \
     each conv runs: about half the bytes of fp16 to copy, read and keep) */                                         \
  X(weight_format, WeightFormat, WeightFormat::kFp, PUBLIC, true, "")                                                 \
  /* CUDA: what a convolution's epilogue takes in (Fusion, runtime/core/types.h) */                                   \
  X(fusion, Fusion, Fusion::kAuto, PUBLIC, true, "")                                                                  \
  /* stream mode: ring (mapped twice) or slots; auto: the ring where the GPU can map it */                            \
  X(weight_pool, PoolLayout, PoolLayout::kAuto, PUBLIC, true, "")                                                     \
  /* stream mode, ring, no chunk size: transfer units chosen by simulation (unit_search.h); false: equal chunks */    \
  X(unit_search, bool, true, PUBLIC, true, "")                                                                        \
  /* a searched cut replaces equal chunks only when predicted at least this fraction faster */                        \
  X(unit_search_min_gain, double, 0.01, INTERNAL, v >= 0.0 && v < 1.0,                                                \
    "unit search minimum gain " + std::to_string(v) + " must be in [0, 1)")                                           \
  /* stream mode, ring: which blobs stay resident within the budget (runtime/streaming/residency.h) */                \
  X(residency, Residency, Residency::kGreedy, PUBLIC, true, "")                                                       \
  /* stream mode, ring, CUDA, weights from host: streamed blobs may be copied into activation bytes idle at that     \
     point instead of the ring, where the plan predicts it faster (runtime/streaming/arena_staging.h) */              \
  X(arena_staging, bool, true, PUBLIC, true, "")                                                                      \
  /* arena staging: a staged blob's copy may be queued as soon as its arena bytes are free, where the plan predicts    \
     it faster (StreamOptions::arena_early); off: always behind the ring's units needed after its reader */           \
  X(staging_early, bool, true, INTERNAL, true, "")                                                                    \
  /* arena staging: consecutive staged blobs may share one copy (a run, StreamOptions::arena_joined) where the plan   \
     predicts it faster; off: every staged blob copied alone */                                                      \
  X(staging_runs, bool, true, INTERNAL, true, "")                                                                     \
  /* int8 weights, CUDA: the planner runs each expansion on a stage of its own, as the engine does, from the         \
     expansion times measured at open (SimOptions::expand_ms); off: counted inside the kernel times */               \
  X(expansion_stage, bool, true, INTERNAL, true, "")                                                                  \
  /* slices, stream mode, ring, CUDA, weights from host, arena staging on: a layer above the slot whose whole blob  \
     finds room in idle activation bytes before it runs is kept whole and staged there instead of sliced           \
     (runtime/compile/whole_staging.h) */                                                                           \
  X(stage_whole, bool, true, PUBLIC, true, "")                                                                        \
  /* weight budget auto: predicted latency at most (1 + this) x preload's */                                          \
  X(max_slowdown, double, 0.05, PUBLIC, v >= 0 && v <= 10,                                                            \
    "max slowdown " + std::to_string(v * 100) + " % must be in [0, 1000] %")                                          \
  /* weight budget auto: > 0 replaces max_slowdown with this predicted latency (ms) */                                 \
  X(latency_target_ms, double, 0, PUBLIC, v >= 0 && v < 1e9, "latency target must be >= 0 ms (0: use the max slowdown)") \
  /* stream mode, weights from host: after each inference, copy the next one's leading units at once (prefetch      \
     across inferences; docs/streaming.md section 8); on in a Runtime, off alone */                                   \
  X(prefetch_next, bool, false, INTERNAL, true, "")                                                                   \
  /* stream mode, ring, weights from host, a session outside a Runtime: each inference copies the next one's        \
     leading units after its own, under its last layers, where the simulator predicts the steady state faster        \
     (placement pass tail_pass; docs/streaming.md section 3) */                                                       \
  X(tail_prefetch, bool, false, INTERNAL, true, "")                                                                   \
  /* a Runtime's joint plan: host time (ms) before this model's inference, once the model before it has finished,    \
     without copies to the device, that its prefetch may count (less its input's upload; section 8) */              \
  X(prefetch_lead_ms, double, 0, PUBLIC, v >= 0 && v <= 1000,                                                         \
    "prefetch lead " + std::to_string(v) + " ms: expected 0 to 1000 ms")                                              \
  /* a Runtime's joint plan splitting by the largest slowdown: this model's latency alone (ms) as the application    \
     measured it; 0: the all-resident prediction from the kernel times measured at open (section 6) */              \
  X(alone_ms, double, 0, PUBLIC, v >= 0 && v <= 1e6,                                                                  \
    "latency alone " + std::to_string(v) + " ms: expected 0 (unknown) to 1000000 ms")                                 \
  /* -1: auto (NHWC for fp16/tf32, NCHW for fp32); 0: NCHW; 1: NHWC */                                                \
  X(layout, int, -1, PUBLIC, v >= -1 && v <= 1, "layout must be -1 (auto), 0 (NCHW) or 1 (NHWC)")                     \
  /* capture the network once and replay it */                                                                        \
  X(cuda_graph, bool, true, PUBLIC, true, "")                                                                         \
  /* where [yolo] heads' candidates (objectness > thresh) are picked: gpu (only their rows downloaded), cpu (every  \
     output downloaded whole and scanned on the host), auto (gpu for a batch of several images; at batch 1 the whole  \
     downloads run under the later layers and cpu is faster: docs/benchmarks.md, "Outputs picked on the GPU") */     \
  X(decode, Decode, Decode::kAuto, PUBLIC, true, "")                                                                  \
  /* run the network once at open where no graph is captured (cuda_graph off); off, the first inference loads      \
     its kernels itself while its reads run (docs/streaming.md section 9) */                                          \
  X(warm_up_at_open, bool, false, INTERNAL, true, "")                                                                 \
  /* CUDA: threads that run each distinct convolution once at open, before the graph capture or the first           \
     inference, so that cuDNN and the driver load their kernels in parallel; 0: none (docs/architecture.md,          \
     "Kernels loaded at open") */                                                                                     \
  X(warm_threads, int, 4, INTERNAL, v >= 0 && v <= 64, "warm threads " + std::to_string(v) + ": expected 0 to 64")   \
  /* keep what is measured or chosen at open per GPU and model in the user's cache and reuse it: stream mode's       \
     kernel times (runtime/cache/kernel_times_cache.h) and, on CUDA, the cuDNN algorithm choices (conv_algo_cache.h) */ \
  X(cache_kernel_times, bool, false, PUBLIC, true, "")                                                                \
  /* stream mode, copies per inference: time the copies of a few streamed inferences at open, fit their cost and     \
     compile again with the calibrated profile (runtime/streaming/copy_calibration.h) */                             \
  X(calibrate_copies, bool, true, PUBLIC, true, "")                                                                   \
  /* per-layer timing events (inside the graph on CUDA) */                                                            \
  X(profile_layers, bool, false, PUBLIC, true, "")                                                                    \
  /* cudnnFind (timed) instead of cuDNN's heuristics */                                                               \
  X(find_algorithms, bool, false, PUBLIC, true, "")                                                                   \
  /* cuDNN workspace per convolution, bytes */                                                                        \
  X(workspace_limit, int64_t, int64_t(256) << 20, PUBLIC, v >= 0, "cuDNN workspace limit must be >= 0 bytes")         \
  /* ---- weights from storage (CPU, or CUDA stream mode; docs/streaming.md section 7) ---- */                        \
  /* host: prepared once into host memory; storage: read each inference from a prepared weight file */                \
  X(weights_from, WeightsFrom, WeightsFrom::kHost, PUBLIC_STORAGE, true, "")                                          \
  /* storage: host bytes for weights (0: the minimum, 2 x the largest read): a GPU's staging, which caps the copy  \
     units below that minimum; on the CPU the staging and the blobs kept in memory */                                 \
  X(host_budget, int64_t, 0, PUBLIC, v >= 0, "host budget must be >= 0 bytes (0: the minimum)")                       \
  /* storage, CUDA: 1: reads land in mapped pinned memory the kernels read (no device pool); 0: read -> copy ->      \
     kernel; -1: auto (1 on integrated GPUs) */                                                                       \
  X(zero_copy, int, -1, PUBLIC, v >= -1 && v <= 1, "zero copy must be -1 (auto), 0 or 1")                             \
  /* storage: reads in flight */                                                                                      \
  X(read_depth, int, 8, PUBLIC, v >= 1 && v <= 64, "read depth " + std::to_string(v) + " is out of range (1..64)")   \
  /* storage: bytes per read request */                                                                               \
  X(read_block_bytes, int64_t, int64_t(1) << 20, PUBLIC, v >= 4096 && v <= (int64_t(64) << 20) && v % 4096 == 0,     \
    "read block " + std::to_string(v) + " bytes: expected a multiple of 4096 from 4 KiB to 64 MiB")                   \
  /* storage: the prepared weight file ("": the user's cache, made on first use) */                                   \
  X(prepared_path, std::string, "", PUBLIC, true, "")                                                                 \
  /* storage, the user's cache: its bound in bytes over the prepared files, least recently used evicted first;     \
     -1: $DLR_CACHE_MAX_BYTES, else the smaller of 4 GiB and a tenth of its file system; 0: no bound              \
     (runtime/storage/prepared_cache.h) */                                                                          \
  X(cache_max_bytes, int64_t, -1, PUBLIC, v >= -1,                                                                  \
    "cache bound " + std::to_string(v) + " bytes: expected -1 (DLR_CACHE_MAX_BYTES or the default), 0 (no bound) or a size") \
  /* storage: io_uring or a pool of pread threads (auto: io_uring where the kernel allows it) */                      \
  X(reader, ReaderKind, ReaderKind::kAuto, PUBLIC, true, "")                                                          \
  /* storage: once an inference's reads are done, read the next inference's first units while it still runs */     \
  X(prefetch_reads, bool, true, INTERNAL, true, "")                                                                  \
  /* storage: bytes of the prepared file that the page cache holds are read from it (buffered, never waiting for   \
     the disk, so the cache neither grows nor is read past), the rest with direct I/O; false: every read direct */  \
  X(cache_hits, bool, true, INTERNAL, true, "")
