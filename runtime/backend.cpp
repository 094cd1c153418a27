// The backend factories (backend.h): the CPU directly, CUDA through its table
// (device_backend.h), linked in or loaded from libdlrun-cuda.so.
#include "runtime/backend.h"

#include "runtime/cpu/cpu_engine.h"
#include "runtime/device_backend.h"

namespace dlr {

std::unique_ptr<DeviceStart> start_device(DeviceKind device, int index) {
  if (device == DeviceKind::kCPU) return nullptr;  // nothing to start
  Expected<const DeviceBackend*> cuda = cuda_backend();
  if (!cuda.ok()) return nullptr;  // make_target reports it
  return (*cuda)->start_device(index);
}

Expected<Target> make_target(DeviceKind device, int index, const std::string& copy_profile) {
  if (device == DeviceKind::kCPU) return cpu_target();
  DLR_ASSIGN_OR_RETURN(const DeviceBackend* cuda, cuda_backend());
  return cuda->make_target(index, copy_profile);
}

Expected<std::unique_ptr<Engine>> create_engine(const CompiledModel& model, WeightSource& weights,
                                                DeviceStart* start) {
  if (model.engine.device == DeviceKind::kCPU) {
    DLR_ASSIGN_OR_RETURN(std::unique_ptr<CpuEngine> e, CpuEngine::create(model, weights));
    return std::unique_ptr<Engine>(std::move(e));
  }
  DLR_ASSIGN_OR_RETURN(const DeviceBackend* cuda, cuda_backend());
  return cuda->create_engine(model, weights, start);
}

Status device_memory_info(DeviceKind device, int index, int64_t* free_bytes, int64_t* total_bytes) {
  if (device == DeviceKind::kCPU) return unsupported("no device memory on the CPU");
  DLR_ASSIGN_OR_RETURN(const DeviceBackend* cuda, cuda_backend());
  return cuda->memory_info(index, free_bytes, total_bytes);
}

std::string device_description(DeviceKind device, int index) {
  if (device == DeviceKind::kCPU) return "cpu";
  Expected<const DeviceBackend*> cuda = cuda_backend();
  return cuda.ok() ? (*cuda)->description(index) : "none";
}

Expected<std::unique_ptr<SharedMemory>> make_shared_memory(DeviceKind device, int index) {
  if (device == DeviceKind::kCPU) return host_shared_memory();
  DLR_ASSIGN_OR_RETURN(const DeviceBackend* cuda, cuda_backend());
  return cuda->shared_memory(index);
}

std::string device_versions(DeviceKind device) {
  if (device == DeviceKind::kCPU) return "";
  Expected<const DeviceBackend*> cuda = cuda_backend();
  if (cuda.ok()) return (*cuda)->versions();
  return "CUDA: " + cuda.status().message() + "\n";
}

}  // namespace dlr
