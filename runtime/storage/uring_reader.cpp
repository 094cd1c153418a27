// The io_uring backend (liburing, linked statically): one ring of queue_depth entries;
// each read is one IORING_OP_READ whose user_data is its slot; a short completion is
// resubmitted for the remaining bytes, -EINTR/-EAGAIN completions are resubmitted as
// they are. With cache hits a read the page cache holds goes to the buffered descriptor
// with RWF_NOWAIT on the ring's workers (IOSQE_ASYNC), and on to direct I/O if it stops.
// Without liburing (DLR_HAVE_LIBURING undefined) opening fails with a one-line
// unsupported error and kAuto falls back to threads.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <sys/uio.h>

#include "runtime/storage/posix_fd.h"
#include "runtime/storage/reader_backends.h"

#ifdef DLR_HAVE_LIBURING
#include <liburing.h>
#endif

namespace dlr::storage_detail {

#ifdef DLR_HAVE_LIBURING
namespace {

constexpr int64_t kMaxSqe = int64_t(1) << 30;  // an SQE's length is 32-bit; larger reads go in parts

class UringReader final : public BlockReader {
 public:
  UringReader(const std::string& path, int fd, bool direct, int queue_depth, int64_t file_bytes)
      : BlockReader(path, fd, direct, queue_depth, file_bytes),
        m_slots(queue_depth) {}

  Status init() {
    const int rc = io_uring_queue_init(unsigned(m_queue_depth), &m_ring, 0);
    if (rc < 0)
      return io_error("block reader for '" + m_path + "': io_uring_queue_init(" + std::to_string(m_queue_depth) +
                      ") failed: " + errno_text(-rc));
    m_ring_ok = true;
    // Without EXT_ARG (Linux < 5.11) a timed wait would take a submission entry of its
    // own, and every entry may be a read: wait_for then waits whole, as wait does.
    m_timed_waits = (m_ring.features & IORING_FEAT_EXT_ARG) != 0;
    return Status();
  }

  ~UringReader() override {
    if (!m_ring_ok) return;
    drain();  // the kernel must be done writing into the callers' buffers
    io_uring_queue_exit(&m_ring);
  }

  Expected<int64_t> submit(const ReadRequest& r) override {
    if (!m_error.ok()) return m_error;
    DLR_RETURN_IF_ERROR(check_request(r));
    // A completion may only continue a short read (the slot stays busy): reap until one is free.
    while (m_error.ok() && m_in_flight == m_queue_depth) reap_one();
    if (!m_error.ok()) {
      drain();
      return m_error;
    }
    const int idx = m_slots.take(r);
    const int64_t ticket = m_slots[idx].ticket;
    m_slots[idx].cached = cached(r);
    ++m_in_flight;
    issue(idx);
    if (!m_error.ok()) {
      drain();
      return m_error;
    }
    return ticket;
  }

  Status wait(int64_t ticket) override {
    DLR_RETURN_IF_ERROR(m_slots.check_ticket(m_path, ticket));
    while (m_error.ok() && in_flight(ticket)) reap_one();
    if (!m_error.ok()) drain();
    return m_error;
  }

  Expected<bool> wait_for(int64_t ticket, int64_t timeout_us) override {
    DLR_RETURN_IF_ERROR(m_slots.check_ticket(m_path, ticket));
    if (timeout_us < 0) return invalid_argument("block reader for '" + m_path + "': negative wait timeout");
    // Other reads may complete first: each wait gets what is left of the time.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(timeout_us);
    bool reaped = true;
    while (m_error.ok() && reaped && in_flight(ticket)) {
      const int64_t left = std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now()).count());
      __kernel_timespec ts;
      ts.tv_sec = left / 1000000000;
      ts.tv_nsec = left % 1000000000;
      reaped = reap_one(&ts);
    }
    if (!m_error.ok()) {
      drain();
      return m_error;
    }
    return !in_flight(ticket);
  }

  Status wait_all() override {
    drain();
    return m_error;
  }

  int in_flight() const override { return m_in_flight; }
  ReaderKind kind() const override { return ReaderKind::kUring; }

 private:
  bool in_flight(int64_t ticket) const {
    for (const Slot& s : m_slots.all())
      if (s.ticket == ticket) return true;
    return false;
  }

  // Queues the rest of slot idx's read and submits it. A ring that refuses (it cannot:
  // at most queue_depth SQEs are ever outstanding) sets the sticky error.
  void issue(int idx) {
    Slot& s = m_slots[idx];
    io_uring_sqe* sqe = io_uring_get_sqe(&m_ring);
    if (!sqe) {
      fail(idx, "no free io_uring submission entry");
      return;
    }
    const int64_t len = std::min(s.req.bytes - s.done, kMaxSqe);
    io_uring_prep_read(sqe, s.cached ? cache_fd() : m_fd, static_cast<char*>(s.req.dst) + s.done, unsigned(len),
                       uint64_t(s.req.file_offset + s.done));
    if (s.cached) {
      // Never wait for the disk; copy on the ring's workers, several reads at once,
      // rather than inline in io_uring_submit on this thread.
      sqe->rw_flags = RWF_NOWAIT;
      io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    }
    io_uring_sqe_set_data64(sqe, uint64_t(idx));
    int rc;
    do {
      rc = io_uring_submit(&m_ring);
    } while (rc == -EINTR || rc == -EAGAIN);
    if (rc < 0) fail(idx, "io_uring_submit: " + errno_text(-rc));
  }

