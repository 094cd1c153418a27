// Runtime: several models on one device under one memory budget (docs/architecture.md,
// "Several models on one device"; docs/streaming.md section 8).
//
//   auto rt = dlr::Runtime::create({DeviceKind::kCUDA, 0, "40%"});     // Expected<unique_ptr<Runtime>>
//   auto a = (*rt)->open("yolov4.cfg", "yolov4.weights", options, 1.0);  // Expected<unique_ptr<RuntimeModel>>
//   auto dets = (*a)->detect(image);                                     // any thread
//
// What the models share: one activation arena and one workspace (sized to the largest
// model's need; the models run one at a time) and one budget for all their device
// memory: the shared arena and workspace plus every model's resident weights and one
// ring shared by the streamed models (RuntimeOptions::shared_ring, the default; CUDA
// only), or, with shared_ring off or on the CPU, a weight budget of its own per model.
// The joint plan (multi/ring_split.h; per-model budgets: multi/budget_split.h) chooses
// the ring and each model's resident set from the models' predicted latencies (the
// residency planner over the kernel times measured at open), minimising the weighted
// sum of latencies or the largest slowdown (RuntimeOptions::objective). Opening or
// closing a model plans the split again and moves the other models to their new
// placements (allocation outside any inference; resident parts shrink before others
// grow, and the shared ring is freed before and allocated after them, so the total
// never exceeds the budget).
//
// Threads: detect() may be called from any thread on any model; inferences of one
// runtime run one at a time (one lock; the shared arena allows nothing else), in the
// order the lock grants them. A model's next inference's first weights are copied
// while other models run (prefetch across inferences, SessionOptions::prefetch_next;
// runtime_prefetch.cpp).
// open() and the close of a model wait for the running inference and block the others
// meanwhile.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/compile/compile.h"
#include "runtime/multi/budget_split.h"
#include "runtime/multi/ring_split.h"
#include "runtime/multi/round_bound.h"
#include "runtime/multi/shared_memory.h"
#include "runtime/streaming/lower_bound.h"
#include "runtime/session.h"

namespace dlr {

struct RuntimeOptions {
  DeviceKind device = DeviceKind::kCUDA;
  int cuda_device = 0;
  // Device memory for every model's weights, activations and workspace together:
  // "all" (no limit: every weight resident), "NN%" of the device's memory (CUDA) or a
  // size ("150MiB", "2GB", bytes).
  std::string budget = "all";
  std::string copy_profile = "auto";  // as SessionOptions::copy_profile
  bool prefetch_next = true;          // copy a model's next first weights while others run
  // Shared ring: 1 (default): a model's prefetch runs while its predecessor runs; 2: it
  // may begin two models ahead, while the model before its predecessor runs (as much as
  // the joint plan predicts there, behind the predecessor's own prefetch). 2 helps only
  // a model whose front layers wait for the copy engine; a model that waits for ring
  // bytes to be released gains nothing (docs/streaming.md section 8).
  int prefetch_depth = 1;
  int curve_points = 24;              // candidate budgets per model in the joint plan (>= 2)
  // What the joint plan minimises: the weighted sum of predicted latencies (default), or
  // the largest predicted slowdown against each model's all-resident latency.
  SplitObjective objective = SplitObjective::kSum;
  // Where the streamed models' weights pass (CUDA): one ring shared by every model
  // (default; the budget is the ring plus each model's resident blobs, multi/ring_split.h)
  // or a ring of its own per model (the knapsack over per-model curves above).
  bool shared_ring = true;
};

// The slot (bytes) a Runtime gives a model opened without slot_bytes when the shared
// ring of its whole layers does not fit the budget: two such slots are the ring's floor.
inline constexpr int64_t kRuntimeSlotBytes = int64_t(1) << 20;

class Runtime;

// A model opened on a Runtime. Closing it (the destructor) returns its memory and
// plans the split of the others again. Must not outlive its runtime.
class RuntimeModel {
 public:
  ~RuntimeModel();
  RuntimeModel(const RuntimeModel&) = delete;
  RuntimeModel& operator=(const RuntimeModel&) = delete;
  Expected<std::vector<Detection>> detect(const ImageView& image) { return m_session->detect(image); }
  Expected<std::vector<std::vector<Detection>>> detect_batch(const ImageView* images, int n) {
    return m_session->detect_batch(images, n);
  }
  Session& session() { return *m_session; }
  const Session& session() const { return *m_session; }
  const std::string& name() const { return m_name; }
  double weight() const { return m_weight; }

