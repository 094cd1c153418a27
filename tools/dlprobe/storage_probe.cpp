// dlprobe's storage phase: see storage_probe.h. Plain C++ (every build).
#include "tools/dlprobe/storage_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <utility>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace dlr::probe {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;
using Clock = std::chrono::steady_clock;

// CPU time of the whole process (every thread), seconds.
double process_cpu_seconds() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

std::string errno_text() { return std::strerror(errno); }

// Creates `bytes` bytes of non-repeating content (not zeros: no filesystem can
// shortcut them) in dir/dlprobe-storage-XXXXXX, written and synced.
Status create_file(const std::string& dir, int64_t bytes, TempFile* out) {
  std::string tmpl = (dir.empty() ? "." : dir) + "/dlprobe-storage-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) return io_error("storage: cannot create a file in '" + dir + "': " + errno_text());
  out->path = name.data();
  std::vector<uint64_t> chunk(size_t(4 * kMiB / 8));
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (uint64_t& v : chunk) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = x;
  }
  Status st;
  for (int64_t done = 0; done < bytes && st.ok();) {
    chunk[0] = uint64_t(done);  // every 4 MiB chunk differs
    const int64_t n = std::min<int64_t>(bytes - done, 4 * kMiB);
    const ssize_t w = ::write(fd, chunk.data(), size_t(n));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) st = io_error("storage: cannot write '" + out->path + "': " + errno_text());
    else done += w;
  }
  if (st.ok() && ::fsync(fd) != 0) st = io_error("storage: cannot sync '" + out->path + "': " + errno_text());
  ::close(fd);
  return st;
}

// Sequential reads of `block` bytes, `depth` in flight, from offset 0 (wrapping at the
// end of the file), after dropping the file from the page cache. Stops after
// `pass_bytes` or `max_seconds`, whichever comes first, but never before 4 * depth
// reads. Time: first submit to last completion.
Expected<StorageRun> timed_run(const std::string& path, ReaderKind kind, bool direct, int64_t block, int depth,
                               int64_t file_bytes, double max_seconds, char* buf, int64_t pass_bytes) {
  DLR_RETURN_IF_ERROR(drop_page_cache(path));
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<BlockReader> reader, BlockReader::open(path, kind, depth, direct));
  std::vector<int64_t> tickets(size_t(depth), -1);
  const int64_t usable = file_bytes / block * block;
  const int64_t min_reads = 4 * int64_t(depth);
  int64_t reads = 0, offset = 0, bytes = 0;
  const Clock::time_point t0 = Clock::now();
  const double cpu0 = process_cpu_seconds();
  double elapsed = 0;
  for (;;) {
    const bool pass_done = bytes >= pass_bytes;
    if (reads >= min_reads && (pass_done || elapsed >= max_seconds)) break;
    const size_t slot = size_t(reads % depth);
    if (tickets[slot] >= 0) DLR_RETURN_IF_ERROR(reader->wait(tickets[slot]));
    DLR_ASSIGN_OR_RETURN(tickets[slot], reader->submit({offset, block, buf + int64_t(slot) * block}));
    ++reads;
    bytes += block;
    offset += block;
    if (offset >= usable) offset = 0;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  DLR_RETURN_IF_ERROR(reader->wait_all());
  StorageRun r;
  r.kind = reader->kind();
  r.block = block;
  r.depth = depth;
  r.bytes = bytes;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.gbps = r.seconds > 0 ? double(bytes) / r.seconds / 1e9 : 0;
  r.cpu_ms_per_gb = 1e3 * (process_cpu_seconds() - cpu0) / (double(bytes) / 1e9);
  return r;
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\n')) line.pop_back();
  return line;
}

std::string fs_name(const std::string& path) {
  struct statfs s {};
  if (::statfs(path.c_str(), &s) != 0) return "unknown filesystem";
  static const std::pair<unsigned long, const char*> kinds[] = {
      {0xEF53, "ext4"},         {0x58465342, "xfs"},   {0x9123683E, "btrfs"}, {0x01021994, "tmpfs"},
      {0x794c7630, "overlayfs"}, {0x6969, "nfs"},       {0x2fc12fc1, "zfs"},   {0xF2F52010, "f2fs"},
      {0x65735546, "fuse"},     {0x4d44, "vfat"},      {0x5346544e, "ntfs"}};
  for (const auto& k : kinds)
    if ((unsigned long)s.f_type == k.first) return k.second;
  char buf[32];
  std::snprintf(buf, sizeof buf, "filesystem 0x%lx", (unsigned long)s.f_type);
  return buf;
}

}  // namespace

