// cuda_backend() of a build without the CUDA backend (compiled only then).
#include "runtime/device_backend.h"

namespace dlr {

Expected<const DeviceBackend*> cuda_backend() {
  return unsupported("this dlrun was built without the CUDA backend (rebuild with -DDLR_CUDA=ON)");
}

}  // namespace dlr