 private:
  friend class Runtime;
  RuntimeModel() = default;
  Runtime* m_runtime = nullptr;
  std::unique_ptr<Session> m_session;
  std::string m_name;
  double m_weight = 1;
};

// Device memory of a runtime, each part named (bytes).
struct RuntimeMemory {
  struct Model {
    std::string name;
    int64_t weight_budget = 0;  // resident + pool, as the joint plan gave it (CPU from storage: the kept blobs)
    int64_t resident = 0;       // weights uploaded once (CPU from storage: blobs kept in memory)
    int64_t pool = 0;           // streaming pool (with a shared ring: the ring, counted once in `ring`)
    bool shared_ring = false;   // it streams through the runtime's shared ring
    int64_t streamed = 0;       // bytes copied per inference before prefetch (CPU from storage: read)
    int64_t prefetched = 0;     // of those, copied ahead of the inference
    int64_t arena_need = 0;     // its activations (inside the shared arena)
    int64_t workspace_need = 0;
    int64_t other = 0;          // its input and image staging on the device
    int64_t host_weights = 0;   // host memory for its weights: the pinned store, or the staging for reads
    double predicted_ms = 0;    // its latency in the joint plan
  };
  int64_t budget = 0;           // 0: no limit
  int64_t arena = 0;            // shared activation arena
  int64_t workspace = 0;        // shared workspace
  int64_t weights = 0;          // every model's resident + pool, and the shared ring
  int64_t ring = 0;             // of which the shared ring
  int64_t other = 0;
  int64_t host_weights = 0;
  std::vector<Model> models;
  int64_t total() const { return arena + workspace + weights; }  // what the budget covers
  std::string to_text() const;
};

class Runtime final : public SessionHost {
 public:
  static Expected<std::unique_ptr<Runtime>> create(const RuntimeOptions& options);
  // Every model must be closed first (a model left open is logged and its runtime
  // pointer would dangle: close models before their runtime).
  ~Runtime() override;

  // Opens a model on the runtime. options as for Session::open; device and
  // cuda_device must be the runtime's; on the GPU the runtime sets mode (stream), the
  // weight budget, prefetch_next (off for weights from storage), calibrate_copies (off: the
  // joint plan predicts with the runtime's copy profile) and shared_memory itself;
  // weights from storage run three stages there (zero copy is refused). weight: the
  // model's priority or expected rate (> 0); options.prefetch_lead_ms: host time before its
  // inferences that its prefetch may count. A model without slot_bytes whose joint plan
  // holds no shared ring of whole layers is opened again with kRuntimeSlotBytes (its
  // layers above the slot sliced or kept whole in the shared arena, as a session does
  // under a budget below its smallest pool of whole layers).
  Expected<std::unique_ptr<RuntimeModel>> open(const std::string& cfg_path, const std::string& weights_path,
                                               SessionOptions options, double weight = 1);

  RuntimeMemory memory() const;
  const RuntimeOptions& options() const { return m_options; }
  int64_t budget_bytes() const { return m_budget; }  // 0: no limit
  std::string plan_text() const;                      // the last joint plan, one line per model
  // The lower bound of a round robin over the open models in the order they were opened
  // (multi/round_bound.h), every byte at `gbps` (0: the planning profile's peak), with
  // their kernel times measured at open and the arena's idle bytes of the models that
  // stage. Shared ring and a budget only; unsupported otherwise.
  Expected<RoundBound> round_bound(double gbps = 0) const;
  // Each open model's latency lower bound alone within the same weight budget
  // (streaming/lower_bound.h, latency_lower_bound), with the budget's ring full of its
  // first weights when it starts (copies_before: as after a host gap long enough for any
  // prefetch) and the arena's idle bytes counted where it stages: what no pacing, split
  // or schedule of dlrun's model beats for that model's plan (its steps as compiled). In
  // the order opened; the same conditions as round_bound.
  Expected<std::vector<LatencyBound>> alone_bounds() const;

  // SessionHost
  const Target& target() const override { return m_target; }
  Status attach(Engine& engine) override;
  Expected<Placement> placement(const CompiledModel& model, const std::vector<double>& layer_ms) override;
  Status bind_ring(Engine& engine) override;
  // Another model's prefetch into the shared ring is given up when it does not run next.
  Status starting(Engine& engine) override;
  std::mutex& run_mutex() override { return m_mutex; }
  // Prefetches the model expected next behind `engine`'s copies: the one whose thread
  // has waited longest for the run lock, else the one that ran least recently (the next
  // in a round robin; `engine` itself when it is the only model).
  Status launched(Engine& engine) override;
  void queued(const Engine& engine, bool waiting) override;

