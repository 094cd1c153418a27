// dlprobe's storage phase (all builds, no GPU needed): O_DIRECT read bandwidth of a
// file by block size and queue depth with both BlockReader kinds, and buffered reads
// of the file uncached and cached. Feeds CopyProfile::storage.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/storage/block_reader.h"
#include "runtime/streaming/copy_profile.h"

namespace dlr::probe {

struct StorageOptions {
  std::string file;               // measure this existing file (kept); "" = a temporary file
  std::string dir;                // where the temporary file goes ("" = $TMPDIR, else the current directory)
  int64_t file_bytes = 512 << 20; // size of the temporary file
  bool quick = false;             // blocks 64K/1M/16M, depths 1/4/16, shorter runs
};

// One run: sequential O_DIRECT reads of `block` bytes, `depth` in flight.
struct StorageRun {
  ReaderKind kind = ReaderKind::kThreads;
  int64_t block = 0;
  int depth = 1;
  int64_t bytes = 0;     // read in the run
  double seconds = 0;
  double gbps = 0;       // bytes / seconds / 1e9
  double cpu_ms_per_gb = 0;  // the process's CPU time (all threads) per GB read
};

struct StorageResult {
  std::string file;                 // what was read
  std::string device;               // file, filesystem, block device
  int64_t file_bytes = 0;
  bool temporary = false;           // the file was created (and removed) by the probe
  std::vector<StorageRun> direct;   // every kind x block x depth measured
  double buffered_gbps = 0;         // 1 MiB buffered reads after POSIX_FADV_DONTNEED
  double cached_gbps = 0;           // the same reads again, from the page cache
  int64_t buffered_bytes = 0;       // bytes of each buffered pass
  int64_t cached_after_direct = -1; // page-cache bytes of the file after the O_DIRECT runs (-1: unknown)
  ReaderKind best = ReaderKind::kThreads;  // geometric mean of the uring/threads GB/s ratios >= 1: uring
  double seconds = 0;               // wall time of the phase, file creation included
};

// Removes the probe's own temporary file (when `path` is set) at scope exit.
struct TempFile {
  std::string path;
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile();
};

// The file a storage measurement reads: `file` (kept), or, when empty, a temporary file
// of `bytes` non-repeating bytes written and synced in `dir` ("" = $TMPDIR, else the
// current directory), removed with *out. At least 4 MiB; errors are one line.
struct ProbeFile {
  std::string path;
  std::string device;  // describe_storage()
  int64_t bytes = 0;   // its size
  bool temporary = false;
  TempFile temp;
};
Status open_probe_file(const std::string& file, const std::string& dir, int64_t bytes, ProbeFile* out);

// A zeroed (pages faulted in) buffer aligned for O_DIRECT.
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<char, FreeDeleter>;
Expected<AlignedBuffer> aligned_buffer(int64_t bytes);

// Progress lines on stderr. Every failure is a one-line Status; the temporary file is
// removed on every path.
Expected<StorageResult> run_storage_probe(const StorageOptions& options);

// The best kind's points (sorted by depth, block), buffered and cached figures.
StorageProfile storage_profile_from(const StorageResult& r);

// "<label or path> on ext4, /dev/vda (model)" as far as statfs and /sys tell.
std::string describe_storage(const std::string& path, const std::string& label = "");

}  // namespace dlr::probe
