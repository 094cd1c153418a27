// Darknet .weights: index computation, header parsing, read-only mapping.
//
// Layout (Darknet src/parser.c load_weights): a little-endian header (int32 major, minor,
// revision; seen as uint64 when major*10+minor >= 2, else uint32), then raw
// float32 blobs in layer order. Per conv layer: bias[n], then when
// batch_normalize scale[n], mean[n], variance[n], then weights
// [n][c/groups][k][k]. Other supported layer kinds store nothing.
//
// The file is mapped, never copied: data() hands out pointers into the
// mapping, read() copies one blob with pread.

#include "loaders/weights_file.h"

#include "loaders/cfg_lexer.h"
#include "runtime/core/fault_injection.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace dlr {

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "dlrun reads Darknet .weights (little-endian float32) in place and needs a little-endian host"
#endif

const char* blob_role_name(BlobRole r) {
  switch (r) {
    case BlobRole::kBias: return "bias";
    case BlobRole::kScale: return "scale";
    case BlobRole::kMean: return "mean";
    case BlobRole::kVariance: return "variance";
    case BlobRole::kWeights: return "weights";
  }
  return "?";
}

uint64_t LayerBlobs::bytes() const {
  uint64_t total = 0;
  for (const BlobRef& b : blobs) total += b.count * sizeof(float);
  return total;
}

const BlobRef* LayerBlobs::find(BlobRole role) const {
  for (const BlobRef& b : blobs)
    if (b.role == role) return &b;
  return nullptr;
}

Status check_weight_counts(const NetworkDesc& net, const std::string& name) {
  for (const LayerDesc& l : net.layers) {
    if (l.kind != LayerKind::kConv) continue;
    const int64_t w = l.weight_count();
    if (w > limits::kLayerWeights || l.bias_count() > limits::kLayerWeights || l.bias_count() < 1)
      return invalid_argument(name + ": layer " + std::to_string(l.index) + " (conv, cfg line " +
                              std::to_string(l.cfg_line) + ") has " + std::to_string(w) + " weights and " +
                              std::to_string(l.bias_count()) + " filters; expected 1.." +
                              std::to_string(limits::kLayerWeights) + " of each");
  }
  const int64_t total = net.total_file_floats();
  if (total > limits::kNetworkWeights)
    return invalid_argument(name + ": the network has " + std::to_string(total) + " weights in total; expected at most " +
                            std::to_string(limits::kNetworkWeights));
  return Status();
}

WeightsIndex build_weights_index(const NetworkDesc& net, const WeightsHeader& header) {
  WeightsIndex index;
  index.header = header;
  uint64_t offset = header.header_bytes();
  index.layers.reserve(net.layers.size());
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const LayerDesc& layer = net.layers[i];
    LayerBlobs lb;
    lb.layer = static_cast<int>(i);
    if (layer.kind == LayerKind::kConv) {
      const uint64_t n = static_cast<uint64_t>(layer.bias_count());
      auto add = [&](BlobRole role, uint64_t count) {
        lb.blobs.push_back(BlobRef{offset, count, role});
        offset += count * sizeof(float);
      };
      add(BlobRole::kBias, n);
      if (layer.conv().batch_normalize) {
        add(BlobRole::kScale, n);
        add(BlobRole::kMean, n);
        add(BlobRole::kVariance, n);
      }
      add(BlobRole::kWeights, static_cast<uint64_t>(layer.weight_count()));
    }
    index.layers.push_back(std::move(lb));
  }
  index.payload_end = offset;
  return index;
}

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Little-endian loads from an unaligned byte buffer.
int32_t load_i32(const unsigned char* p) {
  uint32_t v = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  int32_t out;
  std::memcpy(&out, &v, sizeof(out));
  return out;
}
uint64_t load_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Reads exactly `n` bytes at `offset`; false with errno (or EIO for a short file) on failure.
bool pread_full(int fd, void* dst, uint64_t n, uint64_t offset) {
  auto* out = static_cast<unsigned char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (got == 0) {
      errno = EIO;
      return false;
    }
    out += got;
    n -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

// Closes the descriptor on every early return of open().
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

// One-line description of the size mismatch between a file and its index.
std::string size_mismatch(const std::string& path, const NetworkDesc& net, const WeightsIndex& index,
                          uint64_t size) {
  const uint64_t expected = index.payload_end;
  if (size > expected) {
    return path + ": " + std::to_string(size - expected) + " bytes after the last layer; expected " +
           std::to_string(expected) + " bytes for this cfg, file has " + std::to_string(size) +
           ": weights for another cfg?";
  }
  for (const LayerBlobs& lb : index.layers) {
    if (lb.blobs.empty()) continue;
    const uint64_t begin = lb.blobs.front().offset;
    const uint64_t end = begin + lb.bytes();
    if (end <= size) continue;
    const LayerDesc& layer = net.layers[static_cast<size_t>(lb.layer)];
    std::string where = size > begin ? "ends inside" : "ends before";
    std::string msg = path + ": file " + where + " layer " + std::to_string(lb.layer) + " (" +
                      layer_kind_name(layer.kind) + ", cfg line " + std::to_string(layer.cfg_line) +
                      "): layer needs bytes [" + std::to_string(begin) + ", " + std::to_string(end) +
                      ") but the file has " + std::to_string(size) + " bytes (expected " +
                      std::to_string(expected) + " bytes in total)";
    if (size == begin) msg += "; partial weights such as yolov4.conv.137 are for training and not supported";
    return msg;
  }
  // Unreachable when size < expected (the last blob ends at payload_end); kept for safety.
  return path + ": file has " + std::to_string(size) + " bytes, expected " + std::to_string(expected);
}

}  // namespace

