// dlrun public API: several networks on one device under one memory budget.
//
//   dlrun::RuntimeOptions ro;                         // CUDA device 0
//   ro.budget = "40%";                                // of the GPU's memory, for everything
//   auto rt = dlrun::Runtime::create(ro);             // Result<Runtime>
//   auto people = rt->open("yolov4.cfg", "yolov4.weights");              // Result<Session>
//   auto signs = rt->open("yolov4-tiny.cfg", "signs.weights", {}, 2.0);  // weight 2: its latency counts twice
//   auto dets = people->detect(image);                // any thread, any session
//
// Sessions opened on a runtime share one activation arena and one workspace (the
// networks run one at a time, in the order their detect() calls get the runtime's
// lock) and one budget for all device memory: the shared arena and workspace plus
// each network's weights, of which the runtime keeps resident the layers its plan
// says are worth it and streams the rest (docs/streaming.md section 8). Opening or
// closing a session plans the split again; closing returns its memory. On the GPU the
// runtime sets each session's mode (stream), weight budget and prefetch itself; the
// other Options apply as for Session::open (device and cuda_device must be the
// runtime's). A network with weights_from_storage reads them each inference into its
// own staging (on the GPU read -> copy -> kernel: zero_copy must not be 1).
//
// Threads: detect() may be called from any thread on any session of a runtime, also
// on one session from several threads (its calls are serialised); read a session's
// last_report() on the thread that called its detect(), not during another thread's.
// Outputs are those of the same network opened alone, bit for bit.
//
// Lifetime: a Runtime is a handle; the runtime itself lives until the handle and every
// session opened on it are gone, so sessions may outlive the handle. Move-only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dlrun/options.h"
#include "dlrun/result.h"
#include "dlrun/session.h"

namespace dlrun {

// What the joint plan minimises: the weighted sum of the networks' predicted
// latencies, or the largest predicted slowdown against each one's all-resident latency.
enum class SplitObjective : uint8_t { kSum, kMaxSlowdown };

struct RuntimeOptions {
  Device device = Device::kCUDA;
  int cuda_device = 0;
  // Device memory for every network's weights, activations and workspace together:
  // "all" (no limit), "NN%" of the device's memory (CUDA) or a size ("150MiB", "2GB",
  // bytes). Opening a network the budget cannot hold fails and changes nothing.
  std::string budget = "all";
  std::string copy_profile = "auto";  // as Options::copy_profile
  bool prefetch_next = true;          // copy the next network's first weights while another runs
  // With a shared ring: 1 (default): a network's prefetch runs while its predecessor runs;
  // 2: it may begin two networks ahead (as much as the joint plan predicts fits before the
  // next one runs).
  int prefetch_depth = 1;
  SplitObjective objective = SplitObjective::kSum;
  // CUDA: one ring shared by every streamed network (default: every byte of it is
  // lookahead for whichever network runs), or a ring of its own per network.
  bool shared_ring = true;
};

// Device memory of a runtime, each part named (bytes).
struct RuntimeMemory {
  struct Network {
    std::string name;           // the cfg's file name
    int64_t weight_budget = 0;  // resident + pool, as the joint plan gave it (CPU from storage: the kept blobs)
    int64_t resident = 0;       // weights uploaded once (CPU from storage: blobs kept in memory)
    int64_t pool = 0;           // streaming pool (with a shared ring: the ring, counted once in RuntimeMemory::ring)
    bool shared_ring = false;   // it streams through the runtime's shared ring
    int64_t streamed = 0;       // bytes copied (CPU from storage: read) per inference
    int64_t prefetched = 0;     // of those, copied ahead of the inference
    int64_t activations = 0;    // its need (inside the shared arena)
    int64_t workspace = 0;      // its need (inside the shared workspace)
    int64_t other = 0;          // its input and image staging on the device
    int64_t host_weights = 0;   // host memory for its weights: the pinned store, or the staging for reads
    double predicted_ms = 0;    // its latency in the joint plan
  };
  int64_t budget = 0;           // 0: no limit
  int64_t activations = 0;      // the shared arena
  int64_t workspace = 0;        // the shared workspace
  int64_t weights = 0;          // every network's resident + pool, and the shared ring
  int64_t ring = 0;             // of which the shared ring
  int64_t other = 0;
  int64_t host_weights = 0;
  std::vector<Network> networks;
  int64_t total() const { return activations + workspace + weights; }  // what the budget covers
};

class Runtime {
 public:
  static Result<Runtime> create(const RuntimeOptions& options = {});
  Runtime(Runtime&&) noexcept;
  Runtime& operator=(Runtime&&) noexcept;
  ~Runtime();

  // Opens a network on the runtime. weight (> 0): its priority or expected rate in the
  // joint plan.
  Result<Session> open(const std::string& cfg_path, const std::string& weights_path, const Options& options = {},
                       double weight = 1);

  RuntimeMemory memory() const;
  // The last joint plan, one line per network.
  std::string plan_text() const;
  const RuntimeOptions& options() const;

 private:
  struct Impl;
  explicit Runtime(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> m_impl;
};

}  // namespace dlrun
