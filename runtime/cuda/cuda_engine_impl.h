// CudaEngine internals (private to runtime/cuda). Two weight modes share one class:
//  - preload: every blob resident in one device buffer, uploaded at open;
//  - stream:  a StreamPlan (runtime/streaming/stream_plan.h) moves weights from a
//    pinned host store into a bounded device pool on a second (copy) stream,
//    ordered against compute with events only (docs/streaming.md section 1, "Streams
//    and events").
// All memory is allocated at open; run() enqueues (or replays the CUDA graph of)
// one inference and synchronises once for the output download.
// Sources: cuda_engine.cpp (create() and its steps), cuda_engine_convs.cpp,
// cuda_engine_run.cpp, cuda_engine_graph.cpp, cuda_engine_sharing.cpp,
// weight_residency.cpp, unit_tuning.cpp; cuda_target.cpp (the device as a target).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_3xtf32.h"
#include "kernels/cuda/conv_concat.h"
#include "kernels/cuda/conv_graph.h"
#include "kernels/cuda/cuda_handles.h"
#include "runtime/cache/conv_algo_cache.h"
#include "runtime/cache/fused_plan_cache.h"
#include "runtime/compile/compiled_model.h"
#include "runtime/cuda/cuda_engine.h"
#include "runtime/engine_sharing.h"
#include "runtime/cuda/mirrored_buffer.h"
#include "runtime/storage/read_pipeline.h"
#include "runtime/streaming/stream_plan.h"
#include "runtime/warm_split.h"
#include "runtime/weight_source.h"
#include "runtime/weight_store.h"

namespace dlr {
namespace cuda {
struct DequantJob;  // kernels/cuda/cuda_ops.h
}  // namespace cuda

// Whether CUDA device `device` exists (cudaGetDeviceCount); the error names the count.
Status check_cuda_device(int device);

// The fused configurations of an open (CudaEngine::setup_convs to choose_fused_convs).
struct FusedSetup {
  std::string path;  // the plan cache file; empty: plans not kept
  ConvAlgoKey key;
  FusedPlanMap stored, keep;                      // what the file held, what it will hold
  std::map<std::string, std::vector<int>> steps;  // configuration -> the steps sharing its graph
  std::vector<std::string> to_time;               // configurations whose choice is not measured yet
  std::map<std::string, std::shared_ptr<cuda::FusedConv>> built;  // their graphs (to select a plan)
};
constexpr int kFusedPlansToTime = 4;
// The algorithm numbers the algorithm cache stores for a conv run as a 3xTF32 conv
// (kernels/cuda/conv_3xtf32.h), past cuDNN's own: its chunked and its GEMM form.
constexpr int kAlgo3xTf32 = int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
constexpr int kAlgo3xTf32Gemm = kAlgo3xTf32 + 1;
constexpr int kAlgoCount = kAlgo3xTf32Gemm + 1;  // every number a cache file may hold
constexpr bool is_x3(int algo) { return algo >= kAlgo3xTf32 && algo <= kAlgo3xTf32Gemm; }
// The 3xTF32 form this process chose for a conv's AlgoCache key (algo_choice.cpp; -1:
// none), so that later engines of the process run it too; register() records a choice.
int x3_chosen(const std::string& process_key);
void register_x3_choice(const std::string& process_key, int algo);

// The cuDNN algorithm choices of an open (CudaEngine::setup_convs to choose_conv_algos).
struct AlgoSetup {
  std::string path;   // the algorithm cache file; empty: choices not kept
  ConvAlgoKey key;
  ConvAlgoMap stored, chosen;                     // what the file held, what it will hold
  std::map<std::string, std::vector<int>> steps;  // conv config key -> the steps of that configuration
  std::vector<std::string> to_time;               // configurations whose algorithm is not measured yet
};  // cuDNN engines timed per fused configuration (find_algorithms)

class CudaEngine final : public Engine, public SharedMemoryClient, public SharedRingClient {
 public:
  // Allocates everything the model needs and uploads (preload) or prepares the
  // pinned store (stream) from `weights`, which is not used afterwards.
  // `init`: the context helper started by the session (its cuDNN handle is taken), or null.
  static Expected<std::unique_ptr<CudaEngine>> create(const CompiledModel& model, WeightSource& weights,
                                                      CudaContextInit* init = nullptr);
  ~CudaEngine() override;

