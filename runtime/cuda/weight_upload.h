// Weights from a WeightSource to device memory at open, at the speed the host's cores
// prepare them: chunk after chunk (upload_chunks) through two pinned buffers, the
// copy of one chunk on the stream while the threads prepare the next. No whole-model
// copy in host memory. See docs/architecture.md, "Weights at open".
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/compile/plan.h"
#include "runtime/weight_source.h"

namespace dlr {

// The chunk size the upload aims at (a larger blob is a chunk alone).
constexpr int64_t kUploadChunkBytes = int64_t(8) << 20;

struct UploadTiming {
  double prepare_ms = 0;  // the threads preparing chunks (the copies run beside them)
  double wait_ms = 0;     // waiting for a pinned buffer's copy, and for the last copies
  int chunks = 0;
  int threads = 0;
  int64_t pinned_bytes = 0;  // the two pinned buffers
};

// Prepares the blobs with offsets[b] >= 0 (back to back, as a WeightStore of them lays
// them out) from `source` on `threads` threads and copies each to device + offsets[b]
// on `stream`. Returns when every byte has landed, or with the first error after the
// copies in flight ended (the stream is synchronised either way).
Status upload_blobs(const ExecutionPlan& plan, WeightSource& source, const std::vector<int64_t>& offsets, char* device,
                    cudaStream_t stream, int threads, UploadTiming* timing, int64_t chunk_bytes = kUploadChunkBytes);

}  // namespace dlr
