// MirroredBuffer (mirrored_buffer.h): cuMemCreate one physical allocation, reserve
// twice its size of address space, map it at both halves, grant the device
// read/write access. Driver calls go through function pointers obtained from the
// runtime (cudaGetDriverEntryPointByVersion) once per process.
#include "runtime/cuda/mirrored_buffer.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "runtime/core/log.h"

namespace dlr::cuda {
namespace {

struct Driver {
  PFN_cuDeviceGetAttribute_v2000 device_get_attribute = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuGetErrorName_v6000 error_name = nullptr;
  std::string error;  // non-empty: some entry point is missing
};

template <class F>
void load(const char* symbol, unsigned version, F* out, std::string* error) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &fn, version, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || fn == nullptr) {
    if (error->empty())
      *error = std::string("CUDA driver entry point ") + symbol + " is not available (" +
               (e != cudaSuccess ? cudaGetErrorString(e) : "symbol not found") + ")";
    return;
  }
  *out = reinterpret_cast<F>(fn);
}

const Driver& driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] {
    load("cuDeviceGetAttribute", 2000, &d.device_get_attribute, &d.error);
    load("cuMemGetAllocationGranularity", 10020, &d.granularity, &d.error);
    load("cuMemCreate", 10020, &d.create, &d.error);
    load("cuMemRelease", 10020, &d.release, &d.error);
    load("cuMemAddressReserve", 10020, &d.reserve, &d.error);
    load("cuMemAddressFree", 10020, &d.address_free, &d.error);
    load("cuMemMap", 10020, &d.map, &d.error);
    load("cuMemUnmap", 10020, &d.unmap, &d.error);
    load("cuMemSetAccess", 10020, &d.set_access, &d.error);
    load("cuGetErrorName", 6000, &d.error_name, &d.error);
  });
  return d;
}

Status cu_status(CUresult r, const char* call) {
  const char* name = nullptr;
  if (driver().error_name) driver().error_name(r, &name);
  return Status(r == CUDA_ERROR_OUT_OF_MEMORY ? StatusCode::kOutOfMemory : StatusCode::kCudaError,
                std::string(call) + " failed: " + (name ? name : std::to_string(int(r))));
}

// Driver calls are fault-injection sites like the runtime's (site "cuda_call",
// kernels/cuda/cuda_check.h): an armed hit skips the call and fails it.
#define DLR_CU_CHECK(call)                                          \
  do {                                                              \
    if (fault::hit(cuda::kFaultSite))                               \
      return cuda::injected(cu_status(CUDA_ERROR_UNKNOWN, #call));  \
    const CUresult dlr_r_ = (call);                                 \
    if (dlr_r_ != CUDA_SUCCESS) return cu_status(dlr_r_, #call);    \
  } while (0)

#define DLR_CU_CHECK_LOG(call)                                                      \
  do {                                                                              \
    const CUresult dlr_r_ = (call);                                                 \
    if (dlr_r_ != CUDA_SUCCESS) DLR_LOG_ERROR("{}", cu_status(dlr_r_, #call).message()); \
  } while (0)

CUmemAllocationProp device_prop(int device) {
  CUmemAllocationProp p = {};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  return p;
}

}  // namespace

Expected<int64_t> MirroredBuffer::granularity(int device) {
  const Driver& d = driver();
  if (!d.error.empty()) return int64_t(0);
  // The runtime's primary context must be current for driver calls.
  DLR_CUDA_CHECK(cudaSetDevice(device));
  DLR_CUDA_CHECK(cudaFree(nullptr));
  int supported = 0;
  DLR_CU_CHECK(d.device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device));
  if (!supported) return int64_t(0);
  const CUmemAllocationProp p = device_prop(device);
  size_t g = 0;
  DLR_CU_CHECK(d.granularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  return int64_t(g);
}

Expected<MirroredBuffer> MirroredBuffer::alloc(int device, size_t bytes) {
  DLR_ASSIGN_OR_RETURN(int64_t g, granularity(device));
  if (g <= 0)
    return Status(StatusCode::kCudaError, "device " + std::to_string(device) +
                                              " has no CUDA virtual memory management (needed by the ring pool)");
  if (bytes == 0 || bytes % size_t(g) != 0)
    return invalid_argument("mirrored buffer of " + std::to_string(bytes) + " bytes: expected a positive multiple of " +
                            std::to_string(g) + " bytes");
  const Driver& d = driver();
  MirroredBuffer m;  // cleans up whatever step below fails
  const CUmemAllocationProp p = device_prop(device);
  CUmemGenericAllocationHandle h = 0;
  DLR_CU_CHECK(d.create(&h, bytes, &p, 0));
  m.m_handle = h;
  m.m_bytes = bytes;
  CUdeviceptr base = 0;
  DLR_CU_CHECK(d.reserve(&base, 2 * bytes, size_t(g), 0, 0));
  m.m_base = base;
  DLR_CU_CHECK(d.map(base, bytes, 0, h, 0));
  m.m_mapped = 1;
  DLR_CU_CHECK(d.map(base + bytes, bytes, 0, h, 0));
  m.m_mapped = 2;
  CUmemAccessDesc access = {};
  access.location = p.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  DLR_CU_CHECK(d.set_access(base, 2 * bytes, &access, 1));
  return m;
}

MirroredBuffer& MirroredBuffer::operator=(MirroredBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    m_base = std::exchange(o.m_base, 0);
    m_handle = std::exchange(o.m_handle, 0);
    m_bytes = std::exchange(o.m_bytes, 0);
    m_mapped = std::exchange(o.m_mapped, 0);
  }
  return *this;
}

void MirroredBuffer::reset() {
  if (m_base == 0 && m_handle == 0) return;
  const Driver& d = driver();
  if (m_base != 0) {
    for (int i = 0; i < m_mapped; ++i) DLR_CU_CHECK_LOG(d.unmap(CUdeviceptr(m_base + i * m_bytes), m_bytes));
    DLR_CU_CHECK_LOG(d.address_free(CUdeviceptr(m_base), 2 * m_bytes));
  }
  if (m_handle != 0) DLR_CU_CHECK_LOG(d.release(CUmemGenericAllocationHandle(m_handle)));
  m_base = 0;
  m_handle = 0;
  m_bytes = 0;
  m_mapped = 0;
}

}  // namespace dlr::cuda