  DeviceKind device() const override { return DeviceKind::kCUDA; }
  const ExecutionPlan& plan() const override { return m_plan; }
  Status set_images(const ImageU8* images, int n, bool letterbox) override;
  Status set_input(const float* nchw, int n) override;
  Status reserve_images(int max_width, int max_height) override;
  Status run() override;
  const float* output(int layer, int image) const override;
  OutputRows output_rows(int layer, int image) const override;
  Status download_output(int layer) const override;
  Status read_layer(int layer, int image, std::vector<float>* out) const override;
  MemoryReport memory() const override;
  std::vector<LayerTiming> layer_timings() const override { return m_timings; }
  std::vector<CopyTiming> copy_timings() const override { return m_copy_timings; }
  std::vector<ReadTiming> read_timings() const override;
  int64_t read_cached_bytes() const override;
  std::vector<HostRegion> streamed_host_regions() const override;
  Expected<std::vector<double>> measure_layer_ms(std::vector<double>* expand_ms) override;
  Expected<std::vector<CopyTiming>> measure_copy_timings(int runs) override;
  Status replan(const CompiledModel& model, WeightSource& weights) override;
  Status finalize() override;
  SharedMemoryClient* shared_memory() override { return this; }
  SharedRingClient* shared_ring() override { return this; }
  int64_t workspace_needed() const override { return int64_t(m_workspace_need); }
  Status bind_shared(void* arena, int64_t arena_bytes, void* workspace, int64_t workspace_bytes) override;
  Status bind_ring(void* base, int64_t bytes, int64_t start) override;
  bool uses_shared_ring() const override {
    return m_options.shared_ring && m_streaming && !m_weights_deferred && !m_stream_plan.resident &&
           m_stream_plan.layout == PoolLayout::kRing;
  }
  Status drop_prefetch(Engine& waiter) override;
  Status prefetch(Engine* after = nullptr, int64_t limit_bytes = -1, Engine* behind = nullptr) override;
  bool prefetch_pending() const override { return m_prefetch_issued > 0; }
  int64_t prefetch_issued_bytes() const override;
  int64_t ring_start() const override { return uses_shared_ring() ? m_sring_start : -1; }
  int64_t ring_stream_bytes() const override { return uses_shared_ring() ? m_stream_plan.ring_streamed_bytes() : 0; }
  double last_run_ms() const override { return m_run_timing.network_ms; }
  RunTiming last_run_timing() const override { return m_run_timing; }
  EngineOpenTiming open_timing() const override { return m_open_timing; }

