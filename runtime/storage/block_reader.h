// BlockReader: reads byte ranges of one file into caller memory, several reads in
// flight, with direct I/O (O_DIRECT: the bytes bypass the page cache) or buffered.
// With direct I/O a reader may take the bytes the page cache already holds from it
// (open's `cache_hits`): those reads are buffered and never wait for the disk, the rest
// are direct, so the cache neither grows nor is passed by for bytes already in memory.
// Two backends: io_uring (Debian's liburing, linked statically) and a pool of threads
// calling pread. Streaming reads a prepared weight file (every blob 4 KiB-aligned)
// into a pinned staging ring through it (docs/streaming.md, "Reading from storage").
// Plain C++ (no CUDA).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/core/status.h"
#include "runtime/core/thread_placement.h"
#include "runtime/core/types.h"  // ReaderKind
#include "runtime/storage/page_cache_view.h"

namespace dlr {

// True when this build has io_uring and the kernel lets this process create a ring
// (a container's seccomp profile may refuse io_uring_setup). Probed once, cached.
bool uring_available();

// One read: `bytes` bytes at `file_offset` of the file into `dst` (caller-owned; it
// must stay valid and untouched until the read's ticket has been waited on).
struct ReadRequest {
  int64_t file_offset = 0;
  int64_t bytes = 0;
  void* dst = nullptr;
};

// Reads of one file. Used by ONE thread: submit() and wait() are called from the same
// thread (the threads backend's workers are internal). Not copyable or movable.
//
// Errors: a failed read (I/O error, read past the end of the file) is sticky: its
// one-line message is returned by the wait that covers it and by every later
// submit/wait (the reader is then unusable; streaming abandons the inference).
// Nothing is allocated per read after open() (every table is sized by queue_depth);
// only building an error message allocates.
class BlockReader {
 public:
  static constexpr int64_t kDirectAlign = 4096;  // O_DIRECT offset, size and buffer alignment
  static constexpr int kMaxQueueDepth = 64;

  // direct: open with O_DIRECT; then every request's offset, bytes and dst must be
  // multiples of kDirectAlign (checked by submit, one-line error). A filesystem that
  // refuses O_DIRECT (tmpfs before Linux 6.6, some FUSE and network filesystems)
  // makes open() fail with a message saying so; there is no silent buffered fallback.
  // queue_depth: reads in flight at most, 1..64.
  // kind: kUring fails when uring_available() is false; kThreads always works; kAuto
  // takes io_uring when available, else threads (why: docs/streaming.md section 7,
  // "Reading from storage").
  // threads: the placement of the threads backend's workers (io_uring starts none).
  // cache_hits (direct only): a read whose bytes the page cache holds when it is issued
  // (mincore) is read through the cache without waiting for the disk (RWF_NOWAIT); one
  // that meets a page no longer held goes on with direct I/O from there. Its bytes are
  // the file's either way.
  static Expected<std::unique_ptr<BlockReader>> open(const std::string& path, ReaderKind kind, int queue_depth,
                                                     bool direct, const ThreadPlacement& threads = {},
                                                     bool cache_hits = false);
  virtual ~BlockReader();  // waits for (or cancels) reads in flight, then releases everything
  BlockReader(const BlockReader&) = delete;
  BlockReader& operator=(const BlockReader&) = delete;

  // Queues one read and returns its ticket (0, 1, 2, ... in submission order). Blocks
  // only while queue_depth reads are in flight: then it first waits for one of them.
  // Errors: bytes <= 0, offset < 0, a range past the file's size (as of open), direct
  // alignment, or a sticky error of an earlier read.
  virtual Expected<int64_t> submit(const ReadRequest& r) = 0;
  // Waits until read `ticket` has completed with all its bytes (short reads are
  // continued, EINTR/EAGAIN retried). An error names the file, offset, bytes and the
  // errno text; a read that meets the end of the file is an error. A ticket never
  // issued is an invalid_argument error.
  virtual Status wait(int64_t ticket) = 0;
  // As wait(), for at most `timeout_us` microseconds (>= 0): true once read `ticket` has
  // completed, false if it is still in flight when the time is up (nothing is lost: a
  // later wait or wait_for covers it). For a caller that must also watch something else
  // (streaming's reader, ReadPipeline, watches staging coming free).
  virtual Expected<bool> wait_for(int64_t ticket, int64_t timeout_us) = 0;
  virtual Status wait_all() = 0;
  virtual ReaderKind kind() const = 0;  // the backend in use (never kAuto)
  // Reads submitted and not yet reaped by a submit/wait (0..queue_depth).
  virtual int in_flight() const = 0;
  const std::string& path() const { return m_path; }
  bool direct() const { return m_direct; }
  int queue_depth() const { return m_queue_depth; }
  int64_t file_bytes() const { return m_file_bytes; }  // the file's size at open()
  int64_t bytes_read() const { return m_bytes_read; }  // bytes of completed reads, for reports
  // Of those, the bytes read from the page cache (cache_hits); any thread may ask.
  int64_t bytes_cached() const { return m_bytes_cached.load(std::memory_order_relaxed); }

 protected:
  BlockReader(std::string path, int fd, bool direct, int queue_depth, int64_t file_bytes);
  Status check_request(const ReadRequest& r) const;  // the submit() argument checks
  // "read of 'path' at offset O, B bytes failed: <what>"
  Status read_error(const ReadRequest& r, const std::string& what) const;
  // cache_hits: whether the page cache holds all of r's bytes now. Thread-safe.
  bool cached(const ReadRequest& r) const {
    return m_cache && m_cache->resident_prefix(r.file_offset, r.bytes) >= r.bytes;
  }
  // Reads r from byte `from` (a kDirectAlign multiple) on through the page cache without
  // waiting (cached() said yes) and returns where direct I/O takes over: r.bytes, or a
  // kDirectAlign multiple below it when a page was no longer held. Counts the bytes it
  // read. Thread-safe.
  int64_t read_cached(const ReadRequest& r, int64_t from);
  int cache_fd() const;  // the buffered descriptor of cache_hits (-1 without)
  void count_cached(int64_t bytes) { m_bytes_cached.fetch_add(bytes, std::memory_order_relaxed); }

  std::string m_path;
  int m_fd = -1;  // owned; closed by ~BlockReader after the backend has stopped using it
  bool m_direct = false;
  int m_queue_depth = 1;
  int64_t m_file_bytes = 0;
  int64_t m_bytes_read = 0;
  std::unique_ptr<PageCacheView> m_cache;  // cache_hits, else null
  std::atomic<int64_t> m_bytes_cached{0};
};

}  // namespace dlr
