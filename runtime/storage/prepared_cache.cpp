// Hygiene of the prepared weight cache (prepared_cache.h): locks, stale temporaries,
// the bound and LRU eviction, listing and clearing.
#include "runtime/storage/prepared_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include "runtime/cache/cache_dir.h"
#include "runtime/core/log.h"
#include "runtime/options.h"
#include "runtime/storage/prepared_file_io.h"

namespace dlr {

using namespace prepared_detail;

namespace {

bool ends_with(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

bool is_prepared_name(const std::string& name) { return ends_with(name, ".dlrw") && name[0] != '.'; }

// Whether `path` still names the file open as `fd` (not unlinked or replaced).
bool still_linked(const std::string& path, int fd) {
  struct stat by_name {}, by_fd {};
  if (::stat(path.c_str(), &by_name) != 0 || ::fstat(fd, &by_fd) != 0) return false;
  return by_name.st_dev == by_fd.st_dev && by_name.st_ino == by_fd.st_ino;
}

// Unlinks `path` when it can be locked (write lock: a prepared file no reader uses;
// read lock: a temporary no writer holds), while holding the lock. *bytes: its size.
bool unlink_if_unlocked(const std::string& path, bool write_lock, int64_t* bytes) {
  Fd fd(::open(path.c_str(), (write_lock ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) return false;
  if (lock_whole_file(fd.get(), write_lock, false) != 0) return false;
  if (!still_linked(path, fd.get())) return false;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (::unlink(path.c_str()) != 0) return false;
  if (bytes) *bytes = int64_t(st.st_size);
  return true;  // the lock goes with fd, after the unlink
}

// Whether another open file description holds a lock that `write` would conflict with.
bool lock_held_by_other(const std::string& path, bool write) {
  Fd fd(::open(path.c_str(), (write ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0 && write) fd = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)), write = false;
  if (fd.get() < 0) return false;
  return lock_whole_file(fd.get(), write, false) == EAGAIN;
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) out.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// "fp16 NHWC" from a prepared file's header; "" when the first bytes are not one. The
// header is read without touching the file's access time, the cache's last use (only the
// owner may ask for that; for another user's file the access time may move).
std::string precision_of(const std::string& path) {
  const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  Fd fd(::open(path.c_str(), flags | O_NOATIME));
  if (fd.get() < 0 && errno == EPERM) fd = Fd(::open(path.c_str(), flags));
  unsigned char h[kFixedHeader];
  if (fd.get() < 0 || ::pread(fd.get(), h, sizeof h, 0) != ssize_t(sizeof h)) return "";
  if (std::memcmp(h, kMagic, 8) != 0 || get_u32(h + 8) != kPreparedFormatVersion || h[64] > 1 || h[65] > 1) return "";
  return std::string(h[64] == 1 ? "fp16" : "fp32") + (h[65] == 1 ? " NHWC" : " NCHW");
}

// The cfg stem of "<stem>-<16 hex>.dlrw[.tmp.XXXXXX]"; "" for another name.
std::string model_of(const std::string& name) {
  const size_t end = name.find(".dlrw");
  if (end == std::string::npos || end < 18 || name[end - 17] != '-') return "";
  for (size_t i = end - 16; i < end; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return "";
  return name.substr(0, end - 17);
}

Expected<int64_t> parse_bound(const std::string& text) {
  std::string t;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) t += char(std::tolower(static_cast<unsigned char>(c)));
  if (t == "0" || t == "none") return int64_t(0);
  const Expected<WeightBudget> b = WeightBudget::parse(t);
  if (!b.ok() || b->kind != WeightBudget::Kind::kBytes)
    return invalid_argument("DLR_CACHE_MAX_BYTES \"" + text +
                            "\": expected a size (2GiB, 500MB, a byte count) or 0 / none (no bound)");
  return b->bytes;
}

}  // namespace

PreparedUse& PreparedUse::operator=(PreparedUse&& o) noexcept {
  if (this != &o) {
    release();
    m_fd = o.m_fd;
    o.m_fd = -1;
  }
  return *this;
}

void PreparedUse::release() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
}

Expected<bool> PreparedUse::acquire(const std::string& path, PreparedUse* use) {
  use->release();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    return io_error(path + ": cannot open the prepared weight file: " + errno_text());
  }
  PreparedUse held(fd);  // closes fd on every return below unless moved out
  const int err = lock_whole_file(fd, false, true);
  if (err == 0 && !still_linked(path, fd)) return false;  // evicted while we waited
  if (err != 0) DLR_LOG_DEBUG("{}: no read lock ({}): eviction cannot see this use", path, std::strerror(err));
  *use = std::move(held);
  return true;
}

int lock_whole_file(int fd, bool write, bool wait) {
  struct flock l {};
  l.l_type = short(write ? F_WRLCK : F_RDLCK);
  l.l_whence = SEEK_SET;
  l.l_start = 0;
  l.l_len = 0;  // the whole file, however long it grows
  for (;;) {
    if (::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &l) == 0) return 0;
    if (errno == EINTR) continue;
    return errno == EACCES ? EAGAIN : errno;  // POSIX allows EACCES for a conflict
  }
}

bool is_prepared_temporary(const std::string& name) {
  const size_t at = name.find(".dlrw.tmp.");
  return at != std::string::npos && at > 0 && at + 10 < name.size();
}

int remove_stale_temporaries(const std::string& dir, const std::string& target_name, int64_t* bytes) {
  int removed = 0;
  for (const std::string& name : names_in(dir)) {
    if (!is_prepared_temporary(name)) continue;
    if (!target_name.empty() && name.rfind(target_name + ".tmp.", 0) != 0) continue;
    int64_t size = 0;
    if (!unlink_if_unlocked(dir + "/" + name, false, &size)) continue;
    ++removed;
    if (bytes) *bytes += size;
    DLR_LOG_INFO("removed {}/{} ({} bytes), left by a writer that did not finish", dir, name, size);
  }
  return removed;
}

void touch_used(const std::string& path) {
  const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);  // best effort: a read-only cache keeps its times
}

