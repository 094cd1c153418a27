// The CUDA device as a compile target (cuda_target: its properties and its copy profile)
// and the device queries of reports.
#include <mutex>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "runtime/cache/cache_dir.h"
#include "runtime/core/log.h"
#include "runtime/cuda/copy_probe.h"
#include "runtime/cuda/cuda_engine_impl.h"
#include "runtime/streaming/profile_select.h"

namespace dlr {

Status check_cuda_device(int device) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return Status(StatusCode::kCudaError, std::string("device cuda: no usable CUDA device (") + cudaGetErrorName(e) +
                                              ": " + cudaGetErrorString(e) + ")");
  if (count == 0) return Status(StatusCode::kCudaError, "device cuda: no CUDA device is available");
  if (device < 0 || device >= count)
    return invalid_argument("CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                            " found)");
  return Status();
}

Status cuda_memory_info(int device, int64_t* free_bytes, int64_t* total_bytes) {
  DLR_RETURN_IF_ERROR(check_cuda_device(device));  // no device, no driver: one line, not cudaSetDevice's failure
  DLR_CUDA_CHECK(cudaSetDevice(device));
  size_t f = 0, t = 0;
  DLR_CUDA_CHECK(cudaMemGetInfo(&f, &t));
  *free_bytes = int64_t(f);
  *total_bytes = int64_t(t);
  return Status();
}

std::string cuda_device_description(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return "no CUDA device";
  int driver = 0;
  cudaDriverGetVersion(&driver);
  const size_t cudnn = cudnnGetVersion();
  return std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
         std::to_string(prop.multiProcessorCount) + " SMs, driver CUDA " + std::to_string(driver / 1000) + "." +
         std::to_string((driver % 1000) / 10) + ", cuDNN " + std::to_string(cudnn / 10000) + "." +
         std::to_string((cudnn % 10000) / 100) + "." + std::to_string(cudnn % 100);
}

Expected<Target> cuda_target(int device, const std::string& copy_profile) {
  DLR_RETURN_IF_ERROR(check_cuda_device(device));
  cudaDeviceProp prop{};
  DLR_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  Target t;
  t.device = DeviceKind::kCUDA;
  t.name = cuda_device_description(device);
  t.integrated = prop.integrated != 0;
  t.memory_bytes = int64_t(prop.totalGlobalMem);
  t.tf32_tensor_cores = prop.major >= 8;
  DLR_ASSIGN_OR_RETURN(t.map_granularity, cuda::MirroredBuffer::granularity(device));
  if (copy_profile.empty()) return t;  // no copies planned (preload): no profile
  if (copy_profile != "auto") {
    DLR_ASSIGN_OR_RETURN(t.copy_profile, CopyProfile::resolve(copy_profile));
    t.copy_profile_source = "given (copy_profile " + copy_profile + ")";
    DLR_LOG_INFO("copy profile {}: {}", t.copy_profile.name, t.copy_profile_source);
    return t;
  }
  // auto: this GPU's own profile (cache by UUID, else a brief probe, else the nearest built-in).
  GpuIdentity gpu;
  gpu.uuid = uuid_hex(prop.uuid.bytes);
  gpu.name = prop.name;
  gpu.integrated = prop.integrated != 0;
  gpu.major = prop.major;
  gpu.minor = prop.minor;
  const Expected<std::string> dir = user_cache_dir();
  const ProbeFunction probe = [device](double* seconds) -> Expected<CopyProfile> {
    // The context first (cudaFree(nullptr) creates it), so the probe's reported time is
    // the probe's own; an open creates the context anyway.
    DLR_CUDA_CHECK(cudaSetDevice(device));
    DLR_CUDA_CHECK(cudaFree(nullptr));
    probe::ProbeOptions o;
    o.device = device;
    o.brief = true;
    o.progress = false;
    o.max_bytes = int64_t(16) << 20;
    DLR_ASSIGN_OR_RETURN(probe::ProbeResult r, probe::run_probe(o));
    *seconds = r.seconds;
    return probe::profile_from_probe(r, "");
  };
  // One probe at a time in this process: sessions opened together on a new GPU would
  // disturb each other's measurements; the second one then reads the cache.
  static std::mutex probe_mutex;
  const std::lock_guard<std::mutex> lock(probe_mutex);
  ResolvedProfile r = resolve_auto_profile(gpu, dir.ok() ? *dir : std::string(), probe,
                                           dir.ok() ? std::string() : dir.status().message());
  t.copy_profile = std::move(r.profile);
  t.copy_profile_source = std::move(r.source);
  if (r.cached || r.probed)
    DLR_LOG_INFO("copy profile auto -> {}: {}", t.copy_profile.name, t.copy_profile_source);
  else
    DLR_LOG_WARN("copy profile auto -> {}: {}", t.copy_profile.name, t.copy_profile_source);
  return t;
}

}  // namespace dlr
