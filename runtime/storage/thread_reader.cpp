// The threads backend: queue_depth worker threads ("dlr-pread", placed as the session
// asks), each taking one read at a time from a bounded FIFO and calling pread until the
// read is complete (with cache hits, first through the page cache while it holds the
// bytes). All tables are sized at open; a read allocates nothing.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <unistd.h>

#include "runtime/storage/reader_backends.h"

namespace dlr::storage_detail {
namespace {

constexpr int64_t kMaxPread = int64_t(1) << 30;  // one pread call reads at most this much (Linux caps near 2 GiB)

enum class State : uint8_t { kFree, kQueued, kRunning, kDone };

struct ThreadSlot : Slot {
  State state = State::kFree;
  int err = 0;       // errno of a failed pread
  bool eof = false;  // pread returned 0 before the read was complete
};

class ThreadReader final : public BlockReader {
 public:
  ThreadReader(const std::string& path, int fd, bool direct, int queue_depth, int64_t file_bytes,
               const ThreadPlacement& threads)
      : BlockReader(path, fd, direct, queue_depth, file_bytes),
        m_threads(threads),
        m_slots(queue_depth),
        m_fifo(size_t(queue_depth)) {}

  // Starts the workers; on failure the ones started are stopped and joined.
  Status start() {
    try {
      m_workers.reserve(size_t(m_queue_depth));
      for (int i = 0; i < m_queue_depth; ++i)
        m_workers.push_back(start_placed_thread("dlr-pread", m_threads, [this] { worker(); }));
    } catch (const std::system_error& e) {
      stop();
      return internal_error("block reader for '" + m_path + "': cannot start reader threads: " + e.what());
    }
    return Status();
  }

  ~ThreadReader() override {
    drain();
    stop();
  }

  Expected<int64_t> submit(const ReadRequest& r) override {
    if (!m_error.ok()) return m_error;
    DLR_RETURN_IF_ERROR(check_request(r));
    if (m_in_flight == m_queue_depth) {
      std::unique_lock<std::mutex> lk(m_mutex);
      m_done_cv.wait(lk, [&] { return any_done_locked(); });
      reap_locked();
    }
    if (!m_error.ok()) {
      drain();
      return m_error;
    }
    int64_t ticket = -1;
    {
      std::lock_guard<std::mutex> lk(m_mutex);
      const int idx = m_slots.take(r);
      ThreadSlot& s = m_slots[idx];
      ticket = s.ticket;
      s.err = 0;
      s.eof = false;
      s.state = State::kQueued;
      m_fifo[size_t((m_fifo_head + m_fifo_count) % m_queue_depth)] = idx;
      ++m_fifo_count;
    }
    ++m_in_flight;
    m_work_cv.notify_one();
    return ticket;
  }

  Status wait(int64_t ticket) override {
    DLR_RETURN_IF_ERROR(m_slots.check_ticket(m_path, ticket));
    if (!m_error.ok()) return m_error;
    {
      std::unique_lock<std::mutex> lk(m_mutex);
      const ThreadSlot* s = find_locked(ticket);
      if (s) m_done_cv.wait(lk, [&] { return s->state == State::kDone; });
      reap_locked();
    }
    if (!m_error.ok()) drain();
    return m_error;
  }

  Expected<bool> wait_for(int64_t ticket, int64_t timeout_us) override {
    DLR_RETURN_IF_ERROR(m_slots.check_ticket(m_path, ticket));
    if (timeout_us < 0) return invalid_argument("block reader for '" + m_path + "': negative wait timeout");
    if (!m_error.ok()) return m_error;
    bool done = true;
    {
      std::unique_lock<std::mutex> lk(m_mutex);
      const ThreadSlot* s = find_locked(ticket);
      if (s)
        done = m_done_cv.wait_for(lk, std::chrono::microseconds(timeout_us),
                                  [&] { return s->state == State::kDone; });
      reap_locked();
    }
    if (!m_error.ok()) {
      drain();
      return m_error;
    }
    return done;
  }

  Status wait_all() override {
    drain();
    return m_error;
  }

  int in_flight() const override { return m_in_flight; }
  ReaderKind kind() const override { return ReaderKind::kThreads; }