std::string describe_storage(const std::string& path, const std::string& label) {
  std::string d = (label.empty() ? path : label) + " on " + fs_name(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return d;
  const std::string sys = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  std::ifstream uevent(sys + "/uevent");
  std::string line, dev;
  while (std::getline(uevent, line))
    if (line.rfind("DEVNAME=", 0) == 0) dev = line.substr(8);
  if (dev.empty()) return d + " (device " + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)) + ")";
  std::string model = read_line(sys + "/device/model");
  if (model.empty()) model = read_line(sys + "/../device/model");  // a partition: its disk's model
  return d + ", /dev/" + dev + (model.empty() ? "" : " (" + model + ")");
}

TempFile::~TempFile() {
  if (!path.empty()) ::unlink(path.c_str());
}

Status open_probe_file(const std::string& file, const std::string& dir_option, int64_t bytes, ProbeFile* out) {
  if (file.empty()) {
    std::string dir = dir_option;
    if (dir.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      dir = tmp && *tmp ? tmp : ".";
    }
    std::fprintf(stderr, "dlprobe storage: writing a %lld MiB test file in %s\n", (long long)(bytes >> 20),
                 dir.c_str());
    DLR_RETURN_IF_ERROR(create_file(dir, bytes, &out->temp));
    out->path = out->temp.path;
    out->temporary = true;
  } else {
    out->path = file;
  }
  struct stat st {};
  if (::stat(out->path.c_str(), &st) != 0)
    return io_error("storage: cannot stat '" + out->path + "': " + errno_text());
  out->bytes = int64_t(st.st_size);
  std::string label;
  if (out->temporary) {
    const size_t slash = out->path.rfind('/');
    label = "a temporary file in " + (slash == std::string::npos ? std::string(".") : out->path.substr(0, slash));
  }
  out->device = describe_storage(out->path, label);
  if (out->bytes < 4 * kMiB)
    return invalid_argument("storage: '" + out->path + "' has " + std::to_string(out->bytes) +
                            " bytes; at least 4 MiB are needed");
  return Status();
}

Expected<AlignedBuffer> aligned_buffer(int64_t bytes) {
  void* p = nullptr;
  if (::posix_memalign(&p, size_t(BlockReader::kDirectAlign), size_t(bytes)) != 0)
    return out_of_memory("storage: cannot allocate " + std::to_string(bytes >> 20) + " MiB of read buffers");
  std::memset(p, 0, size_t(bytes));  // fault the pages in before timing
  return AlignedBuffer(static_cast<char*>(p));
}

