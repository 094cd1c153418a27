// The two BlockReader backends, private to runtime/storage/. Each takes over an open
// file descriptor (closed by ~BlockReader, also when opening the backend fails) and
// the file's size.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/storage/block_reader.h"

namespace dlr::storage_detail {

// Per-read bookkeeping shared by the backends: one slot per read in flight.
struct Slot {
  int64_t ticket = -1;  // -1: free
  ReadRequest req;
  int64_t done = 0;     // bytes read so far (short reads are continued)
  bool cached = false;  // cache hits: being read through the page cache (until a page is not there)
};

// The slots of the reads in flight, shared by the backends: `queue_depth` slots, a
// stack of the free ones, and tickets 0, 1, 2, ... in submit order. Used by the
// submitting thread only (the thread backend calls take/release under its mutex, so
// its workers see the slot fields consistently). Nothing is allocated after the
// constructor.
template <class S>
class SlotTable {
 public:
  explicit SlotTable(int queue_depth) : m_slots(size_t(queue_depth)), m_free(size_t(queue_depth)) {
    for (int i = 0; i < queue_depth; ++i) m_free[size_t(i)] = queue_depth - 1 - i;
    m_free_count = queue_depth;
  }
  // Takes a free slot (the caller keeps fewer than queue_depth reads in flight), gives it
  // the next ticket and `r` with nothing read yet, and returns its index.
  int take(const ReadRequest& r) {
    const int idx = m_free[size_t(--m_free_count)];
    S& s = m_slots[size_t(idx)];
    s.ticket = m_next_ticket++;
    s.req = r;
    s.done = 0;
    s.cached = false;
    return idx;
  }
  void release(int idx) {
    m_slots[size_t(idx)].ticket = -1;
    m_free[size_t(m_free_count++)] = idx;
  }
  S& operator[](int idx) { return m_slots[size_t(idx)]; }
  const std::vector<S>& all() const { return m_slots; }
  std::vector<S>& all() { return m_slots; }
  // A ticket never issued (outside [0, next ticket)) is a caller's error naming the file.
  Status check_ticket(const std::string& path, int64_t ticket) const {
    if (ticket >= 0 && ticket < m_next_ticket) return Status();
    return invalid_argument("block reader for '" + path + "': wait for ticket " + std::to_string(ticket) +
                            ", which was never issued (next: " + std::to_string(m_next_ticket) + ")");
  }

 private:
  std::vector<S> m_slots;
  std::vector<int> m_free;  // stack of free slot indices
  int m_free_count = 0;
  int64_t m_next_ticket = 0;
};

// "uring" unless this build has no liburing or the kernel refuses a ring: then an
// unsupported error (one line, with the reason).
Expected<std::unique_ptr<BlockReader>> open_uring_reader(const std::string& path, int fd, bool direct,
                                                         int queue_depth, int64_t file_bytes);
// Its queue_depth workers are started placed as `threads` says, named "dlr-pread".
Expected<std::unique_ptr<BlockReader>> open_thread_reader(const std::string& path, int fd, bool direct,
                                                          int queue_depth, int64_t file_bytes,
                                                          const ThreadPlacement& threads);
bool uring_compiled_in();
// Creates and destroys a ring of 1 entry; 0 or the negative errno of io_uring_queue_init.
int uring_probe();

}  // namespace dlr::storage_detail