Expected<int64_t> cache_bound_bytes(int64_t option, const std::string& dir) {
  if (option > 0) return option;
  if (option == 0) return int64_t(INT64_MAX);
  const char* env = std::getenv("DLR_CACHE_MAX_BYTES");
  if (env && *env) {
    DLR_ASSIGN_OR_RETURN(const int64_t b, parse_bound(env));
    return b == 0 ? int64_t(INT64_MAX) : b;
  }
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0 || fs.f_blocks == 0) return kDefaultCacheBound;
  const double tenth = double(fs.f_blocks) * double(fs.f_frsize) / 10.0;
  return std::min(kDefaultCacheBound, int64_t(std::max(tenth, 1.0)));
}

Expected<std::vector<CacheEntry>> list_prepared_cache(const std::string& dir) {
  std::vector<CacheEntry> out;
  for (const std::string& name : names_in(dir)) {
    const bool temporary = is_prepared_temporary(name);
    if (!temporary && !is_prepared_name(name)) continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    CacheEntry e;
    e.name = name;
    e.bytes = int64_t(st.st_size);
    e.last_use_ns = int64_t(st.st_atim.tv_sec) * 1000000000 + st.st_atim.tv_nsec;
    e.temporary = temporary;
    e.locked = lock_held_by_other(path, !temporary);
    e.model = model_of(name);
    e.precision = temporary ? std::string() : precision_of(path);
    out.push_back(std::move(e));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const CacheEntry& a, const CacheEntry& b) { return a.last_use_ns < b.last_use_ns; });
  return out;
}

EvictReport evict_prepared(const std::string& dir, int64_t bound, const std::string& keep) {
  EvictReport r;
  Expected<std::vector<CacheEntry>> all = list_prepared_cache(dir);
  if (!all.ok()) return r;
  std::vector<CacheEntry> files;
  for (CacheEntry& e : *all)
    if (!e.temporary) r.total_bytes += e.bytes, files.push_back(std::move(e));
  for (const CacheEntry& e : files) {  // least recently used first
    if (r.total_bytes <= bound) break;
    int64_t bytes = 0;
    if (e.name == keep || !unlink_if_unlocked(dir + "/" + e.name, true, &bytes)) {
      ++r.kept_in_use;
      continue;
    }
    ++r.removed;
    r.removed_bytes += bytes;
    r.total_bytes -= bytes;
    DLR_LOG_INFO("evicted {}/{} ({} bytes, least recently used) to keep the cache within {} bytes", dir, e.name,
                 bytes, bound);
  }
  if (r.total_bytes > bound)
    DLR_LOG_WARN("prepared weight cache {}: {} bytes in files in use, over its bound of {} bytes (DLR_CACHE_MAX_BYTES)",
                 dir, r.total_bytes, bound);
  return r;
}

ClearReport clear_prepared_cache(const std::string& dir) {
  ClearReport r;
  for (const std::string& name : names_in(dir)) {
    const bool temporary = is_prepared_temporary(name);
    if (!temporary && !is_prepared_name(name)) continue;
    int64_t bytes = 0;
    if (unlink_if_unlocked(dir + "/" + name, !temporary, &bytes)) {
      ++r.removed;
      r.removed_bytes += bytes;
    } else {
      ++r.kept;
    }
  }
  return r;
}

Expected<std::string> prepared_cache_dir() {
  Expected<std::string> base = user_cache_dir();
  if (!base.ok())
    return Status(base.status().code(), "prepared weight cache: " + base.status().message() +
                                            ", or write one with dlrun --prepare OUT to writable storage");
  const std::string dir = *base + "/prepared";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return io_error("prepared weight cache: cannot create " + dir + ": " + errno_text() +
                    " (set DLR_CACHE_DIR to a writable directory, or write the file with dlrun --prepare OUT to "
                    "writable storage)");
  return dir;
}

}  // namespace dlr
