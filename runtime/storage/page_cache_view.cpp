// PageCacheView (mincore over an untouched mapping, preadv2 with RWF_NOWAIT) and the
// page cache helpers of reports and benchmarks.
#include "runtime/storage/page_cache_view.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime/storage/posix_fd.h"

namespace dlr {
namespace {

constexpr int64_t kQueryPages = 256;  // pages per mincore call (1 MiB of 4 KiB pages)

}  // namespace

PageCacheView::PageCacheView(int fd, void* map, int64_t file_bytes, int64_t page)
    : m_fd(fd), m_map(map), m_file_bytes(file_bytes), m_page(page) {}

PageCacheView::~PageCacheView() {
  if (m_map) ::munmap(m_map, size_t(m_file_bytes));
  if (m_fd >= 0) ::close(m_fd);
}

Expected<std::unique_ptr<PageCacheView>> PageCacheView::open(const std::string& path) {
  int raw = -1;
  do {
    raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (raw < 0 && errno == EINTR);
  if (raw < 0) return io_error("page cache of '" + path + "': cannot open: " + errno_text(errno));
  Fd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return io_error("page cache of '" + path + "': cannot stat: " + errno_text(errno));
  if (!S_ISREG(st.st_mode)) return invalid_argument("page cache of '" + path + "': not a regular file");
  const int64_t size = int64_t(st.st_size);
  void* map = nullptr;
  if (size > 0) {
    map = ::mmap(nullptr, size_t(size), PROT_READ, MAP_SHARED, fd.get(), 0);
    if (map == MAP_FAILED) return io_error("page cache of '" + path + "': mmap failed: " + errno_text(errno));
  }
  const int64_t page = std::max<int64_t>(1, ::sysconf(_SC_PAGESIZE));
  return std::unique_ptr<PageCacheView>(new PageCacheView(fd.release(), map, size, page));
}

int64_t PageCacheView::resident_prefix(int64_t offset, int64_t bytes) const {
  if (!m_map || offset < 0 || bytes <= 0 || offset >= m_file_bytes) return 0;
  const int64_t end = std::min(m_file_bytes, offset + bytes);
  unsigned char vec[kQueryPages];
  int64_t page = offset / m_page;  // the page holding `offset`
  const int64_t last = (end - 1) / m_page;
  while (page <= last) {
    const int64_t n = std::min(kQueryPages, last - page + 1);
    char* at = static_cast<char*>(m_map) + page * m_page;
    const int64_t len = std::min(n * m_page, m_file_bytes - page * m_page);
    if (::mincore(at, size_t(len), vec) != 0) return std::max<int64_t>(0, page * m_page - offset);
    for (int64_t i = 0; i < n; ++i)
      if (!(vec[i] & 1)) return std::max<int64_t>(0, (page + i) * m_page - offset);
    page += n;
  }
  return end - offset;
}

int64_t PageCacheView::resident_bytes() const {
  int64_t resident = 0;
  for (int64_t off = 0; off < m_file_bytes;) {
    const int64_t held = resident_prefix(off, m_file_bytes - off);
    resident += held;
    off += held + m_page;  // past the page that is not held (or the end)
    off -= off % m_page;
  }
  return resident;
}

int64_t PageCacheView::read_nowait(void* dst, int64_t offset, int64_t bytes) const {
  int64_t done = 0;
  while (done < bytes) {
    iovec v{static_cast<char*>(dst) + done, size_t(std::min<int64_t>(bytes - done, int64_t(1) << 30))};
    const ssize_t n = ::preadv2(m_fd, &v, 1, off_t(offset + done), RWF_NOWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: a page is not in memory; EOPNOTSUPP: no RWF_NOWAIT here; or the end
    done += n;
  }
  return done;
}

Expected<int64_t> page_cache_bytes(const std::string& path) {
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<PageCacheView> view, PageCacheView::open(path));
  return view->resident_bytes();
}

Status drop_page_cache(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_error("drop page cache of '" + path + "': cannot open: " + errno_text(errno));
  ::fdatasync(fd.get());  // dirty pages cannot be dropped; a failure here only leaves them cached
  const int rc = ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  if (rc != 0) return io_error("drop page cache of '" + path + "': posix_fadvise failed: " + errno_text(rc));
  return Status();
}

}  // namespace dlr
