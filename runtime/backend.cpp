// The backend factories (backend.h): the one file that names every backend.
#include "runtime/backend.h"

#include "runtime/cpu/cpu_engine.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/context_init.h"
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr {
namespace {

Status no_cuda() { return unsupported("this dlrun was built without the CUDA backend (rebuild with -DDLR_CUDA=ON)"); }

#ifdef DLR_HAVE_CUDA
// The CUDA context and a cuDNN handle made on a helper thread (runtime/cuda/context_init.h).
class CudaStart final : public DeviceStart {
 public:
  explicit CudaStart(int index) : m_init(index) {}
  Status wait() override { return m_init.wait(); }
  DeviceStartTiming timing() const override {
    return {m_init.context_ms(), m_init.cudnn_ms(), m_init.prime_ms(), m_init.waited_ms()};
  }
  CudaContextInit* init() { return &m_init; }

 private:
  CudaContextInit m_init;
};
#endif

}  // namespace

std::unique_ptr<DeviceStart> start_device(DeviceKind device, int index) {
#ifdef DLR_HAVE_CUDA
  if (device == DeviceKind::kCUDA) return std::make_unique<CudaStart>(index);
#endif
  (void)device, (void)index;
  return nullptr;
}

Expected<Target> make_target(DeviceKind device, int index, const std::string& copy_profile) {
  if (device == DeviceKind::kCPU) return cpu_target();
#ifdef DLR_HAVE_CUDA
  return cuda_target(index, copy_profile);
#else
  (void)index, (void)copy_profile;
  return no_cuda();
#endif
}

Expected<std::unique_ptr<Engine>> create_engine(const CompiledModel& model, WeightSource& weights,
                                                DeviceStart* start) {
  if (model.engine.device == DeviceKind::kCPU) {
    DLR_ASSIGN_OR_RETURN(std::unique_ptr<CpuEngine> e, CpuEngine::create(model, weights));
    return std::unique_ptr<Engine>(std::move(e));
  }
#ifdef DLR_HAVE_CUDA
  auto* cuda = dynamic_cast<CudaStart*>(start);
  return create_cuda_engine(model, weights, cuda ? cuda->init() : nullptr);
#else
  (void)weights, (void)start;
  return no_cuda();
#endif
}

Status device_memory_info(DeviceKind device, int index, int64_t* free_bytes, int64_t* total_bytes) {
  if (device == DeviceKind::kCPU) return unsupported("no device memory on the CPU");
#ifdef DLR_HAVE_CUDA
  return cuda_memory_info(index, free_bytes, total_bytes);
#else
  (void)index, (void)free_bytes, (void)total_bytes;
  return no_cuda();
#endif
}

std::string device_description(DeviceKind device, int index) {
  if (device == DeviceKind::kCPU) return "cpu";
#ifdef DLR_HAVE_CUDA
  return cuda_device_description(index);
#else
  (void)index;
  return "none";
#endif
}

Expected<std::unique_ptr<SharedMemory>> make_shared_memory(DeviceKind device, int index) {
  if (device == DeviceKind::kCPU) return host_shared_memory();
#ifdef DLR_HAVE_CUDA
  return cuda_shared_memory(index);
#else
  (void)index;
  return no_cuda();
#endif
}

}  // namespace dlr