 private:
  explicit CudaEngine(const CompiledModel& model)
      : m_options(model.engine), m_plan(model.plan), m_streaming(model.streaming), m_stream_plan(model.stream),
        m_profile_name(model.target.copy_profile.name), m_weights_deferred(model.needs_layer_times()),
        m_from_storage(model.from_storage), m_reads(model.reads) {}
  TensorView view(const ViewRef& v) const;
  const char* blob_ptr(int blob) const;  // device address of a weight blob (pool or resident buffer)
  char* pool_base() const {
    if (uses_shared_ring()) return m_sring_base;
    return m_ring.bytes() ? m_ring.data() : static_cast<char*>(m_weights.data());
  }
  // A pool offset of the plan where it lies in the pool: in the shared ring the engine's
  // stream starts at m_sring_start (the double mapping keeps every region contiguous).
  int64_t pool_pos(int64_t off) const { return uses_shared_ring() ? (off + m_sring_start) % m_sring_bytes : off; }
  // The shared ring is bound at the plan's size (graphs and runs need it).
  bool ring_ready() const { return !uses_shared_ring() || (m_sring_base && m_sring_bytes == m_stream_plan.pool_bytes); }
  // Shared ring: the layers after which this engine's stream bytes are released for the
  // next model's prefetch (events recorded at every run, external nodes in graphs), and
  // the prefetch's chunks (events the first layers wait for one by one).
  Status make_ring_events();
  // The release event (index into m_release_ev) a copy into ring bytes [pos, pos + bytes)
  // must wait for, or -1 when none of this engine's last run's bytes live there.
  int release_index(int64_t pos, int64_t bytes) const;
  int prefetch_chunk(int unit) const;  // the prefetch chunk holding prefetched unit `unit`
  // Fills m_run_timing's prefetch fields at the start of run() (queries events, never waits).
  Status note_prefetch_ready(bool prefetched);
  // The activation arena and the cuDNN workspace: the engine's own, or its runtime's.
  char* arena_base() const { return m_arena_ptr; }
  void* workspace_ptr() const { return m_workspace_ptr; }
  size_t workspace_bytes() const { return m_workspace_bytes; }
  // Prefetch across inferences: the plan streams and has leading units to copy ahead.
  int prefetch_units() const {
    return m_options.prefetch_next && m_streaming && !m_from_storage ? m_stream_plan.prefetch_units() : 0;
  }
  // The next inference's leading units this one copies under its tail (StreamPlan::tail_units;
  // the plan has them only for a session's own ring with weights from host).
  int tail_units() const {
    return m_streaming && !m_from_storage && !m_stream_plan.resident && !uses_shared_ring() ? m_stream_plan.tail_units
                                                                                            : 0;
  }
  // The pool's bytes were written outside an inference's plan (a measurement, a warm-up, a
  // new placement): no prefetch or tail copy they held is valid any more.
  void pool_overwritten() {
    m_prefetch_issued = 0;
    m_tail_landed = false;
  }
  bool zero_copy() const { return m_from_storage && m_reads.two_stage; }
  // Where copy unit u's bytes come from: the pinned store, or the staging area of reads.
  const char* copy_source(const TransferUnit& u) const;

