// The prepared weight file (prepared_file.h): its identity, writing one, the cache of
// them, and dlrun --prepare. Reading one: prepared_read.cpp.
#include "runtime/storage/prepared_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "runtime/cache/cache_dir.h"
#include "runtime/core/log.h"
#include "runtime/storage/crc32c.h"
#include "runtime/storage/prepared_cache.h"
#include "runtime/storage/prepared_file_io.h"
#include "runtime/weight_store.h"

namespace dlr {

using namespace prepared_detail;

namespace {

Status write_all(int fd, const void* src, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(src);
  while (n > 0) {
    const ssize_t r = ::write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return io_error(path + ": write failed: " + errno_text());
    p += r;
    n -= size_t(r);
  }
  return Status();
}

Expected<std::vector<char>> read_small_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_error(path + ": cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return io_error(path + ": cannot stat: " + errno_text());
  if (st.st_size > (int64_t(64) << 20)) return invalid_argument(path + ": cfg file larger than 64 MiB");
  std::vector<char> bytes(size_t(st.st_size));
  if (!bytes.empty()) DLR_RETURN_IF_ERROR(pread_all(fd.get(), bytes.data(), bytes.size(), 0, path));
  return bytes;
}

std::string dirname_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string stem_of(const std::string& path) {
  std::string base = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  const size_t dot = base.rfind('.');
  if (dot != std::string::npos && dot > 0) base.resize(dot);
  std::string safe;
  for (char c : base) safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return safe.empty() ? "model" : safe.substr(0, 64);
}

// A temporary file removed unless released.
struct TempFile {
  std::string path;
  Fd fd;
  bool keep = false;
  ~TempFile() {
    fd.reset();
    if (!keep && !path.empty()) ::unlink(path.c_str());
  }
};

// Creates `path`.tmp.XXXXXX write-locked (prepared_cache.h): a cleaner that locked the
// name first removes it, so once locked the name must still be ours, else try another.
Status create_locked_temp(const std::string& path, TempFile* tmp) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string templ = path + ".tmp.XXXXXX";
    std::vector<char> name(templ.begin(), templ.end());
    name.push_back('\0');
    const int fd = ::mkstemp(name.data());
    if (fd < 0) return io_error("cannot create a file in " + dirname_of(path) + " (for " + path + "): " + errno_text());
    Fd owned(fd);
    const int err = lock_whole_file(fd, true, false);
    if (err == EAGAIN) continue;  // a cleaner holds it and will unlink it
    struct stat by_name {}, by_fd {};
    if (::stat(name.data(), &by_name) != 0 || ::fstat(fd, &by_fd) != 0 || by_name.st_ino != by_fd.st_ino)
      continue;  // a cleaner removed it before our lock
    if (err != 0) DLR_LOG_DEBUG("{}: no write lock ({}): a dead writer's file cannot be told from it", name.data(),
                                std::strerror(err));
    tmp->path = name.data();
    tmp->fd = std::move(owned);
    ::fchmod(fd, 0644);
    return Status();
  }
  return io_error("cannot create a temporary file in " + dirname_of(path) + " (for " + path +
                  "): every name was taken by another process's cleanup");
}

}  // namespace

// ---------------------------------------------------------------- identity

Expected<PreparedIdentity> prepared_identity(const std::string& cfg_path, const std::string& weights_path,
                                             const ExecutionPlan& plan) {
  if (plan.weights.empty()) return invalid_argument(cfg_path + ": the network has no weights to prepare");
  PreparedIdentity id;
  id.cfg_path = cfg_path;
  DLR_ASSIGN_OR_RETURN(std::vector<char> cfg, read_small_file(cfg_path));
  id.cfg_hash = XXH3_64bits(cfg.data(), cfg.size());
  char* real = ::realpath(weights_path.c_str(), nullptr);
  if (!real) return io_error(weights_path + ": cannot resolve the path: " + errno_text());
  id.weights_path = real;
  std::free(real);
  struct stat st {};
  if (::stat(id.weights_path.c_str(), &st) != 0) return io_error(weights_path + ": cannot stat: " + errno_text());
  id.weights_size = int64_t(st.st_size);
  id.weights_mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + int64_t(st.st_mtim.tv_nsec);
  id.dtype = plan.weights.front().dtype;
  id.layout = plan.options.layout;
  id.format = plan.options.weight_format;  // int8: the blobs conv_weight_format gives int8; the others fp
  for (const WeightBlob& b : plan.weights) {
    if (b.dtype != id.dtype)
      return internal_error(cfg_path + ": plan weight blobs of mixed dtypes");
    id.blob_bytes.push_back(b.bytes);
  }
  return id;
}

