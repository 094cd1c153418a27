// BlockReader: open() (checks, O_DIRECT, backend choice, the page cache view for cache
// hits) and request checks. The backends are uring_reader.cpp and thread_reader.cpp.
#include "runtime/storage/block_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/storage/posix_fd.h"
#include "runtime/storage/reader_backends.h"

namespace dlr {

bool uring_available() {
  static const bool available = storage_detail::uring_compiled_in() && storage_detail::uring_probe() == 0;
  return available;
}

BlockReader::BlockReader(std::string path, int fd, bool direct, int queue_depth, int64_t file_bytes)
    : m_path(std::move(path)), m_fd(fd), m_direct(direct), m_queue_depth(queue_depth), m_file_bytes(file_bytes) {}

BlockReader::~BlockReader() {
  if (m_fd >= 0) ::close(m_fd);
}

Expected<std::unique_ptr<BlockReader>> BlockReader::open(const std::string& path, ReaderKind kind, int queue_depth,
                                                         bool direct, const ThreadPlacement& threads,
                                                         bool cache_hits) {
  if (queue_depth < 1 || queue_depth > kMaxQueueDepth)
    return invalid_argument("block reader for '" + path + "': queue depth " + std::to_string(queue_depth) +
                            " is outside 1.." + std::to_string(kMaxQueueDepth));
  if (kind == ReaderKind::kUring && !uring_available()) {
    if (!storage_detail::uring_compiled_in())
      return unsupported("block reader for '" + path + "': io_uring requested but this build has no liburing "
                         "(install liburing-dev and reconfigure, or use the threads reader)");
    return unsupported("block reader for '" + path + "': io_uring requested but the kernel refuses a ring: " +
                       errno_text(-storage_detail::uring_probe()) + " (a seccomp profile may block io_uring; "
                       "use the threads reader)");
  }
  const int flags = O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0);
  int raw = -1;
  do {
    raw = ::open(path.c_str(), flags);
  } while (raw < 0 && errno == EINTR);
  if (raw < 0) {
    const int e = errno;
    if (direct && e == EINVAL)
      return io_error("cannot open '" + path + "' with O_DIRECT: its filesystem refuses direct I/O (" +
                      errno_text(e) + "); put the file on a disk filesystem (ext4, xfs) or read it buffered");
    return io_error("cannot open '" + path + "'" + (direct ? " with O_DIRECT" : "") + ": " + errno_text(e));
  }
  Fd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return io_error("cannot stat '" + path + "': " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) return invalid_argument("block reader: '" + path + "' is not a regular file");
  const int64_t size = int64_t(st.st_size);
  const bool uring = kind == ReaderKind::kUring || (kind == ReaderKind::kAuto && uring_available());
  // Taking cache hits is worth nothing to a buffered reader, and a view that cannot be
  // made (mmap refused) leaves every read direct, as without cache_hits.
  std::unique_ptr<PageCacheView> view;
  if (direct && cache_hits) {
    Expected<std::unique_ptr<PageCacheView>> v = PageCacheView::open(path);
    if (v.ok()) view = std::move(v).value();
  }
  const int owned = fd.release();  // the backend owns it from here, on success and on failure
  Expected<std::unique_ptr<BlockReader>> reader =
      uring ? storage_detail::open_uring_reader(path, owned, direct, queue_depth, size)
            : storage_detail::open_thread_reader(path, owned, direct, queue_depth, size, threads);
  // No read has been submitted yet: the workers see the view through submit's lock.
  if (reader.ok()) (*reader)->m_cache = std::move(view);
  return reader;
}

int64_t BlockReader::read_cached(const ReadRequest& r, int64_t from) {
  const int64_t n = m_cache->read_nowait(static_cast<char*>(r.dst) + from, r.file_offset + from, r.bytes - from);
  const int64_t resume = from + n == r.bytes ? r.bytes : (from + n) / kDirectAlign * kDirectAlign;
  count_cached(resume - from);
  return resume;
}

int BlockReader::cache_fd() const { return m_cache ? m_cache->fd() : -1; }

Status BlockReader::check_request(const ReadRequest& r) const {
  if (r.bytes <= 0 || r.file_offset < 0 || !r.dst)
    return invalid_argument("read of '" + m_path + "': offset " + std::to_string(r.file_offset) + ", " +
                            std::to_string(r.bytes) + " bytes" + (r.dst ? "" : ", no destination") +
                            ": expected offset >= 0, bytes > 0 and a destination");
  if (r.file_offset > m_file_bytes || r.bytes > m_file_bytes - r.file_offset)
    return read_error(r, "past the end of the file (" + std::to_string(m_file_bytes) + " bytes)");
  if (m_direct) {
    const bool aligned = r.file_offset % kDirectAlign == 0 && r.bytes % kDirectAlign == 0 &&
                         reinterpret_cast<uintptr_t>(r.dst) % kDirectAlign == 0;
    if (!aligned)
      return invalid_argument("direct read of '" + m_path + "' at offset " + std::to_string(r.file_offset) + ", " +
                              std::to_string(r.bytes) + " bytes: offset, size and destination address must be "
                              "multiples of " + std::to_string(kDirectAlign));
  }
  return Status();
}

Status BlockReader::read_error(const ReadRequest& r, const std::string& what) const {
  return io_error("read of '" + m_path + "' at offset " + std::to_string(r.file_offset) + ", " +
                  std::to_string(r.bytes) + " bytes failed: " + what);
}

}  // namespace dlr