Expected<WeightsFile> WeightsFile::open(const std::string& path, const NetworkDesc& net) {
  FdGuard fd;
  do {
    fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block: refused below
  } while (fd.fd < 0 && errno == EINTR);
  if (fd.fd < 0) return io_error(path + ": cannot open weights file: " + errno_text(errno));
  if (fault::hit("weights_open"))
    return io_error(path + ": cannot open weights file: " + errno_text(EIO) + fault::tag("weights_open"));

  struct stat st;
  if (::fstat(fd.fd, &st) != 0) return io_error(path + ": fstat failed: " + errno_text(errno));
  if (!S_ISREG(st.st_mode))
    return io_error(path + ": not a regular file (" + file_type_name(st.st_mode) + "); expected a .weights file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);

  // Header: 12 bytes of version, then a 4- or 8-byte `seen` depending on the version.
  unsigned char head[20];
  if (size < 12) {
    return parse_error(path + ": file has " + std::to_string(size) +
                       " bytes, shorter than the 12-byte .weights version header (major, minor, revision)");
  }
  if (!pread_full(fd.fd, head, 12, 0)) return io_error(path + ": cannot read header: " + errno_text(errno));
  WeightsHeader header;
  header.major = load_i32(head);
  header.minor = load_i32(head + 4);
  header.revision = load_i32(head + 8);
  // Darknet accepts values above 1000 (they flag transposed connected weights);
  // anything far beyond is not a .weights file and would overflow major*10+minor.
  if (header.major < 0 || header.minor < 0 || header.major > 100000 || header.minor > 100000) {
    return parse_error(path + ": implausible .weights version " + std::to_string(header.major) + "." +
                       std::to_string(header.minor) + "." + std::to_string(header.revision) +
                       " (expected e.g. 0.2.5): not a Darknet .weights file?");
  }
  const uint32_t header_bytes = header.header_bytes();
  if (size < header_bytes) {
    return parse_error(path + ": file has " + std::to_string(size) + " bytes, shorter than the " +
                       std::to_string(header_bytes) + "-byte header of version " + std::to_string(header.major) +
                       "." + std::to_string(header.minor) + "." + std::to_string(header.revision));
  }
  if (!pread_full(fd.fd, head + 12, header_bytes - 12, 12))
    return io_error(path + ": cannot read header: " + errno_text(errno));
  header.seen = header_bytes == 20 ? load_u64(head + 12)
                                   : static_cast<uint64_t>(static_cast<uint32_t>(load_i32(head + 12)));

  DLR_RETURN_IF_ERROR(check_weight_counts(net, path));
  WeightsIndex index = build_weights_index(net, header);
  if (size != index.payload_end) return parse_error(size_mismatch(path, net, index, size));

  WeightsFile file;
  file.m_path = path;
  file.m_index = std::move(index);
  file.m_size = size;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (map != MAP_FAILED && fault::hit("weights_mmap")) {
    ::munmap(map, size);
    return io_error(path + ": mmap of " + std::to_string(size) + " bytes failed: " + errno_text(ENOMEM) +
                    fault::tag("weights_mmap"));
  }
  if (map == MAP_FAILED) return io_error(path + ": mmap of " + std::to_string(size) + " bytes failed: " + errno_text(errno));
  ::madvise(map, size, MADV_SEQUENTIAL);  // advisory; failure is harmless
  file.m_map = static_cast<const unsigned char*>(map);
  file.m_fd = fd.release();
  return Expected<WeightsFile>(std::move(file));  // explicit: WeightsFile is move-only
}

WeightsFile::WeightsFile(WeightsFile&& o) noexcept
    : m_path(std::move(o.m_path)),
      m_index(std::move(o.m_index)),
      m_fd(std::exchange(o.m_fd, -1)),
      m_size(std::exchange(o.m_size, 0)),
      m_map(std::exchange(o.m_map, nullptr)) {}

WeightsFile& WeightsFile::operator=(WeightsFile&& o) noexcept {
  if (this != &o) {
    if (m_map) ::munmap(const_cast<unsigned char*>(m_map), m_size);
    if (m_fd >= 0) ::close(m_fd);
    m_path = std::move(o.m_path);
    m_index = std::move(o.m_index);
    m_fd = std::exchange(o.m_fd, -1);
    m_size = std::exchange(o.m_size, 0);
    m_map = std::exchange(o.m_map, nullptr);
  }
  return *this;
}

WeightsFile::~WeightsFile() {
  if (m_map) ::munmap(const_cast<unsigned char*>(m_map), m_size);
  if (m_fd >= 0) ::close(m_fd);
}

const float* WeightsFile::data(const BlobRef& blob) const {
  DLR_ASSERT(m_map != nullptr);
  DLR_ASSERT(blob.offset % sizeof(float) == 0 && blob.offset + blob.count * sizeof(float) <= m_size);
  return reinterpret_cast<const float*>(m_map + blob.offset);
}

Status WeightsFile::read(const BlobRef& blob, float* dst) const {
  const uint64_t bytes = blob.count * sizeof(float);
  if (m_fd < 0) return internal_error(m_path + ": read() on a closed weights file");
  if (blob.offset + bytes > m_size) {
    return invalid_argument(m_path + ": blob [" + std::to_string(blob.offset) + ", " +
                            std::to_string(blob.offset + bytes) + ") lies outside the " +
                            std::to_string(m_size) + "-byte file");
  }
  if (!pread_full(m_fd, dst, bytes, blob.offset)) {
    return io_error(m_path + ": pread of " + std::string(blob_role_name(blob.role)) + " blob at offset " +
                    std::to_string(blob.offset) + " failed: " + errno_text(errno));
  }
  return Status();
}

Status write_weights_header(std::FILE* f, const WeightsHeader& header) {
  unsigned char buf[20];
  auto put32 = [&](int at, uint32_t v) {
    for (int i = 0; i < 4; ++i) buf[at + i] = static_cast<unsigned char>(v >> (8 * i));
  };
  put32(0, static_cast<uint32_t>(header.major));
  put32(4, static_cast<uint32_t>(header.minor));
  put32(8, static_cast<uint32_t>(header.revision));
  const uint32_t n = header.header_bytes();
  if (n == 20) {
    for (int i = 0; i < 8; ++i) buf[12 + i] = static_cast<unsigned char>(header.seen >> (8 * i));
  } else {
    put32(12, static_cast<uint32_t>(header.seen));
  }
  if (std::fwrite(buf, 1, n, f) != n) return io_error(std::string("writing .weights header failed: ") + errno_text(errno));
  return Status();
}

}  // namespace dlr