  // cuda_engine.cpp: create()'s steps, in their order (each adds its time to m_open_timing).
  Status open_streams();                         // the compute stream, the run's timing events
  Status open_cudnn(CudaContextInit* init);      // the context helper's handle, else a new one
  Status alloc_arena_and_input();                // own arena (zeroed) unless shared; the f32 input
  Status alloc_workspace_and_outputs();          // own workspace unless shared; outputs; image staging
  // cuda_engine_convs.cpp: every conv's descriptors and algorithm (the algorithm cache
  // read and kept), m_workspace_need; errors name the cfg file, layer and cfg line.
  Status setup_convs(const CompiledModel& model);
  Status make_conv(const Step& st, const std::string& cfg_path, const ConvAlgoMap& stored, ConvAlgoMap* chosen);
  // The conv as one cuDNN graph: shared with an earlier step of the same configuration
  // (`made`), loaded from `stored` (the plans kept for this model and GPU) or built;
  // a plan loaded or built is added to `keep` (what the cache file should hold).
  bool wants_fused(const Step& st) const;
  bool chooses_fused() const;  // Fusion::kAuto on an engine that owns its arena and pool: time both variants
  Status make_fused_conv(const Step& st, const std::string& cfg_path,
                         std::map<std::string, std::shared_ptr<const cuda::FusedConv>>* made);
  cuda::FusedConvConfig fused_config(const Step& st) const;  // the graph make_fused_conv makes for st
  // cuda_engine_fused_load.cpp: the plans m_fused.stored holds for this plan's graphs,
  // loaded on up to warm_threads threads into m_fused_loaded (make_fused_conv takes them).
  Status load_fused_plans_on_threads();
  // fused_choice.cpp (after the workspace exists): every configuration in
  // m_fused.to_time timed as a graph and as conv + epilogue pass on this engine's
  // buffers (outputs overwritten: open only); the slower graph dropped; the cache written.
  Status choose_fused_convs();
  Status time_step(const Step& st, double* ms_per_run);
  Status time_replay(const cuda::GraphExec& g, double* ms);  // one launch of g on an idle GPU, ms
  Status time_fused_plans(const Step& st, cuda::FusedConv* graph, double* best_ms);  // selects the fastest plan
  Status fit_workspace();  // own workspace down to what the selected plans and convs need
  // algo_choice.cpp (after the workspace exists): strict fp32 on an engine that owns its
  // buffers, with the choices kept: every configuration in m_algo_setup.to_time timed with
  // each direct-summation algorithm (implicit GEMM, precomputed implicit GEMM, GEMM) that
  // fits the workspace, the fastest kept (process-wide and in the cache file).
  Status choose_conv_algos();
  cuda::ConvConfig conv_config(const Step& st) const;  // what make_conv creates for `st`
  // The 3xTF32 conv of `st` in the form `algo` names (is_x3), or an error (unsupported
  // where it cannot run); the GEMM form makes the engine's cuBLAS handle first.
  Expected<std::unique_ptr<cuda::Tf32x3Conv>> make_x3_conv(const Step& st, int algo);
  static ViewRef x3_input(const Step& st);  // the view a 3xTF32 conv of `st` reads
  Status make_cublas();  // m_cublas, once (timed into the open's cublas_handle_ms)
  Status make_x3_step(const Step& st, int algo, const std::string& cfg_path, const std::string& conv_key,
                      const std::string& process_key, const ConvAlgoChoice* kept, ConvAlgoMap* chosen);
  Status grow_workspace(size_t bytes);  // own workspace to at least `bytes` (open only)
  Status realloc_workspace(size_t bytes);  // own workspace of exactly `bytes`, the old one freed first
  // Times `st` as the 3xTF32 form `algo`; *ms < 0: that form cannot run for st.
  Status time_x3(const Step& st, int algo, double* ms, size_t* workspace);
  Status adopt_choice(const Step& st, const std::vector<int>& steps, const ConvAlgoChoice& best);
  Status make_concat_conv(const Step& st, const std::string& cfg_path);  // a conv over a concatenation's parts
  // weight_residency.cpp
  Status setup_weights(WeightSource& weights);
  Status setup_stream_weights(WeightSource& weights);  // pool, resident region, pinned store of m_stream_plan
  // The blobs with offsets[b] >= 0 prepared and copied to device + offsets[b] (weight_upload.h).
  Status upload(WeightSource& weights, const std::vector<int64_t>& offsets, char* device);
  int prepare_threads() const;  // host threads preparing weights: EngineSettings::threads, else every CPU
  Status make_stream_events();  // per-unit and per-layer ordering events of m_stream_plan
  // cuda_engine_storage.cpp: weights from storage.
  Status setup_storage_reads(WeightSource& weights);  // staging area and read pipeline of m_reads
  Status setup_read_words();     // graph: the mapped words its device waits poll
  Status make_release_events();  // what the reader waits for before refilling staging
  Status wait_for_read(int unit, cudaStream_t s);  // device wait (capture) or this thread's
  Status release_read(int unit, cudaStream_t s);   // after copy `unit`: its release event, progress
  Status enqueue_network_storage(bool profile);  // one inference driven by the reads (no graph)
  Status launch_storage_graph();  // one inference as a replay whose device waits follow the reads
  Status check_read_waits();      // after a replay: a device wait that gave up is an error
  Status enqueue_network(bool profile);
  Status read_profile(int skipped);  // skipped: the leading units copied before the run (no events)
  // After an inference's own copies: the next inference's leading units (tail_units()).
  Status enqueue_tail_copies(bool profile, int* waited_layer);
  Status clear_foreign_arena();  // zeroes this plan's arena region after another model ran in it
  // cuda_engine_run.cpp. expanded: an int8 step's weights are in its dequant buffer
  // already (cuda_engine_expand.cpp); else they are expanded first, on `s`.
  // The cuDNN handle and workspace a step's convolution uses instead of the engine's
  // (the warm-up's threads, cuda_engine_warm.cpp).
  struct StepContext {
    cudnnContext* cudnn = nullptr;
    void* workspace = nullptr;
    size_t workspace_bytes = 0;
  };
  // ctx null: the engine's handle and workspace.
  Status enqueue_step(const Step& st, cudaStream_t s, bool expanded, const StepContext* ctx = nullptr);
  // enqueue_step unless a no-op; errors name the layer.
  Status enqueue_layer_kernels(const Step& st, cudaStream_t s, bool expanded = false);
  // cuda_engine_outputs.cpp: the downloads of the output layers into m_outputs (the only
  // D2H of an inference). An output layer with kernels after it downloads on m_out_stream
  // as soon as its own kernels end, under the later layers; the last one on `s`.
  // enqueue_output after each step's kernels (by step index; a no-op for other steps), join_outputs once
  // after the last: `s` then waits for every download.
  Status make_output_downloads();  // at open
  Status enqueue_output(int step, cudaStream_t s);
  Status join_outputs(cudaStream_t s);
  void forget_whole_outputs();  // at each run's start
  Status copy_whole_output(int layer, cudaStream_t s) const;  // into m_outputs, enqueued on s
  // cuda_engine_expand.cpp: int8 weights expanded on m_expand_stream ahead of their step,
  // a group (Step::dequant_group) per launch. One enqueue_network's progress: what is
  // enqueued so far and the expansions issued.
  struct Expansion {
    size_t next = 0;         // the next entry of m_dq_steps to expand
    int started_group = -1;  // the last group whose first step's start is recorded (m_dq_start)
    int copied = -1;         // the last unit whose copy is enqueued
    int read_through = 1 << 30;  // zero copy: the last step whose weights the thread waited for (-1: none yet)
    bool copies = false;     // units are copied this inference
    int skipped = 0;         // units copied before it (prefetch)
    bool chunked = false;    // ... and waited for chunk by chunk (shared ring)
    unsigned wait_flags = 0; // for the chunk events (external inside a capture)
    int waited_start = -1;   // expand stream: the highest group start waited for
    int waited_unit = -1;    // expand stream: the highest unit waited for
    int waited_chunk = -1;   // expand stream: the highest prefetch chunk waited for
    int waited_done = -1;    // compute stream: the highest entry whose expansion was waited for
  };
  Status open_expansion();  // the stream, events and groups (a plan with int8 steps)
  cuda::DequantJob dequant_job(const Step& st) const;    // an int8 step's blob -> its dequant buffer
  Status expand_dequant(const Step& st, cudaStream_t s);  // one step's weights, on `s`
  Status expand_begin(Expansion* x);  // forks the expand stream; issues what can be
  // Issues, in order, every group whose inputs are enqueued; a group in part only when
  // entry `need` (-1: none) is in it and waits.
  Status expand_issue(Expansion* x, int need = -1);
  Status expand_entries(size_t k0, size_t k1, cudaStream_t s);  // entries [k0, k1) in one launch
  // Before int8 step st's kernels (after its own waits): records its group's start,
  // issues what can be and makes the compute stream wait for st's expansion.
  Status expand_before_kernels(const Step& st, Expansion* x);
  Status expand_end();  // joins the expand stream into the compute stream
  // unit_tuning.cpp: the pool filled with weight-like values before kernels are timed
  // (synchronous; at open only).
  Status fill_pool_like_weights();
  // cuda_engine_graph.cpp
  Status make_layer_events();  // profile_layers: the per-layer timing events (once)
  // The network run eagerly once, synchronised (sets m_open_timing.warmup_eager); *ms: its time.
  Status warm_up_eagerly(double* ms);
  // Each distinct convolution run once on EngineSettings::warm_threads threads, each on a
  // slice of the workspace (runtime/warm_split.h); synchronises. Not for an engine whose
  // arena or ring a Runtime shares (another model may be running on them).
  Status warm_kernels();
  std::vector<WarmItem> warm_items() const;  // the distinct convolutions, with their workspace
  // finalize()'s capture: after a failure, an eager warm-up (*eager_ms) and a second try;
  // a second failure leaves no graph (a warning), not an error.
  Status capture_at_open(double* eager_ms);
  Status capture_graph();
  // Captures what `enqueue` puts on the compute stream (and streams it forks) into an
  // instantiated graph; m_capturing is true meanwhile.
  Expected<cuda::GraphExec> capture(const std::function<Status()>& enqueue);