 private:
  friend class RuntimeModel;
  struct Member {
    RuntimeModel* model = nullptr;
    ModelCurve curve;   // per-model rings: empty when the model does not stream
    // Shared ring: the model's inputs to the joint plan (ring.plan points at plan_copy);
    // plan_copy is null when the model does not stream.
    RingModel ring;
    std::shared_ptr<ExecutionPlan> plan_copy;
    Placement given;           // shared ring: what the last joint plan gave it
    uint64_t last_launch = 0;  // launch sequence number of its last inference (0: none yet)
    int64_t prefetch_early = 0;  // shared ring: its prefetch two models ahead (RingSplit::prefetch_early)
  };
  bool shared() const { return m_options.shared_ring && m_target.device == DeviceKind::kCUDA; }
  // round_bound and alone_bounds (mutex held): the weight budget they bound within (the
  // budget less the shared arena and workspace), or why there is none; `what` starts
  // the message.
  Expected<int64_t> bound_weight_bytes(const std::string& what) const;
  // Shared ring: the joint plan with the members (+ `extra`), fills m_plan_text.
  Expected<RingSplit> split_ring(const RingModel* extra);
  // Shared ring: gives every streamed member its placement of `split` (the ring freed
  // first, allocated again at its new size, every member bound to it); the model being
  // opened (not a member yet) is bound later at the ring offset after the members'
  // (m_pending_offset, bind_ring).
  Status apply_ring(const RingSplit& split);
  // Binds every member streaming through the ring, each after the previous one's stream.
  Status bind_members();
  // Gives up a pending prefetch into the shared ring (before the ring changes).
  Status cancel_prefetch();
  // The member expected to run after `launched` (run lock held); nullptr when none.
  // `skip`: a member left out (the one expected first, when asking for the one after it).
  Member* expected_next(const Engine& launched, const Member* skip = nullptr);
  // Shared ring: gives up every pending prefetch other than `engine`'s whose bytes lie
  // where `engine` writes: its whole stream (`whole`, it is about to run) or its prefetch
  // of `bytes` (the waiter's streams then follow the given-up copies).
  Status drop_overlapping(Engine& engine, bool whole, int64_t bytes);
  void add_owner(Engine* engine);
  Runtime() = default;
  void close(RuntimeModel* model);
  // Sizes the shared memory to the largest need of the open engines (and `extra`),
  // binding every engine again when it moves.
  Status fit_shared_memory(Engine* extra);
  // The joint split for the members (+ `extra` curve) within the budget left after the
  // shared memory; fills m_plan_text.
  Expected<BudgetSplit> split(const ModelCurve* extra);
  // Moves members to `split`'s budgets: those that shrink first (shrink_only), or all.
  Status apply(const BudgetSplit& split, bool shrink_only);
  // Plans the split of the members again and moves them to it (either design).
  Status replan_all();
  // The errors of a split: the shared memory (and unstreamed weights, `fixed` bytes)
  // leave no weight budget; the split itself failed.
  Status no_weight_budget(int64_t fixed) const;
  // Session::open_hosted with the pending state reset; a failed open gives back what it
  // grew and what the others gave up for it.
  Expected<std::unique_ptr<Session>> open_session(const std::string& cfg_path, const std::string& weights_path,
                                                  const SessionOptions& options);
  Status split_failed(const Status& why, int64_t fixed) const;
  RuntimeMemory memory_locked() const;

  RuntimeOptions m_options;
  Target m_target;
  int64_t m_budget = 0;  // 0: none
  std::unique_ptr<SharedMemory> m_shared;
  std::vector<Member> m_members;
  std::string m_pending_name;
  ModelCurve m_pending_curve;
  double m_pending_weight = 1;
  RingModel m_pending_ring;
  std::shared_ptr<ExecutionPlan> m_pending_plan;
  int64_t m_pending_offset = 0;
  Placement m_pending_given;     // shared ring: what the joint plan gave the model being opened
  bool m_pending_ring_refused = false;  // shared ring: the joint plan with it found no ring
  // The engines whose prefetch into the shared ring is pending (the next model's, and
  // the one two ahead), at most two.
  std::vector<Engine*> m_prefetch_owners;
  std::string m_plan_text;
  mutable std::mutex m_mutex;  // runs, opens, closes
  uint64_t m_launches = 0;     // under m_mutex
  // Sessions waiting for the run lock: engine and arrival number, at most kMaxWaiting
  // (more are not recorded: the order is a prefetch hint). Fixed storage: detect()
  // allocates nothing for it. Under m_queue_mutex.
  static constexpr int kMaxWaiting = 64;
  std::mutex m_queue_mutex;
  std::array<std::pair<const Engine*, uint64_t>, kMaxWaiting> m_waiting{};
  int m_n_waiting = 0;
  uint64_t m_arrivals = 0;
};

}  // namespace dlr
