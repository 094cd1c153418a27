// Hygiene of the prepared weight cache (docs/streaming.md section 7, "The prepared
// weight file"): temporary files of dead writers, the size bound with least-recently-
// used eviction, and what `dlrun --cache list|clear` shows and removes.
//
// Every rule rests on open-file-description locks (fcntl F_OFD_SETLK, Linux 3.15+),
// which the kernel drops when the last descriptor of the open file goes, so a killed
// process holds none, a reused pid inherits none, and two opens in one process
// conflict like two processes:
//   - a writer holds a write lock on its temporary file `<name>.dlrw.tmp.XXXXXX` from
//     creation until after the rename (prepared_file.cpp). A temporary file that
//     another process can read-lock belongs to a dead writer: it is unlinked while
//     the lock is held (so the writer that made it cannot be between creating and
//     locking it: that writer checks, once locked, that its name still links to its
//     file, and starts again with a new name if not).
//   - a reader (PreparedUse, prepared_file_source) holds a read lock on the prepared
//     file while it uses it. Eviction and clear take a write lock first: a file they
//     cannot write-lock is in use and stays.
// On a file system without these locks (a lock call fails other than with EAGAIN) a
// temporary file is never removed and a prepared file never evicted: nothing is
// deleted that cannot be proven unused. The cache is meant for a local disk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"

namespace dlr {

// A read lock on a prepared file, held while the file is in use (eviction and clear
// skip it). Move-only; released by the destructor.
class PreparedUse {
 public:
  PreparedUse() = default;
  explicit PreparedUse(int fd) : m_fd(fd) {}
  PreparedUse(PreparedUse&& o) noexcept : m_fd(o.m_fd) { o.m_fd = -1; }
  PreparedUse& operator=(PreparedUse&& o) noexcept;
  PreparedUse(const PreparedUse&) = delete;
  PreparedUse& operator=(const PreparedUse&) = delete;
  ~PreparedUse() { release(); }

  // Opens `path` and read-locks it (waiting for an evictor that holds the write lock
  // to finish). False, holding nothing, when `path` does not exist or was unlinked
  // (evicted) meanwhile. Where locks are unsupported the file is held open unlocked.
  static Expected<bool> acquire(const std::string& path, PreparedUse* use);
  bool held() const { return m_fd >= 0; }
  void release();

 private:
  int m_fd = -1;
};

// Read-locks (F_OFD_SETLK, waiting when `wait`) or write-locks the whole file. 0, or errno.
int lock_whole_file(int fd, bool write, bool wait);

// Whether `name` (a file name, no directory) is a prepared file's temporary: "*.dlrw.tmp.*".
bool is_prepared_temporary(const std::string& name);

// Unlinks the temporary files in `dir` whose writer is dead (see above); only those of
// the target `target_name` (a file name in dir) when it is not empty. Returns how many
// it removed and adds their bytes to *bytes when given. Files it cannot open or lock,
// and a missing directory, are skipped silently.
int remove_stale_temporaries(const std::string& dir, const std::string& target_name = "", int64_t* bytes = nullptr);

// Marks `path` used now: sets its access time explicitly (recency for eviction does
// not depend on the mount's atime rule). The modification time stays.
void touch_used(const std::string& path);

// The cache's bound in bytes from the option's value (runtime/options_table.h
// cache_max_bytes): > 0: that; 0: no bound (INT64_MAX); -1: $DLR_CACHE_MAX_BYTES when
// set (a size: 2GiB, 500MB, a byte count; 0 or "none": no bound), else the default:
// the smaller of 4 GiB and a tenth of the size of the file system holding `dir`.
// A bad variable is an error naming it and what was expected.
Expected<int64_t> cache_bound_bytes(int64_t option, const std::string& dir);
constexpr int64_t kDefaultCacheBound = int64_t(4) << 30;

struct CacheEntry {
  std::string name;          // file name in the cache's directory
  int64_t bytes = 0;         // its size
  int64_t last_use_ns = 0;   // access time (touched on every use), ns since the epoch
  bool temporary = false;    // a "*.dlrw.tmp.*" file
  bool locked = false;       // in use (prepared file) or being written (temporary)
  std::string model;         // the cfg stem of the name ("" for an unknown name)
  std::string precision;     // "fp16 NHWC", ... from the header; "" when it is not a valid header
};

// Every prepared file and temporary in `dir`, least recently used first. An absent
// directory is an empty list.
Expected<std::vector<CacheEntry>> list_prepared_cache(const std::string& dir);

struct EvictReport {
  int removed = 0;
  int64_t removed_bytes = 0;
  int64_t total_bytes = 0;  // the prepared files' bytes left
  int kept_in_use = 0;      // files over the bound that were in use
};

// Least recently used first, unlinks prepared files (not temporaries) of `dir` until
// their total is at most `bound`, skipping `keep` (a file name) and every file in use.
// A file larger than the bound on its own stays when it is `keep` or in use: the
// total then exceeds the bound until that file is no longer needed (the next write
// evicts it).
EvictReport evict_prepared(const std::string& dir, int64_t bound, const std::string& keep);

// dlrun --cache clear: unlinks every prepared file not in use and every temporary of a
// dead writer. `kept` counts what stayed (in use, being written).
struct ClearReport {
  int removed = 0;
  int64_t removed_bytes = 0;
  int kept = 0;
};
ClearReport clear_prepared_cache(const std::string& dir);

// user_cache_dir()/prepared (created when missing); errors name the directory and the fix.
Expected<std::string> prepared_cache_dir();

}  // namespace dlr
