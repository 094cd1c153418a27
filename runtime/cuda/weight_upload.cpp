#include "runtime/cuda/weight_upload.h"

#include <algorithm>
#include <chrono>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_handles.h"
#include "runtime/core/clock.h"
#include "runtime/weight_store.h"

namespace dlr {
namespace {

// Synchronises the stream when it goes out of scope, so that no copy still reads a
// pinned buffer when the buffers are freed (on an error return too).
struct StreamDrain {
  cudaStream_t stream;
  ~StreamDrain() { DLR_CUDA_CHECK_LOG(cudaStreamSynchronize(stream)); }
};

}  // namespace

Status upload_blobs(const ExecutionPlan& plan, WeightSource& source, const std::vector<int64_t>& offsets, char* device,
                    cudaStream_t stream, int threads, UploadTiming* timing, int64_t chunk_bytes) {
  const std::vector<UploadChunk> chunks = upload_chunks(plan, offsets, chunk_bytes);
  int64_t largest = 0;
  for (const UploadChunk& c : chunks) largest = std::max(largest, c.bytes);
  timing->chunks = int(chunks.size());
  timing->threads = threads;
  if (chunks.empty()) return Status();
  const int buffers = chunks.size() > 1 ? 2 : 1;
  cuda::PinnedBuffer pinned[2];
  cuda::Event copied[2];
  for (int k = 0; k < buffers; ++k) {
    DLR_ASSIGN_OR_RETURN(pinned[k], cuda::PinnedBuffer::alloc(size_t(largest)));
    DLR_ASSIGN_OR_RETURN(copied[k], cuda::make_event(false));
  }
  timing->pinned_bytes = largest * buffers;
  StreamDrain drain{stream};  // declared after the buffers: drains before they are freed
  std::vector<int64_t> local(offsets.size(), -1);
  for (size_t c = 0; c < chunks.size(); ++c) {
    const UploadChunk& ch = chunks[c];
    const int k = int(c % size_t(buffers));
    auto t0 = Clock::now();
    if (c >= size_t(buffers)) DLR_CUDA_CHECK(cudaEventSynchronize(copied[k].get()));  // its previous chunk landed
    timing->wait_ms += ms_since(t0);
    std::fill(local.begin(), local.end(), -1);
    for (int b = ch.first; b < ch.end; ++b)
      if (offsets[size_t(b)] >= 0) local[size_t(b)] = offsets[size_t(b)] - ch.offset;
    t0 = Clock::now();
    DLR_RETURN_IF_ERROR(prepare_blobs(plan, source, local, static_cast<char*>(pinned[k].data()), threads));
    timing->prepare_ms += ms_since(t0);
    DLR_CUDA_CHECK(cudaMemcpyAsync(device + ch.offset, pinned[k].data(), size_t(ch.bytes), cudaMemcpyHostToDevice,
                                   stream));
    DLR_CUDA_CHECK(cudaEventRecord(copied[k].get(), stream));
  }
  const auto t0 = Clock::now();
  DLR_CUDA_CHECK(cudaStreamSynchronize(stream));
  timing->wait_ms += ms_since(t0);
  return Status();
}

}  // namespace dlr
