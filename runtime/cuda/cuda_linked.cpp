// cuda_backend() where the CUDA backend is linked in: the static libraries and every
// target that links dlr_runtime without the loader (runtime/backend_loader.cpp).
#include "runtime/cuda/cuda_backend.h"

namespace dlr {

Expected<const DeviceBackend*> cuda_backend() { return cuda_backend_table(); }

}  // namespace dlr