Status hash_weights_content(PreparedIdentity* id) {
  const std::string& path = id->weights_path;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_error(path + ": cannot open: " + errno_text());
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  std::vector<char> buf(kIoChunk);
  int64_t total = 0;
  for (;;) {
    const ssize_t r = ::read(fd.get(), buf.data(), buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return io_error(path + ": read failed at offset " + std::to_string(total) + ": " + errno_text());
    if (r == 0) break;
    XXH3_64bits_update(&state, buf.data(), size_t(r));
    total += r;
  }
  if (total != id->weights_size)
    return io_error(path + ": " + std::to_string(total) + " bytes, but " + std::to_string(id->weights_size) +
                    " when its identity was taken (the file changed)");
  id->weights_hash = XXH3_64bits_digest(&state);
  if (id->weights_hash == 0) id->weights_hash = 1;  // 0 means "not computed"
  return Status();
}

// ---------------------------------------------------------------- writing

namespace {

// write_prepared_file; *dest_failed: the failure was creating, writing or renaming the
// file (the destination's fault: read-only media, no space), not reading the source.
// *hold, when given: the written file's read lock (prepared_cache.h).
Status write_prepared(const std::string& path, const ExecutionPlan& plan, WeightSource& source,
                      const PreparedIdentity& id_in, bool* dest_failed, int threads, PreparedUse* hold = nullptr) {
  *dest_failed = false;
  const size_t n = plan.weights.size();
  if (n == 0 || n > kPreparedMaxBlobs)
    return invalid_argument(path + ": a prepared file holds 1 to " + std::to_string(kPreparedMaxBlobs) +
                            " blobs (the plan has " + std::to_string(n) + ")");
  if (id_in.blob_bytes.size() != n || id_in.layout != plan.options.layout)
    return invalid_argument(path + ": the identity was taken for another plan");
  PreparedIdentity id = id_in;
  if (id.weights_hash == 0) DLR_RETURN_IF_ERROR(hash_weights_content(&id));

  // Table first (offsets follow from sizes alone).
  const int64_t header_bytes = header_bytes_for(int64_t(n));
  std::vector<PreparedBlob> table(n);
  int64_t at = header_bytes, largest = 0;
  for (size_t i = 0; i < n; ++i) {
    const WeightBlob& b = plan.weights[i];
    if (b.bytes <= 0 || b.bytes != id.blob_bytes[i] || b.dtype != id.dtype)
      return invalid_argument(path + ": plan blob " + std::to_string(i) + " does not match the identity");
    table[i].offset = at;
    table[i].bytes = b.bytes;
    table[i].layer = b.layer;
    table[i].filter_begin = b.filter_begin;
    table[i].filters = b.filters;
    table[i].channel_begin = b.channel_begin;
    table[i].channels = b.channels;
    at = align_up(at + b.bytes, kPreparedAlign);
    largest = std::max(largest, align_up(b.bytes, kPreparedAlign));
  }
  const int64_t file_bytes = at;

  TempFile tmp;
  remove_stale_temporaries(dirname_of(path), path.substr(path.rfind('/') + 1));
  *dest_failed = true;
  DLR_RETURN_IF_ERROR(create_locked_temp(path, &tmp));
  *dest_failed = false;

  std::vector<unsigned char> header(size_t(header_bytes), 0);
  *dest_failed = true;
  DLR_RETURN_IF_ERROR(write_all(tmp.fd.get(), header.data(), header.size(), tmp.path));  // placeholder
  *dest_failed = false;
  DLR_ASSIGN_OR_RETURN(HostBuffer buf, HostBuffer::aligned(size_t(largest)));
  char* p = static_cast<char*>(buf.data());
  std::vector<int64_t> only(n, -1);  // prepare_blobs' offsets: blob i at the buffer's start
  for (size_t i = 0; i < n; ++i) {
    const WeightBlob& b = plan.weights[i];
    const int64_t padded = align_up(b.bytes, kPreparedAlign);
    only[i] = 0;
    DLR_RETURN_IF_ERROR(prepare_blobs(plan, source, only, p, threads));
    only[i] = -1;
    std::memset(p + b.bytes, 0, size_t(padded - b.bytes));
    table[i].crc32c = crc32c(p, size_t(b.bytes));
    *dest_failed = true;
    DLR_RETURN_IF_ERROR(write_all(tmp.fd.get(), p, size_t(padded), tmp.path));
    *dest_failed = false;
  }
  *dest_failed = true;  // from here on only the destination can fail

  unsigned char* h = header.data();
  std::memcpy(h, kMagic, 8);
  put_u32(h + 8, kPreparedFormatVersion);
  put_u64(h + 16, uint64_t(header_bytes));
  put_u64(h + 24, uint64_t(file_bytes));
  put_u64(h + 32, id.cfg_hash);
  put_u64(h + 40, id.weights_hash);
  put_u64(h + 48, uint64_t(id.weights_size));
  put_u64(h + 56, uint64_t(id.weights_mtime_ns));
  h[64] = id.dtype == DType::kF16 ? 1 : 0;
  h[65] = id.layout == Layout::kNHWC ? 1 : 0;
  h[66] = id.format == WeightFormat::kInt8 ? 1 : 0;
  h[67] = 0;
  put_u32(h + 68, uint32_t(n));
  for (size_t i = 0; i < n; ++i) {
    unsigned char* e = h + kFixedHeader + kEntryBytes * int64_t(i);
    put_u64(e, uint64_t(table[i].offset));
    put_u64(e + 8, uint64_t(table[i].bytes));
    put_u32(e + 16, table[i].crc32c);
    put_u32(e + 20, uint32_t(table[i].layer));
    put_u32(e + 24, uint32_t(table[i].filter_begin));
    put_u32(e + 28, uint32_t(table[i].filters));
    put_u32(e + 32, uint32_t(table[i].channel_begin));
    put_u32(e + 36, uint32_t(table[i].channels));
  }
  put_u32(h + kCrcField, crc32c(h, header.size()));
  if (::pwrite(tmp.fd.get(), h, header.size(), 0) != ssize_t(header.size()))
    return io_error(tmp.path + ": writing the header failed: " + errno_text());
  if (::fsync(tmp.fd.get()) != 0) return io_error(tmp.path + ": fsync failed: " + errno_text());
  // The write lock is held through the rename (a cleaner would otherwise take the
  // finished temporary for a dead writer's), then becomes the caller's read lock.
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    return io_error("cannot rename " + tmp.path + " to " + path + ": " + errno_text());
  tmp.keep = true;
  if (hold && lock_whole_file(tmp.fd.get(), false, false) == 0) {
    *hold = PreparedUse(tmp.fd.release());
  }
  tmp.fd.reset();
  Fd dir(::open(dirname_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) ::fsync(dir.get());  // the rename durable; best effort (some file systems refuse)
  *dest_failed = false;
  return Status();
}

}  // namespace

Status write_prepared_file(const std::string& path, const ExecutionPlan& plan, WeightSource& source,
                           const PreparedIdentity& id, int threads) {
  bool dest_failed = false;
  return write_prepared(path, plan, source, id, &dest_failed, threads);
}

// ---------------------------------------------------------------- cache

Expected<std::string> prepared_cache_path(const PreparedIdentity& id) {
  DLR_ASSIGN_OR_RETURN(const std::string dir, prepared_cache_dir());
  // The key: everything of the cheap identity, nothing that needs the .weights bytes.
  std::vector<unsigned char> key(8 * 5 + 3);
  put_u64(key.data(), id.cfg_hash);
  put_u64(key.data() + 8, uint64_t(id.weights_size));
  put_u64(key.data() + 16, uint64_t(id.weights_mtime_ns));
  put_u64(key.data() + 24, uint64_t(id.blob_bytes.size()));
  put_u64(key.data() + 32, 0);
  key[40] = id.dtype == DType::kF16 ? 1 : 0;
  key[41] = id.layout == Layout::kNHWC ? 1 : 0;
  key[42] = id.format == WeightFormat::kInt8 ? 1 : 0;
  for (int64_t b : id.blob_bytes) {
    unsigned char v[8];
    put_u64(v, uint64_t(b));
    key.insert(key.end(), v, v + 8);
  }
  key.insert(key.end(), id.weights_path.begin(), id.weights_path.end());
  return dir + "/" + stem_of(id.cfg_path) + "-" + hex(XXH3_64bits(key.data(), key.size()), 16) + ".dlrw";
}

namespace {

// Whether the cached file at `path` is valid for (id, plan): true with it read-locked
// in *use; false (with *why when it exists) when it must be (re)built.
Expected<bool> use_cached(const std::string& path, const PreparedIdentity& id, const ExecutionPlan& plan,
                          PreparedCheck check, PreparedUse* use, std::string* why) {
  DLR_ASSIGN_OR_RETURN(const bool present, PreparedUse::acquire(path, use));
  if (!present) return false;
  Expected<PreparedFile> f = PreparedFile::open(path, plan, &id);
  Status valid = f.ok() ? Status() : f.status();
  if (valid.ok() && check == PreparedCheck::kFull) valid = f->verify_all();
  if (valid.ok()) return true;
  use->release();
  *why = valid.message();
  DLR_LOG_WARN("rebuilding the prepared weight file: {}", *why);
  return false;
}

}  // namespace

Expected<std::string> ensure_prepared(const PreparedIdentity& id, const ExecutionPlan& plan, WeightSource& source,
                                      bool* built, PreparedCheck check, std::string* why_rebuilt,
                                      const PreparedCacheUse& cache) {
  if (built) *built = false;
  if (why_rebuilt) why_rebuilt->clear();
  DLR_ASSIGN_OR_RETURN(std::string path, prepared_cache_path(id));
  const std::string dir = dirname_of(path), name = path.substr(dir.size() + 1);
  DLR_ASSIGN_OR_RETURN(const int64_t bound, cache_bound_bytes(cache.max_bytes, dir));
  remove_stale_temporaries(dir);
  PreparedUse use;
  std::string why;
  DLR_ASSIGN_OR_RETURN(const bool cached, use_cached(path, id, plan, check, &use, &why));
  if (why_rebuilt) *why_rebuilt = why;
  if (!cached) {
    bool dest_failed = false;
    Status w = write_prepared(path, plan, source, id, &dest_failed, cache.threads, &use);
    if (!w.ok()) {
      if (!dest_failed) return w;
      return io_error("prepared weight cache " + dir + ": " + w.message() +
                      (why.empty() ? std::string() : " (while replacing a stale entry: " + why + ")") +
                      " (set DLR_CACHE_DIR to a writable directory, or write the file with dlrun --prepare OUT to "
                      "writable storage)");
    }
    if (built) *built = true;
    DLR_ASSIGN_OR_RETURN(PreparedFile check_again, PreparedFile::open(path, plan, &id));
    (void)check_again;
  }
  touch_used(path);
  evict_prepared(dir, bound, name);
  if (cache.hold) *cache.hold = std::move(use);
  return path;
}

// ---------------------------------------------------------------- dlrun --prepare

}  // namespace dlr