  // Releases slot idx with an error (the first one becomes sticky).
  void fail(int idx, const std::string& what) {
    Slot& s = m_slots[idx];
    if (m_error.ok()) m_error = read_error(s.req, what);
    release(idx);
  }

  void release(int idx) {
    m_slots.release(idx);
    --m_in_flight;
  }

  // Waits for one completion (for at most *timeout, when given) and handles it
  // (continue, retry, finish or fail). False: the time ran out, nothing was reaped.
  bool reap_one(__kernel_timespec* timeout = nullptr) {
    io_uring_cqe* cqe = nullptr;
    if (!m_timed_waits) timeout = nullptr;
    int rc;
    do {
      rc = timeout ? io_uring_wait_cqe_timeout(&m_ring, &cqe, timeout) : io_uring_wait_cqe(&m_ring, &cqe);
    } while (rc == -EINTR || rc == -EAGAIN);
    if (rc == -ETIME && timeout) return false;
    if (rc < 0) {
      // Nothing can be reaped: the ring is unusable. Keep the slots (their reads may
      // still be running) and report; the destructor's drain stops at the same error.
      if (m_error.ok())
        m_error = io_error("block reader for '" + m_path + "': io_uring_wait_cqe: " + errno_text(-rc));
      m_ring_broken = true;
      return true;
    }
    const int idx = int(io_uring_cqe_get_data64(cqe));
    const int res = cqe->res;
    io_uring_cqe_seen(&m_ring, cqe);
    Slot& s = m_slots[idx];
    if (s.cached) {
      land_cached(idx, res);
      return true;
    }
    if (res == -EINTR || res == -EAGAIN) {
      issue(idx);
      return true;
    }
    if (res < 0) {
      fail(idx, errno_text(-res) + " after " + std::to_string(s.done) + " bytes");
      return true;
    }
    if (res == 0) {
      fail(idx, "the file ended after " + std::to_string(s.done) + " of its bytes");
      return true;
    }
    s.done += res;
    if (s.done < s.req.bytes) {
      issue(idx);
      return true;
    }
    m_bytes_read += s.req.bytes;
    release(idx);
    return true;
  }

  // A completion of a read through the page cache: a whole part goes on (or finishes);
  // a short one, -EAGAIN (a page is not in memory), an error or the end of the file
  // hands the rest to direct I/O from the last whole block, which reads or reports it.
  void land_cached(int idx, int res) {
    Slot& s = m_slots[idx];
    const int64_t part = std::min(s.req.bytes - s.done, kMaxSqe);
    if (res > 0 && res == part) {
      count_cached(res);
      s.done += res;
      if (s.done < s.req.bytes) {
        issue(idx);
        return;
      }
      m_bytes_read += s.req.bytes;
      release(idx);
      return;
    }
    const int64_t resume = (s.done + std::max(res, 0)) / kDirectAlign * kDirectAlign;
    count_cached(resume - s.done);
    s.done = resume;
    s.cached = false;
    issue(idx);
  }

  void drain() {
    while (m_in_flight > 0 && !m_ring_broken) reap_one();
  }

  io_uring m_ring{};
  bool m_ring_ok = false;
  bool m_ring_broken = false;
  bool m_timed_waits = false;  // the kernel waits with a timeout without an SQE (IORING_FEAT_EXT_ARG)
  SlotTable<Slot> m_slots;
  int m_in_flight = 0;
  Status m_error;
};

}  // namespace

bool uring_compiled_in() { return true; }

int uring_probe() {
  io_uring ring{};
  const int rc = io_uring_queue_init(1, &ring, 0);
  if (rc == 0) io_uring_queue_exit(&ring);
  return rc;
}

Expected<std::unique_ptr<BlockReader>> open_uring_reader(const std::string& path, int fd, bool direct,
                                                         int queue_depth, int64_t file_bytes) {
  auto r = std::make_unique<UringReader>(path, fd, direct, queue_depth, file_bytes);
  DLR_RETURN_IF_ERROR(r->init());  // on failure ~UringReader closes fd
  return std::unique_ptr<BlockReader>(std::move(r));
}

#else  // no liburing in this build

bool uring_compiled_in() { return false; }
int uring_probe() { return -ENOSYS; }

Expected<std::unique_ptr<BlockReader>> open_uring_reader(const std::string& path, int fd, bool direct,
                                                         int queue_depth, int64_t file_bytes) {
  // Adopt the fd so that it is closed like on the other failure paths.
  struct Closer : BlockReader {
    Closer(const std::string& p, int f) : BlockReader(p, f, false, 1, 0) {}
    Expected<int64_t> submit(const ReadRequest&) override { return internal_error("unused"); }
    Status wait(int64_t) override { return Status(); }
    Expected<bool> wait_for(int64_t, int64_t) override { return true; }
    Status wait_all() override { return Status(); }
    ReaderKind kind() const override { return ReaderKind::kUring; }
    int in_flight() const override { return 0; }
  } closer(path, fd);
  return unsupported("block reader for '" + path + "': this build has no liburing");
}

#endif

}  // namespace dlr::storage_detail