 private:
  bool any_done_locked() const {
    for (const ThreadSlot& s : m_slots.all())
      if (s.state == State::kDone) return true;
    return false;
  }

  const ThreadSlot* find_locked(int64_t ticket) const {
    for (const ThreadSlot& s : m_slots.all())
      if (s.state != State::kFree && s.ticket == ticket) return &s;
    return nullptr;
  }

  // Frees every finished slot; the first failure becomes the sticky error.
  void reap_locked() {
    for (size_t i = 0; i < m_slots.all().size(); ++i) {
      ThreadSlot& s = m_slots.all()[i];
      if (s.state != State::kDone) continue;
      if (m_error.ok()) {
        if (s.err != 0)
          m_error = read_error(s.req, std::string(std::strerror(s.err)) + " (errno " + std::to_string(s.err) +
                                          ") after " + std::to_string(s.done) + " bytes");
        else if (s.eof)
          m_error = read_error(s.req, "the file ended after " + std::to_string(s.done) + " of its bytes");
      }
      if (s.err == 0 && !s.eof) m_bytes_read += s.req.bytes;
      s.state = State::kFree;
      m_slots.release(int(i));
      --m_in_flight;
    }
  }

  // Waits for every read in flight and frees its slot.
  void drain() {
    std::unique_lock<std::mutex> lk(m_mutex);
    m_done_cv.wait(lk, [&] {
      for (const ThreadSlot& s : m_slots.all())
        if (s.state == State::kQueued || s.state == State::kRunning) return false;
      return true;
    });
    reap_locked();
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lk(m_mutex);
      m_stop = true;
    }
    m_work_cv.notify_all();
    for (std::thread& t : m_workers) t.join();
    m_workers.clear();
  }

  void worker() {
    std::unique_lock<std::mutex> lk(m_mutex);
    for (;;) {
      m_work_cv.wait(lk, [&] { return m_stop || m_fifo_count > 0; });
      if (m_fifo_count == 0) return;  // stopping, nothing queued
      ThreadSlot& s = m_slots[m_fifo[size_t(m_fifo_head)]];
      m_fifo_head = (m_fifo_head + 1) % m_queue_depth;
      --m_fifo_count;
      s.state = State::kRunning;
      const ReadRequest r = s.req;
      lk.unlock();
      int64_t done = cached(r) ? read_cached(r, 0) : 0;  // bytes in memory already; the rest direct
      int err = 0;
      bool eof = false;
      while (done < r.bytes) {
        const ssize_t n = ::pread(m_fd, static_cast<char*>(r.dst) + done, size_t(std::min(r.bytes - done, kMaxPread)),
                                  off_t(r.file_offset + done));
        if (n < 0) {
          if (errno == EINTR || errno == EAGAIN) continue;
          err = errno;
          break;
        }
        if (n == 0) {
          eof = true;
          break;
        }
        done += n;
      }
      lk.lock();
      s.done = done;
      s.err = err;
      s.eof = eof;
      s.state = State::kDone;
      m_done_cv.notify_all();
    }
  }

  const ThreadPlacement m_threads;  // the workers'
  // Shared with the workers, under m_mutex: slot states and results, the FIFO, m_stop.
  std::mutex m_mutex;
  std::condition_variable m_work_cv;  // a read was queued, or stop
  std::condition_variable m_done_cv;  // a read finished
  SlotTable<ThreadSlot> m_slots;  // slot fields, take and release under m_mutex
  std::vector<int> m_fifo;  // slot indices, in submission order
  int m_fifo_head = 0;
  int m_fifo_count = 0;
  bool m_stop = false;
  // The submitting thread's own state.
  int m_in_flight = 0;
  Status m_error;
  std::vector<std::thread> m_workers;
};

}  // namespace

Expected<std::unique_ptr<BlockReader>> open_thread_reader(const std::string& path, int fd, bool direct,
                                                          int queue_depth, int64_t file_bytes,
                                                          const ThreadPlacement& threads) {
  auto r = std::make_unique<ThreadReader>(path, fd, direct, queue_depth, file_bytes, threads);
  const Status st = r->start();
  if (!st.ok()) return st;  // ~ThreadReader closes fd
  return std::unique_ptr<BlockReader>(std::move(r));
}

}  // namespace dlr::storage_detail