Expected<StorageResult> run_storage_probe(const StorageOptions& o) {
  const Clock::time_point t0 = Clock::now();
  StorageResult res;
  ProbeFile pf;
  DLR_RETURN_IF_ERROR(open_probe_file(o.file, o.dir, o.file_bytes, &pf));
  res.file = pf.path;
  res.file_bytes = pf.bytes;
  res.temporary = pf.temporary;
  res.device = pf.device;

  const std::vector<int64_t> blocks = o.quick ? std::vector<int64_t>{64 * kKiB, 1 * kMiB, 16 * kMiB}
                                              : std::vector<int64_t>{64 * kKiB, 256 * kKiB, 1 * kMiB, 4 * kMiB, 16 * kMiB};
  const std::vector<int> depths = o.quick ? std::vector<int>{1, 4, 16} : std::vector<int>{1, 2, 4, 8, 16};
  std::vector<ReaderKind> kinds;
  if (uring_available()) kinds.push_back(ReaderKind::kUring);
  else
    std::fprintf(stderr, "dlprobe storage: io_uring is not available (no liburing in this build, or the kernel "
                         "refuses a ring): threads only\n");
  kinds.push_back(ReaderKind::kThreads);
  const double max_seconds = o.quick ? 0.25 : 0.6;
  const int64_t pass = res.file_bytes;

  int64_t buf_bytes = 0;
  for (int64_t b : blocks)
    for (int d : depths)
      if (b <= res.file_bytes) buf_bytes = std::max(buf_bytes, b * d);
  DLR_ASSIGN_OR_RETURN(AlignedBuffer buf, aligned_buffer(std::max(buf_bytes, 1 * kMiB)));

  for (ReaderKind kind : kinds)
    for (int d : depths)
      for (int64_t b : blocks) {
        if (b > res.file_bytes) continue;
        DLR_ASSIGN_OR_RETURN(StorageRun r, timed_run(res.file, kind, true, b, d, res.file_bytes, max_seconds,
                                                     buf.get(), pass));
        std::fprintf(stderr, "dlprobe storage: %-7s depth %2d block %6lld KiB: %.3f GB/s, %.0f CPU ms/GB\n",
                     reader_kind_name(kind), d, (long long)(b / kKiB), r.gbps, r.cpu_ms_per_gb);
        res.direct.push_back(r);
      }
  auto cached = page_cache_bytes(res.file);
  if (cached.ok()) res.cached_after_direct = *cached;

  // Buffered: one pass of 1 MiB reads from an uncached file (at most 2 s of it), then
  // the same bytes again from the page cache.
  DLR_ASSIGN_OR_RETURN(StorageRun cold, timed_run(res.file, ReaderKind::kThreads, false, 1 * kMiB, 1,
                                                  res.file_bytes, 2.0, buf.get(), pass));
  res.buffered_gbps = cold.gbps;
  res.buffered_bytes = cold.bytes;
  {
    DLR_ASSIGN_OR_RETURN(std::unique_ptr<BlockReader> reader, BlockReader::open(res.file, ReaderKind::kThreads, 1, false));
    const int64_t usable = res.file_bytes / kMiB * kMiB;
    const Clock::time_point w0 = Clock::now();
    for (int64_t done = 0, off = 0; done < cold.bytes; done += kMiB, off = (off + kMiB) % usable) {
      DLR_ASSIGN_OR_RETURN(int64_t t, reader->submit({off, kMiB, buf.get()}));
      DLR_RETURN_IF_ERROR(reader->wait(t));
    }
    const double s = std::chrono::duration<double>(Clock::now() - w0).count();
    res.cached_gbps = s > 0 ? double(cold.bytes) / s / 1e9 : 0;
  }
  std::fprintf(stderr, "dlprobe storage: buffered %.3f GB/s uncached, %.3f GB/s cached\n", res.buffered_gbps,
               res.cached_gbps);
  (void)drop_page_cache(res.file);  // leave no cache behind (advisory)

  // The better kind: geometric mean of uring/threads over the points both measured
  // (every point weighs the same, whatever its absolute bandwidth).
  if (kinds.size() == 2) {
    double log_sum = 0;
    for (const StorageRun& u : res.direct)
      for (const StorageRun& t : res.direct)
        if (u.kind == ReaderKind::kUring && t.kind == ReaderKind::kThreads && u.block == t.block &&
            u.depth == t.depth && u.gbps > 0 && t.gbps > 0)
          log_sum += std::log(u.gbps / t.gbps);
    res.best = log_sum >= 0 ? ReaderKind::kUring : ReaderKind::kThreads;
  } else {
    res.best = ReaderKind::kThreads;
  }
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

StorageProfile storage_profile_from(const StorageResult& r) {
  StorageProfile s;
  s.device = r.device;
  s.reader = reader_kind_name(r.best);
  std::map<std::pair<int, int64_t>, double> pts;  // sorted by (depth, block)
  for (const StorageRun& run : r.direct)
    if (run.kind == r.best && run.gbps > 0) pts[{run.depth, run.block}] = run.gbps;
  for (const auto& [key, gbps] : pts) s.direct.push_back({key.second, key.first, gbps});
  s.buffered_gbps = r.buffered_gbps;
  s.cached_gbps = r.cached_gbps;
  return s;
}

}  // namespace dlr::probe
