// CpuEngine: walks an ExecutionPlan with the CPU reference ops (kernels/cpu),
// fp32 NCHW, weights prepared once at open in host memory, or (weights from storage,
// model.from_storage) read each inference from a prepared weight file into a bounded
// staging area that the convolutions read directly (read_pipeline.h: two stages, the
// reads of later layers overlapping the compute of earlier ones).
#pragma once

#include <memory>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/compile/compiled_model.h"
#include "runtime/engine.h"
#include "runtime/engine_sharing.h"
#include "runtime/storage/read_pipeline.h"
#include "runtime/weight_store.h"

namespace dlr {

class CpuEngine final : public Engine, public SharedMemoryClient {
 public:
  // model.plan must be fp32 NCHW (PlannerOptions defaults). Weights are prepared
  // from `weights` at create; it is not used afterwards.
  static Expected<std::unique_ptr<CpuEngine>> create(const CompiledModel& model, WeightSource& weights);

  DeviceKind device() const override { return DeviceKind::kCPU; }
  const ExecutionPlan& plan() const override { return m_plan; }
  Status set_images(const ImageU8* images, int n, bool letterbox) override;
  Status set_input(const float* nchw, int n) override;
  Status reserve_images(int max_width, int max_height) override;
  Status run() override;
  const float* output(int layer, int image) const override;
  Status read_layer(int layer, int image, std::vector<float>* out) const override;
  MemoryReport memory() const override;
  std::vector<LayerTiming> layer_timings() const override { return m_timings; }
  std::vector<ReadTiming> read_timings() const override;
  int64_t read_cached_bytes() const override;
  double last_run_ms() const override { return m_last_ms; }
  EngineOpenTiming open_timing() const override { return m_open_timing; }  // weights and buffers only
  SharedMemoryClient* shared_memory() override { return this; }
  int64_t workspace_needed() const override { return m_scratch_need * 4; }
  Status bind_shared(void* arena, int64_t arena_bytes, void* workspace, int64_t workspace_bytes) override;

 private:
  explicit CpuEngine(const CompiledModel& model)
      : m_plan(model.plan), m_storage(model.from_storage), m_reads(model.reads),
        m_shared(model.engine.shared_memory) {}
  const char* blob(int index) const;
  Status run_storage();
  TensorView view(const ViewRef& v) const;
  void run_step(const Step& s);
  void resolve_views();  // m_views from the arena's current address
  char* arena_base() const { return m_arena_ptr; }

  // Views of every step, resolved once at create (the arena never moves).
  struct StepViews {
    std::vector<TensorView> in;
    TensorView out;
    std::vector<std::pair<TensorView, TensorView>> copies;
    std::vector<std::pair<TensorView, TensorView>> packs;
    TensorView residual;  // Step::residual (data null: none)
  };

  ExecutionPlan m_plan;
  std::vector<StepViews> m_views;
  WeightStore m_weights;             // preload: every blob; storage: the blobs the read plan keeps (offset -1)
  bool m_storage = false;             // weights from storage: m_staging + m_pipeline (none if every blob is kept)
  ReadPlan m_reads;
  HostBuffer m_staging;
  std::unique_ptr<ReadPipeline> m_pipeline;
  HostBuffer m_arena;                 // own (not shared_memory)
  std::vector<float> m_scratch;       // im2col, one image (own)
  char* m_arena_ptr = nullptr;        // m_arena or the runtime's
  float* m_scratch_ptr = nullptr;     // m_scratch or the runtime's workspace
  int64_t m_scratch_need = 0;         // floats
  int m_scratch_threads = 1;          // threads the scratch holds a conv tile for (the team's cap)
  bool m_shared = false;              // shared_memory: arena and scratch are a Runtime's
  std::vector<float> m_image_tmp;     // pre-processing staging, grows with image size
  std::vector<LayerTiming> m_timings;
  EngineOpenTiming m_open_timing;
  double m_last_ms = 0;
};

// Shared by engines: pre-processes one image into a 3 x net_h x net_w fp32 planar tensor.
// tmp grows to the size the image needs.
void preprocess_image_cpu(const ImageU8& img, int net_w, int net_h, bool letterbox, float* dst,
                          std::vector<float>* tmp);

}  // namespace dlr