  EngineSettings m_options;  // as compiled (model.engine)
  ExecutionPlan m_plan;
  cuda::CudnnHandle m_cudnn;
  // The handles the helper threads of load_fused_plans_on_threads loaded plans with: a
  // plan keeps its handle, so these live as long as the graphs (declared before them).
  std::vector<cuda::CudnnHandle> m_aux_cudnn;
  EngineOpenTiming m_open_timing;  // create() and finalize()
  cuda::Stream m_stream;       // compute
  cuda::Stream m_copy_stream;  // stream mode: weight copies
  cuda::Stream m_out_stream;   // the early output downloads (cuda_engine_outputs.cpp)
  std::vector<int> m_out_index;          // per step: its index in m_plan.output_layers, or -1
  std::vector<cuda::Event> m_out_ready;  // per output layer: its kernels ended (ordering only)
  cuda::Event m_out_join;
  int m_out_last_step = -1;   // the last step: its output downloads on the compute stream
  bool m_out_forked = false;  // this enqueue forked m_out_stream (join_outputs joins it)

  // Weights. preload: m_weights holds every blob at m_blob_offsets. stream: the pool
  // is m_ring (ring layout) or m_weights (slots, resident), m_host the pinned store,
  // m_stream_plan the schedule.
  cuda::DeviceBuffer m_weights;
  cuda::MirroredBuffer m_ring;
  cuda::DeviceBuffer m_resident;    // stream mode: the resident blobs (StreamPlan::resident_bytes)
  std::vector<int64_t> m_blob_offsets;
  bool m_streaming = false;
  StreamPlan m_stream_plan;
  std::string m_profile_name;       // the copy profile the plan was compiled with (logs)
  // Stream mode, a model that is compiled again with kernel times measured at open:
  // until replan() only the pool exists (the measurement reads it; values do not
  // matter), so the host store is prepared once, for the final placement.
  bool m_weights_deferred = false;
  std::unique_ptr<WeightStore> m_host;
  std::unique_ptr<WeightStore> m_staged_host;  // pinned: the blobs staged in the arena (StreamPlan::staged_bytes)
  // Weights from storage: reads follow m_reads into m_staging (pinned; mapped and read by
  // the kernels themselves on the two-stage, zero-copy path), the pipeline's thread reading.
  bool m_from_storage = false;
  ReadPlan m_reads;
  cuda::PinnedBuffer m_staging;
  char* m_staging_host = nullptr;  // m_staging's first 4096-aligned byte (reads land from here)
  char* m_staging_dev = nullptr;   // zero copy: its device address
  // Graph from storage: per read unit the pipeline's landed word, then the inference the
  // replay waits for, then the first device wait that gave up (mapped; host and device view).
  cuda::PinnedBuffer m_read_words;
  int32_t* m_read_words_host = nullptr;
  int32_t* m_read_words_dev = nullptr;
  std::unique_ptr<ReadPipeline> m_pipeline;
  std::vector<cuda::Event> m_read_release;  // three stages: per unit, recorded after its copy (the reader waits)
  std::vector<cuda::Event> m_copy_done;   // per unit (ordering only)
  std::vector<cuda::Event> m_layer_done;  // per layer that ends a group's use (ordering only)
  cuda::Event m_fork, m_join;             // copy stream joins/leaves the compute stream
  // int8 weights (cuda_engine_expand.cpp): the steps that expand them, in order (entries);
  // per group its first entry (and a last sentinel) and the start of its first step's
  // kernels (compute stream); per entry the end of the launch that expanded it (expand
  // stream) and that launch's last entry (set at each enqueue).
  cuda::Stream m_expand_stream;
  std::vector<int> m_dq_steps;
  std::vector<int> m_dq_index;  // per step: its entry in m_dq_steps, or -1
  std::vector<int> m_group_first;
  std::vector<cuda::Event> m_dq_start, m_dq_done;
  std::vector<int> m_dq_last;
  cuda::Event m_ex_fork, m_ex_join;

