// The CUDA backend's table (runtime/device_backend.h): cuda_backend() where the backend
// is linked in, and the table the plugin's entry point returns (cuda_plugin.cpp).
#include "runtime/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <system_error>
#include <thread>

#include "kernels/cuda/cublas_loader.h"
#include "runtime/core/log.h"
#include "runtime/cuda/context_init.h"
#include "runtime/cuda/cuda_engine.h"

namespace dlr {
namespace {

// The CUDA context and a cuDNN handle made on a helper thread (runtime/cuda/context_init.h),
// and cuBLAS loaded on a second one when the plan may use it (load_for).
class CudaStart final : public DeviceStart {
 public:
  explicit CudaStart(int index) : m_init(index) {}
  ~CudaStart() override {
    if (m_libraries.joinable()) m_libraries.join();
  }
  Status wait() override { return m_init.wait(); }
  DeviceStartTiming timing() const override {
    return {m_init.context_ms(), m_init.cudnn_ms(), m_init.prime_ms(), m_init.waited_ms()};
  }
  void load_for(const CompiledModel& model) override {
    if (m_libraries.joinable() || !may_use_cublas(model)) return;
    try {
      m_libraries = std::thread([] { (void)cuda::cublas(); });  // its error is the engine's to report
    } catch (const std::system_error&) {
      // No thread: the engine loads cuBLAS itself when it needs it.
    }
  }
  CudaContextInit* init() { return &m_init; }

 private:
  // Convolutions over a concatenation's parts (NHWC plans) and fp32's 3xTF32 GEMMs run on
  // cuBLAS (runtime/cuda/cuda_engine_convs.cpp).
  static bool may_use_cublas(const CompiledModel& model) {
    for (const Step& st : model.plan.steps)
      if (st.kind == LayerKind::kConv && (st.inputs.size() > 1 || model.engine.precision == Precision::kFP32))
        return true;
    return false;
  }

  CudaContextInit m_init;
  std::thread m_libraries;
};

std::unique_ptr<DeviceStart> start(int index) { return std::make_unique<CudaStart>(index); }

Expected<std::unique_ptr<Engine>> engine(const CompiledModel& model, WeightSource& weights, DeviceStart* start) {
  auto* cuda = dynamic_cast<CudaStart*>(start);
  return create_cuda_engine(model, weights, cuda ? cuda->init() : nullptr);
}

std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
std::string cudnn_version(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
}

std::string versions() {
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  std::string out = "CUDA: built with " + cuda_version(CUDART_VERSION) + ", runtime " +
                    (runtime ? cuda_version(runtime) : std::string("unavailable")) + "\n";
  out += "cuDNN: built with " + cudnn_version(CUDNN_VERSION) + ", loaded " + cudnn_version(cudnnGetVersion()) + "\n";
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  return out + "GPU: " + (count > 0 ? cuda_device_description(0) : std::string("none found")) + "\n";
}

void attach_log(int level, void (*forward)(int level, const char* text)) {
  set_log_level(spdlog::level::level_enum(level));
  if (forward == nullptr) return set_log_callback(nullptr);
  set_log_callback([forward](spdlog::level::level_enum l, const std::string& text) { forward(int(l), text.c_str()); });
}

const DeviceBackend kTable = {start,      cuda_target,        engine,   cuda_memory_info, cuda_device_description,
                              cuda_shared_memory, versions, attach_log};

}  // namespace

const DeviceBackend* cuda_backend_table() { return &kTable; }

}  // namespace dlr
