// PageCacheView: which bytes of a file the page cache holds, and reads of those bytes
// that never wait for the disk. A buffered descriptor and a read-only mapping of the
// whole file that is never touched (mincore only), so the view adds nothing to the
// process's RSS or to the page cache. Direct readers use it to take bytes that are in
// memory already from memory (docs/streaming.md, "Bytes the page cache holds").
// Plain C++ (no CUDA).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/core/status.h"

namespace dlr {

class PageCacheView {
 public:
  // Opens `path` (a regular file) buffered and maps it. One-line errors name the file.
  static Expected<std::unique_ptr<PageCacheView>> open(const std::string& path);
  ~PageCacheView();
  PageCacheView(const PageCacheView&) = delete;
  PageCacheView& operator=(const PageCacheView&) = delete;

  int64_t file_bytes() const { return m_file_bytes; }  // the file's size at open()
  int fd() const { return m_fd; }  // the buffered descriptor, owned by the view
  // Bytes of [offset, offset + bytes) held by the page cache now, counted from `offset`
  // up to the first page it lacks (bytes when it holds them all). The range is clipped
  // to the file. Thread-safe; allocates nothing; one mincore call per 1 MiB.
  int64_t resident_prefix(int64_t offset, int64_t bytes) const;
  // Bytes of the whole file held by the page cache now (the last page counts up to the
  // file's end).
  int64_t resident_bytes() const;
  // Reads [offset, offset + bytes) into dst through the page cache without waiting for
  // the disk (preadv2 with RWF_NOWAIT), from its start, until done or until a page is
  // not in memory, the kernel refuses the flag, or an error. Returns the bytes read,
  // 0..bytes; the caller reads the rest some other way. Thread-safe.
  int64_t read_nowait(void* dst, int64_t offset, int64_t bytes) const;

 private:
  PageCacheView(int fd, void* map, int64_t file_bytes, int64_t page);
  int m_fd = -1;           // owned, buffered
  void* m_map = nullptr;   // owned: PROT_READ, MAP_SHARED, m_file_bytes long; null for an empty file
  int64_t m_file_bytes = 0;
  int64_t m_page = 4096;   // the system's page size
};

// Bytes of `path` resident in the page cache now. For memory reports.
Expected<int64_t> page_cache_bytes(const std::string& path);
// Asks the kernel to drop `path`'s clean pages from the page cache (fdatasync, then
// posix_fadvise DONTNEED over the whole file). Advisory: pages mapped or locked by
// someone stay. For benchmarks (cold reads) and tests.
Status drop_page_cache(const std::string& path);

}  // namespace dlr