  cuda::DeviceBuffer m_arena;      // own (not shared_memory)
  cuda::DeviceBuffer m_workspace;  // own (not shared_memory)
  char* m_arena_ptr = nullptr;     // m_arena or the runtime's
  void* m_workspace_ptr = nullptr; // m_workspace or the runtime's
  size_t m_workspace_bytes = 0;
  size_t m_workspace_need = 0;     // the largest conv's workspace
  bool m_bound = false;            // shared_memory: bind_shared() has been called
  cuda::DeviceBuffer m_input_f32;
  cuda::PinnedBuffer m_image_host;
  cuda::DeviceBuffer m_image_dev;
  int64_t m_image_capacity = 0;
  cuda::PinnedBuffer m_outputs;
  std::vector<int64_t> m_output_offsets;
  // Candidates picked on the device (ExecutionPlan::selects): the blocks the select kernels
  // write and their host copies, downloaded each run in place of the whole outputs; per
  // layer whether m_outputs holds its whole output of the last run (download_output).
  cuda::DeviceBuffer m_select_dev;
  cuda::PinnedBuffer m_select_host;
  mutable std::vector<char> m_output_whole;
  std::vector<std::unique_ptr<cuda::CudnnConv>> m_convs;          // per step: a conv of one input
  std::vector<std::unique_ptr<cuda::ConcatConv>> m_concat_convs;  // per step: a conv over a concatenation's parts
  // per step: the conv as one cuDNN graph (or null); steps of one configuration share it
  std::vector<std::shared_ptr<const cuda::FusedConv>> m_fused_convs;
  // per step: the conv as a 3xTF32 conv (strict fp32 NHWC, chosen at open) or null
  std::vector<std::unique_ptr<cuda::Tf32x3Conv>> m_x3_convs;
  FusedSetup m_fused;  // the fused configurations of the open (cleared by choose_fused_convs)
  // Plans loaded ahead by load_fused_plans_on_threads, by configuration; make_fused_conv
  // moves each out (empty after setup_convs).
  std::map<std::string, std::unique_ptr<cuda::FusedConv>> m_fused_loaded;
  AlgoSetup m_algo_setup;  // the algorithm choices of the open (cleared by choose_conv_algos)
  cuda::CublasHandle m_cublas;  // made at open only for a conv over a concatenation or a 3xTF32 GEMM form
  cuda::GraphExec m_graph;
  // Prefetch across inferences: the inference without its first m_prefetch_count copies
  // (done by prefetch() on the copy stream, m_prefetch_done recorded after them).
  cuda::GraphExec m_graph_body;
  cuda::Event m_prefetch_done;
  cuda::Event m_copies_end;    // stream mode: recorded after an inference's last copy (prefetch(after) waits)
  // Shared ring (EngineSettings::shared_ring): the runtime's ring and where this stream starts.
  char* m_sring_base = nullptr;
  int64_t m_sring_bytes = 0;
  int64_t m_sring_start = 0;
  bool m_finalized = false;                // finalize() ran (a bind_ring captures the graphs again)
  std::vector<int> m_release_layer;        // increasing layers; after m_release_layer[k] ...
  std::vector<int64_t> m_release_end;      // ... this engine's stream bytes [0, m_release_end[k]) are read
  std::vector<cuda::Event> m_release_ev;   // recorded after each such layer
  std::vector<int> m_chunk_first;          // prefetch chunk c: units [m_chunk_first[c], m_chunk_first[c + 1])
  std::vector<cuda::Event> m_chunk_ev;     // recorded after each chunk's copies (prefetch())
  int m_prefetch_issued = 0;   // leading units prefetch() enqueued since the last run() (0: no prefetch pending)
  int m_skip_units = 0;  // enqueue_network: leave out the leading copies (prefetched or copied under a tail)
  bool m_tail_landed = false;  // the last run() copied the next inference's tail_units() leading units

  // Timing (events with timing; recorded only when profiling, read after the run).
  cuda::Event m_ev_upload, m_ev_start, m_ev_end;
  std::vector<cuda::Event> m_ev_layer_start, m_ev_layer_ready, m_ev_layer_end;  // per step
  std::vector<cuda::Event> m_ev_copy_start, m_ev_copy_end;                      // per unit
  std::vector<cuda::Event> m_ev_tail_start, m_ev_tail_end;                      // per tail copy
  bool m_input_pending = false;
  bool m_capturing = false;  // inside capture()
  bool m_kernels_only = false;  // enqueue_network: the layers alone, no copies or reads (warm-up from storage)
  // Weights from storage: finalize() started the first inference's reads (they land in
  // staging while the warm-up kernels run); the first run() adopts them instead of
  // calling ReadPipeline::start() again.
  bool m_reads_started = false;
  std::vector<LayerTiming> m_timings;
  std::vector<CopyTiming> m_copy_timings;
  RunTiming m_run_timing;
};

}  // namespace dlr
