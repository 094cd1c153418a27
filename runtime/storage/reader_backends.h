// The two BlockReader backends, private to runtime/storage/. Each takes over an open
// file descriptor (closed by ~BlockReader, also when opening the backend fails) and
// the file's size.
#pragma once

#include <memory>
#include <string>

#include "runtime/storage/block_reader.h"

namespace dlr::storage_detail {

// Per-read bookkeeping shared by the backends: one slot per read in flight.
struct Slot {
  int64_t ticket = -1;  // -1: free
  ReadRequest req;
  int64_t done = 0;     // bytes read so far (short reads are continued)
};

// "uring" unless this build has no liburing or the kernel refuses a ring: then an
// unsupported error (one line, with the reason).
Expected<std::unique_ptr<BlockReader>> open_uring_reader(const std::string& path, int fd, bool direct,
                                                         int queue_depth, int64_t file_bytes);
Expected<std::unique_ptr<BlockReader>> open_thread_reader(const std::string& path, int fd, bool direct,
                                                          int queue_depth, int64_t file_bytes);
bool uring_compiled_in();
// Creates and destroys a ring of 1 entry; 0 or the negative errno of io_uring_queue_init.
int uring_probe();

}  // namespace dlr::storage_detail
