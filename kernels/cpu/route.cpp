// copy_channels: the route layer's copy (route_layer.c forward_route_layer), fp32 NCHW.
//
// Contract: src and dst have equal n, c, h, w; per image the c planes of each view
// are contiguous (channel slices allowed), so each image is one block copy of
// c*h*w floats. src and dst are the same view or do not overlap; when they are
// the same memory nothing is copied. A route of several inputs (or groups/group_id)
// is a sequence of such copies into channel slices of the route's output.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_ops.h"
#include "runtime/core/status.h"

namespace dlr::cpu {

void copy_channels(const TensorView& src, const TensorView& dst) {
  DLR_ASSERT(src.dtype == DType::kF32 && src.layout == Layout::kNCHW && src.data != nullptr);
  DLR_ASSERT(dst.dtype == DType::kF32 && dst.layout == Layout::kNCHW && dst.data != nullptr);
  DLR_ASSERT(src.n == dst.n && src.shape() == dst.shape());
  if (src.data == dst.data && (src.n == 1 || src.n_stride == dst.n_stride)) return;
  const int64_t count = src.shape().count();
  if (count == 0) return;
  // Blocks of ~64 KiB so that both threads share large copies.
  constexpr int64_t kBlock = 16384;
  const int64_t blocks_per_image = (count + kBlock - 1) / kBlock;
  const int64_t total = blocks_per_image * src.n;
#pragma omp parallel for schedule(static) if (total > 1)
  for (int64_t i = 0; i < total; ++i) {
    const int b = int(i / blocks_per_image);
    const int64_t begin = (i % blocks_per_image) * kBlock;
    const int64_t len = std::min(kBlock, count - begin);
    std::memcpy(dst.f32() + b * dst.n_stride + begin, src.f32() + b * src.n_stride + begin,
                sizeof(float) * size_t(len));
  }
}

// Entry point of [route] (cpu_ops.h OpCall): the copies the planner left (views need none).
void run_route(const OpCall& call) {
  for (int i = 0; i < call.n_copies; ++i) copy_channels(call.copies[i].first, call.copies[i].second);
}

}  // namespace dlr::cpu
