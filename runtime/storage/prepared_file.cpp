#include "runtime/storage/prepared_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "runtime/cache/cache_dir.h"
#include "runtime/compile/compile.h"
#include "runtime/core/log.h"
#include "runtime/storage/crc32c.h"
#include "runtime/weight_store.h"

namespace dlr {
namespace {

constexpr char kMagic[8] = {'D', 'L', 'R', 'W', 'P', 'R', 'E', 'P'};
constexpr int64_t kFixedHeader = 72;
constexpr int64_t kEntryBytes = 24;
constexpr int64_t kCrcField = 12;
constexpr size_t kIoChunk = size_t(8) << 20;  // hashing and verification read this much at a time

std::string hex(uint64_t v, int digits) {
  static const char* d = "0123456789abcdef";
  std::string s(size_t(digits), '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) s[size_t(i)] = d[v & 15];
  return s;
}
std::string hex32(uint32_t v) { return "0x" + hex(v, 8); }
std::string errno_text() { return std::strerror(errno); }

// ---- little-endian encoding ----
void put_u16(unsigned char* p, uint16_t v) {
  for (int i = 0; i < 2; ++i) p[i] = uint8_t(v >> (8 * i));
}
void put_u32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
void put_u64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

int64_t header_bytes_for(int64_t blobs) { return align_up(kFixedHeader + kEntryBytes * blobs, kPreparedAlign); }

// An owned file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : m_fd(fd) {}
  Fd(Fd&& o) noexcept : m_fd(o.m_fd) { o.m_fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      m_fd = o.m_fd;
      o.m_fd = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return m_fd; }
  void reset() {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
  }

 private:
  int m_fd;
};

// Reads exactly n bytes at off (retrying short reads and EINTR).
Status pread_all(int fd, void* dst, size_t n, int64_t off, const std::string& path) {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return io_error(path + ": read at offset " + std::to_string(off) + " failed: " + errno_text());
    if (r == 0)
      return io_error(path + ": unexpected end of file at offset " + std::to_string(off) + " (" + std::to_string(n) +
                      " more bytes expected)");
    p += r;
    n -= size_t(r);
    off += r;
  }
  return Status();
}

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

const char* dtype_code_name(uint8_t v) { return v == 0 ? "f32" : v == 1 ? "f16" : "unknown"; }
const char* layout_code_name(uint8_t v) { return v == 0 ? "NCHW" : v == 1 ? "NHWC" : "unknown"; }

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
  for (const WeightBlob& b : plan.weights) {
    if (b.dtype != id.dtype) return internal_error(cfg_path + ": plan weight blobs of mixed dtypes");
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

Expected<ExecutionPlan> plan_for_prepare(const NetworkDesc& net, const SessionOptions& options) {
  DLR_RETURN_IF_ERROR(validate_options(options));
  // A prepared file is read by storage runs, whose blobs are whole 4 KiB pages
  // (PlannerOptions::weight_align): plan as one, whatever --weights-from says.
  SessionOptions storage = options;
  storage.weights_from = WeightsFrom::kStorage;
  storage.mode = options.device == DeviceKind::kCUDA ? WeightMode::kStream : options.mode;
  return build_plan(net, planner_options(options.device, storage));
}

// ---------------------------------------------------------------- writing

namespace {

// write_prepared_file; *dest_failed: the failure was creating, writing or renaming the
// file (the destination's fault: read-only media, no space), not reading the source.
Status write_prepared(const std::string& path, const ExecutionPlan& plan, WeightSource& source,
                      const PreparedIdentity& id_in, bool* dest_failed) {
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
    at = align_up(at + b.bytes, kPreparedAlign);
    largest = std::max(largest, align_up(b.bytes, kPreparedAlign));
  }
  const int64_t file_bytes = at;

  TempFile tmp;
  {
    std::string templ = path + ".tmp.XXXXXX";
    std::vector<char> name(templ.begin(), templ.end());
    name.push_back('\0');
    const int fd = ::mkstemp(name.data());
    *dest_failed = fd < 0;
    if (fd < 0)
      return io_error("cannot create a file in " + dirname_of(path) + " (for " + path + "): " + errno_text());
    tmp.path = name.data();
    tmp.fd = Fd(fd);
    ::fchmod(fd, 0644);
  }

  std::vector<unsigned char> header(size_t(header_bytes), 0);
  *dest_failed = true;
  DLR_RETURN_IF_ERROR(write_all(tmp.fd.get(), header.data(), header.size(), tmp.path));  // placeholder
  *dest_failed = false;
  DLR_ASSIGN_OR_RETURN(HostBuffer buf, HostBuffer::aligned(size_t(largest)));
  char* p = static_cast<char*>(buf.data());
  for (size_t i = 0; i < n; ++i) {
    const WeightBlob& b = plan.weights[i];
    const int64_t padded = align_up(b.bytes, kPreparedAlign);
    DLR_RETURN_IF_ERROR(source.prepare(b, plan.options.layout, p));
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
  put_u16(h + 66, 0);
  put_u32(h + 68, uint32_t(n));
  for (size_t i = 0; i < n; ++i) {
    unsigned char* e = h + kFixedHeader + kEntryBytes * int64_t(i);
    put_u64(e, uint64_t(table[i].offset));
    put_u64(e + 8, uint64_t(table[i].bytes));
    put_u32(e + 16, table[i].crc32c);
    put_u32(e + 20, uint32_t(table[i].layer));
  }
  put_u32(h + kCrcField, crc32c(h, header.size()));
  if (::pwrite(tmp.fd.get(), h, header.size(), 0) != ssize_t(header.size()))
    return io_error(tmp.path + ": writing the header failed: " + errno_text());
  if (::fsync(tmp.fd.get()) != 0) return io_error(tmp.path + ": fsync failed: " + errno_text());
  tmp.fd.reset();
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    return io_error("cannot rename " + tmp.path + " to " + path + ": " + errno_text());
  tmp.keep = true;
  Fd dir(::open(dirname_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) ::fsync(dir.get());  // the rename durable; best effort (some file systems refuse)
  *dest_failed = false;
  return Status();
}

}  // namespace

Status write_prepared_file(const std::string& path, const ExecutionPlan& plan, WeightSource& source,
                           const PreparedIdentity& id) {
  bool dest_failed = false;
  return write_prepared(path, plan, source, id, &dest_failed);
}

// ---------------------------------------------------------------- reading

bool has_prepared_magic(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return false;
  unsigned char magic[sizeof(kMagic)] = {};
  size_t got = 0;
  while (got < sizeof(magic)) {
    const ssize_t n = ::pread(fd.get(), magic + got, sizeof(magic) - got, off_t(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += size_t(n);
  }
  return std::memcmp(magic, kMagic, sizeof(kMagic)) == 0;
}

Expected<PreparedFile> PreparedFile::open(const std::string& path, const ExecutionPlan& plan,
                                          const PreparedIdentity* expect) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_error(path + ": cannot open the prepared weight file: " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return io_error(path + ": cannot stat: " + errno_text());
  const int64_t size = int64_t(st.st_size);
  if (size < kPreparedAlign)
    return parse_error(path + ": truncated prepared weight file: " + std::to_string(size) + " bytes, at least " +
                       std::to_string(kPreparedAlign) + " expected");
  std::vector<unsigned char> first(static_cast<size_t>(kPreparedAlign));
  DLR_RETURN_IF_ERROR(pread_all(fd.get(), first.data(), first.size(), 0, path));
  if (std::memcmp(first.data(), kMagic, 8) != 0)
    return parse_error(path + ": not a dlrun prepared weight file (magic \"DLRWPREP\" expected at offset 0)");
  const uint32_t version = get_u32(first.data() + 8);
  if (version != kPreparedFormatVersion)
    return parse_error(path + ": prepared weight file format version " + std::to_string(version) +
                       ", this dlrun reads version " + std::to_string(kPreparedFormatVersion) +
                       " (prepare it again: dlrun --prepare)");
  const uint32_t count = get_u32(first.data() + 68);
  if (count == 0 || count > kPreparedMaxBlobs)
    return parse_error(path + ": offset 68: blob count " + std::to_string(count) + " outside 1.." +
                       std::to_string(kPreparedMaxBlobs));
  const uint64_t header_bytes = get_u64(first.data() + 16);
  if (header_bytes != uint64_t(header_bytes_for(count)))
    return parse_error(path + ": offset 16: header size " + std::to_string(header_bytes) + ", " +
                       std::to_string(header_bytes_for(count)) + " expected for " + std::to_string(count) + " blobs");
  if (int64_t(header_bytes) > size)
    return parse_error(path + ": truncated prepared weight file: " + std::to_string(size) +
                       " bytes, shorter than its header (" + std::to_string(header_bytes) + " bytes)");
  std::vector<unsigned char> header(static_cast<size_t>(header_bytes));
  std::memcpy(header.data(), first.data(), first.size());
  if (header.size() > first.size())
    DLR_RETURN_IF_ERROR(pread_all(fd.get(), header.data() + first.size(), header.size() - first.size(),
                                  int64_t(first.size()), path));
  const uint32_t stored_crc = get_u32(header.data() + kCrcField);
  put_u32(header.data() + kCrcField, 0);
  const uint32_t crc = crc32c(header.data(), header.size());
  if (crc != stored_crc)
    return parse_error(path + ": header CRC32C " + hex32(crc) + ", the header says " + hex32(stored_crc) +
                       " (the file is corrupt: prepare it again)");
  const unsigned char* h = header.data();
  const uint64_t file_bytes = get_u64(h + 24);
  if (int64_t(file_bytes) != size)
    return parse_error(path + ": " + std::string(int64_t(file_bytes) > size ? "truncated prepared weight file: " : "") +
                       std::to_string(size) + " bytes, the header says " + std::to_string(file_bytes));
  // Blobs end on 4096 boundaries inside the file, so the file's size is a multiple of
  // 4096; checked here so every `at` below stays <= size (no unsigned wrap, no overflow).
  if (size % kPreparedAlign != 0)
    return parse_error(path + ": " + std::to_string(size) + " bytes, not a multiple of " +
                       std::to_string(kPreparedAlign) + " (the file is damaged: prepare it again)");

  PreparedFile f;
  f.m_path = path;
  f.m_file_bytes = size;
  f.m_header_bytes = int64_t(header_bytes);
  PreparedIdentity& id = f.m_identity;
  id.cfg_hash = get_u64(h + 32);
  id.weights_hash = get_u64(h + 40);
  id.weights_size = int64_t(get_u64(h + 48));
  id.weights_mtime_ns = int64_t(get_u64(h + 56));
  if (h[64] > 1 || h[65] > 1 || h[66] != 0 || h[67] != 0)
    return parse_error(path + ": offset 64: dtype " + std::to_string(h[64]) + " / layout " + std::to_string(h[65]) +
                       " codes outside 0..1 (or non-zero reserved bytes)");
  id.dtype = h[64] == 1 ? DType::kF16 : DType::kF32;
  id.layout = h[65] == 1 ? Layout::kNHWC : Layout::kNCHW;

  int64_t at = int64_t(header_bytes);
  f.m_blobs.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const unsigned char* e = h + kFixedHeader + kEntryBytes * int64_t(i);
    PreparedBlob& b = f.m_blobs[i];
    const uint64_t off = get_u64(e), bytes = get_u64(e + 8);
    const std::string where = path + ": blob " + std::to_string(i) + " (table offset " +
                              std::to_string(kFixedHeader + kEntryBytes * int64_t(i)) + ")";
    if (off != uint64_t(at))
      return parse_error(where + ": offset " + std::to_string(off) + ", " + std::to_string(at) + " expected");
    if (bytes == 0 || off > uint64_t(size) || bytes > uint64_t(size) - off)
      return parse_error(where + ": " + std::to_string(bytes) + " bytes at offset " + std::to_string(off) +
                         " do not fit in the file (" + std::to_string(size) + " bytes)");
    b.offset = int64_t(off);
    b.bytes = int64_t(bytes);
    b.crc32c = get_u32(e + 16);
    b.layer = int(int32_t(get_u32(e + 20)));
    id.blob_bytes.push_back(b.bytes);
    at = align_up(b.offset + b.bytes, kPreparedAlign);
  }
  if (at != size)
    return parse_error(path + ": the blobs end at " + std::to_string(at) + " (aligned), the file has " +
                       std::to_string(size) + " bytes");

  // Against the plan.
  const std::string made = path + ": prepared weight file made for ";
  if (id.layout != plan.options.layout)
    return invalid_argument(made + "layout " + layout_code_name(h[65]) + ", the run uses " +
                            layout_name(plan.options.layout) + " (prepare it again with this run's --device/--precision)");
  if (count != plan.weights.size())
    return invalid_argument(made + "another model: " + std::to_string(count) + " weight blobs, the plan has " +
                            std::to_string(plan.weights.size()));
  for (uint32_t i = 0; i < count; ++i) {
    const WeightBlob& w = plan.weights[i];
    const PreparedBlob& b = f.m_blobs[i];
    if (w.dtype != id.dtype)
      return invalid_argument(made + "dtype " + dtype_code_name(h[64]) + ", the run uses " + dtype_name(w.dtype) +
                              " (prepare it again with this run's --precision)");
    if (b.layer != w.layer || b.bytes != w.bytes)
      return invalid_argument(made + "another model: blob " + std::to_string(i) + " is layer " +
                              std::to_string(b.layer) + ", " + std::to_string(b.bytes) + " bytes; the plan has layer " +
                              std::to_string(w.layer) + ", " + std::to_string(w.bytes) + " bytes");
  }
  if (expect) {
    if (expect->dtype != id.dtype || expect->layout != id.layout || expect->blob_bytes != id.blob_bytes)
      return invalid_argument(made + "another plan (dtype, layout or blob sizes differ from the identity expected)");
    if (expect->cfg_hash != id.cfg_hash)
      return invalid_argument(made + "another cfg (cfg hash " + hex(id.cfg_hash, 16) + ", " +
                              (expect->cfg_path.empty() ? std::string("expected ") : expect->cfg_path + " has ") +
                              hex(expect->cfg_hash, 16) + ")");
    if (expect->weights_size != id.weights_size)
      return invalid_argument(made + "another .weights file (" + std::to_string(id.weights_size) + " bytes, " +
                              (expect->weights_path.empty() ? std::string("expected ") : expect->weights_path + " has ") +
                              std::to_string(expect->weights_size) + ")");
    if (expect->weights_hash != 0 && expect->weights_hash != id.weights_hash)
      return invalid_argument(made + "another .weights file (content hash " + hex(id.weights_hash, 16) + ", " +
                              (expect->weights_path.empty() ? std::string("expected ") : expect->weights_path + " has ") +
                              hex(expect->weights_hash, 16) + ")");
    if (expect->weights_hash == 0 && expect->weights_mtime_ns != id.weights_mtime_ns)
      return invalid_argument(made + "another version of " +
                              (expect->weights_path.empty() ? std::string("the .weights file") : expect->weights_path) +
                              " (modified at " + std::to_string(id.weights_mtime_ns) + " ns, now " +
                              std::to_string(expect->weights_mtime_ns) + " ns)");
  }
  return f;
}

Status PreparedFile::verify_all() const {
  Fd fd(::open(m_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_error(m_path + ": cannot open the prepared weight file: " + errno_text());
  std::vector<char> buf(kIoChunk);
  for (size_t i = 0; i < m_blobs.size(); ++i) {
    const PreparedBlob& b = m_blobs[i];
    uint32_t crc = 0;
    for (int64_t done = 0; done < b.bytes;) {
      const size_t n = size_t(std::min<int64_t>(int64_t(buf.size()), b.bytes - done));
      DLR_RETURN_IF_ERROR(pread_all(fd.get(), buf.data(), n, b.offset + done, m_path));
      crc = crc32c(buf.data(), n, crc);
      done += int64_t(n);
    }
    if (crc != b.crc32c)
      return parse_error(m_path + ": blob " + std::to_string(i) + " (layer " + std::to_string(b.layer) + ") at offset " +
                         std::to_string(b.offset) + ", " + std::to_string(b.bytes) + " bytes: CRC32C " + hex32(crc) +
                         ", the header says " + hex32(b.crc32c) + " (the file is corrupt: prepare it again)");
  }
  return Status();
}

// ---------------------------------------------------------------- source

namespace {

class PreparedSource final : public WeightSource {
 public:
  PreparedSource(const PreparedFile& f, Fd fd) : m_path(f.path()), m_blobs(f.blobs()), m_id(f.identity()), m_fd(std::move(fd)) {
    m_file.path = m_path;
    for (size_t i = 0; i < m_blobs.size(); ++i) {
      m_by_layer.emplace_back(m_blobs[i].layer, int(i));
      m_file.offsets.push_back(m_blobs[i].offset);
      m_file.crc32c.push_back(m_blobs[i].crc32c);
    }
  }
  const BlobFile* blob_file() const override { return &m_file; }

  Status prepare(const WeightBlob& blob, Layout layout, void* dst) override {
    int index = -1;
    for (const auto& [layer, i] : m_by_layer)  // plan order: the next blob is usually the one asked for
      if (layer == blob.layer) {
        index = i;
        break;
      }
    if (index < 0)
      return invalid_argument(m_path + ": no prepared blob for layer " + std::to_string(blob.layer));
    const PreparedBlob& b = m_blobs[size_t(index)];
    if (b.bytes != blob.bytes || blob.dtype != m_id.dtype || layout != m_id.layout)
      return invalid_argument(m_path + ": blob " + std::to_string(index) + " (layer " + std::to_string(b.layer) +
                              ") is " + std::to_string(b.bytes) + " bytes " + dtype_name(m_id.dtype) + " " +
                              layout_name(m_id.layout) + ", asked for " + std::to_string(blob.bytes) + " bytes " +
                              dtype_name(blob.dtype) + " " + layout_name(layout));
    DLR_RETURN_IF_ERROR(pread_all(m_fd.get(), dst, size_t(b.bytes), b.offset, m_path));
    const uint32_t crc = crc32c(dst, size_t(b.bytes));
    if (crc != b.crc32c)
      return parse_error(m_path + ": blob " + std::to_string(index) + " (layer " + std::to_string(b.layer) +
                         ") at offset " + std::to_string(b.offset) + ", " + std::to_string(b.bytes) + " bytes: CRC32C " +
                         hex32(crc) + ", the header says " + hex32(b.crc32c) + " (the file is corrupt: prepare it again)");
    return Status();
  }

  const std::string& name() const override { return m_path; }

 private:
  std::string m_path;
  std::vector<PreparedBlob> m_blobs;
  PreparedIdentity m_id;
  Fd m_fd;
  std::vector<std::pair<int, int>> m_by_layer;
  BlobFile m_file;
};

}  // namespace

Expected<std::unique_ptr<WeightSource>> prepared_file_source(const PreparedFile& file) {
  Fd fd(::open(file.path().c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_error(file.path() + ": cannot open the prepared weight file: " + errno_text());
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || int64_t(st.st_size) != file.file_bytes())
    return io_error(file.path() + ": the prepared weight file changed since it was opened (size)");
  return std::unique_ptr<WeightSource>(std::make_unique<PreparedSource>(file, std::move(fd)));
}

// ---------------------------------------------------------------- cache

Expected<std::string> prepared_cache_path(const PreparedIdentity& id) {
  Expected<std::string> base = user_cache_dir();
  if (!base.ok())
    return Status(base.status().code(), "prepared weight cache: " + base.status().message() +
                                            ", or write one with dlrun --prepare OUT to writable storage");
  const std::string dir = *base + "/prepared";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return io_error("prepared weight cache: cannot create " + dir + ": " + errno_text() +
                    " (set DLR_CACHE_DIR to a writable directory, or write the file with dlrun --prepare OUT to "
                    "writable storage)");
  // The key: everything of the cheap identity, nothing that needs the .weights bytes.
  std::vector<unsigned char> key(8 * 5 + 2);
  put_u64(key.data(), id.cfg_hash);
  put_u64(key.data() + 8, uint64_t(id.weights_size));
  put_u64(key.data() + 16, uint64_t(id.weights_mtime_ns));
  put_u64(key.data() + 24, uint64_t(id.blob_bytes.size()));
  put_u64(key.data() + 32, 0);
  key[40] = id.dtype == DType::kF16 ? 1 : 0;
  key[41] = id.layout == Layout::kNHWC ? 1 : 0;
  for (int64_t b : id.blob_bytes) {
    unsigned char v[8];
    put_u64(v, uint64_t(b));
    key.insert(key.end(), v, v + 8);
  }
  key.insert(key.end(), id.weights_path.begin(), id.weights_path.end());
  return dir + "/" + stem_of(id.cfg_path) + "-" + hex(XXH3_64bits(key.data(), key.size()), 16) + ".dlrw";
}

Expected<std::string> ensure_prepared(const PreparedIdentity& id, const ExecutionPlan& plan, WeightSource& source,
                                      bool* built, PreparedCheck check, std::string* why_rebuilt) {
  if (built) *built = false;
  if (why_rebuilt) why_rebuilt->clear();
  DLR_ASSIGN_OR_RETURN(std::string path, prepared_cache_path(id));
  std::string why;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    Expected<PreparedFile> f = PreparedFile::open(path, plan, &id);
    Status valid = f.ok() ? Status() : f.status();
    if (valid.ok() && check == PreparedCheck::kFull) valid = f->verify_all();
    if (valid.ok()) return path;
    why = valid.message();
    DLR_LOG_WARN("rebuilding the prepared weight file: {}", why);
    if (why_rebuilt) *why_rebuilt = why;
  } else if (errno != ENOENT) {
    return io_error(path + ": cannot stat the prepared weight file: " + errno_text());
  }
  bool dest_failed = false;
  Status w = write_prepared(path, plan, source, id, &dest_failed);
  if (!w.ok()) {
    if (!dest_failed) return w;
    return io_error("prepared weight cache " + dirname_of(path) + ": " + w.message() +
                    (why.empty() ? std::string() : " (while replacing a stale entry: " + why + ")") +
                    " (set DLR_CACHE_DIR to a writable directory, or write the file with dlrun --prepare OUT to "
                    "writable storage)");
  }
  if (built) *built = true;
  DLR_ASSIGN_OR_RETURN(PreparedFile check_again, PreparedFile::open(path, plan, &id));
  (void)check_again;
  return path;
}

// ---------------------------------------------------------------- dlrun --prepare

Expected<PrepareReport> prepare_weights(const std::string& cfg_path, const std::string& weights_path,
                                        const SessionOptions& options, const std::string& out) {
  const auto t0 = std::chrono::steady_clock::now();
  DLR_RETURN_IF_ERROR(validate_options(options));
  CfgOptions cfg_opt;
  cfg_opt.width = options.width;
  cfg_opt.height = options.height;
  DLR_ASSIGN_OR_RETURN(NetworkDesc net, parse_network_cfg(cfg_path, cfg_opt));
  DLR_ASSIGN_OR_RETURN(WeightsFile wf, WeightsFile::open(weights_path, net));
  DLR_ASSIGN_OR_RETURN(ExecutionPlan plan, plan_for_prepare(net, options));
  DLR_ASSIGN_OR_RETURN(PreparedIdentity id, prepared_identity(cfg_path, weights_path, plan));
  std::unique_ptr<WeightSource> source = weights_file_source(net, wf);
  DLR_RETURN_IF_ERROR(write_prepared_file(out, plan, *source, id));
  DLR_ASSIGN_OR_RETURN(PreparedFile f, PreparedFile::open(out, plan, nullptr));
  PrepareReport r;
  r.path = out;
  r.file_bytes = f.file_bytes();
  r.blobs = int(f.blobs().size());
  r.dtype = f.identity().dtype;
  r.layout = f.identity().layout;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace dlr
