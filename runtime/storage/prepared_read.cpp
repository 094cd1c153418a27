// Reading a prepared weight file (prepared_file.h): the magic, the checked header
// and blob table (PreparedFile::open), every blob's CRC32C (verify_all) and the
// WeightSource that reads blobs from it.
#include "runtime/storage/prepared_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "runtime/storage/crc32c.h"
#include "runtime/storage/prepared_file_io.h"

namespace dlr {

using namespace prepared_detail;

namespace {

const char* dtype_code_name(uint8_t v) { return v == 0 ? "f32" : v == 1 ? "f16" : "unknown"; }
const char* layout_code_name(uint8_t v) { return v == 0 ? "NCHW" : v == 1 ? "NHWC" : "unknown"; }

// "[first, first + n)", or "all" for a whole layer (n == 0).
std::string filter_range(int first, int n) {
  return n == 0 ? std::string("all") : "[" + std::to_string(first) + ", " + std::to_string(first + n) + ")";
}

// What a blob of filters [f, f + nf) and input channels [c, c + nc) holds, in words.
std::string slice_text(int f, int nf, int c, int nc) {
  return "filters " + filter_range(f, nf) + ", channels " + filter_range(c, nc);
}

// A (first, count) pair of an entry: both fit an int and their sum does too.
bool range_ok(uint32_t first, uint32_t n) { return first <= uint32_t(INT32_MAX) && n <= uint32_t(INT32_MAX) - first; }

// The header region of the open file `fd` of `size` bytes, checked in this order:
// size, magic, version, blob count, header size, CRC32C, the file's size (as the
// header says, and a multiple of 4096). The CRC field reads as zero in the result.
Expected<std::vector<unsigned char>> read_header(int fd, const std::string& path, int64_t size) {
  if (size < kPreparedAlign)
    return parse_error(path + ": truncated prepared weight file: " + std::to_string(size) + " bytes, at least " +
                       std::to_string(kPreparedAlign) + " expected");
  std::vector<unsigned char> first(static_cast<size_t>(kPreparedAlign));
  DLR_RETURN_IF_ERROR(pread_all(fd, first.data(), first.size(), 0, path));
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
    DLR_RETURN_IF_ERROR(pread_all(fd, header.data() + first.size(), header.size() - first.size(),
                                  int64_t(first.size()), path));
  const uint32_t stored_crc = get_u32(header.data() + kCrcField);
  put_u32(header.data() + kCrcField, 0);
  const uint32_t crc = crc32c(header.data(), header.size());
  if (crc != stored_crc)
    return parse_error(path + ": header CRC32C " + hex32(crc) + ", the header says " + hex32(stored_crc) +
                       " (the file is corrupt: prepare it again)");
  const uint64_t file_bytes = get_u64(header.data() + 24);
  if (int64_t(file_bytes) != size)
    return parse_error(path + ": " + std::string(int64_t(file_bytes) > size ? "truncated prepared weight file: " : "") +
                       std::to_string(size) + " bytes, the header says " + std::to_string(file_bytes));
  // Blobs end on 4096 boundaries inside the file, so the file's size is a multiple of
  // 4096; checked here so every `at` in read_blob_table stays <= size (no unsigned
  // wrap, no overflow).
  if (size % kPreparedAlign != 0)
    return parse_error(path + ": " + std::to_string(size) + " bytes, not a multiple of " +
                       std::to_string(kPreparedAlign) + " (the file is damaged: prepare it again)");
  return header;
}

// The stored identity of header `h` (hashes, .weights size and mtime, dtype, layout).
Status read_identity(const std::string& path, const unsigned char* h, PreparedIdentity* id) {
  id->cfg_hash = get_u64(h + 32);
  id->weights_hash = get_u64(h + 40);
  id->weights_size = int64_t(get_u64(h + 48));
  id->weights_mtime_ns = int64_t(get_u64(h + 56));
  if (h[64] > 1 || h[65] > 1 || h[66] > 1 || h[67] != 0)
    return parse_error(path + ": offset 64: dtype " + std::to_string(h[64]) + " / layout " + std::to_string(h[65]) +
                       " / weight format " + std::to_string(h[66]) + " codes outside 0..1 (or a non-zero reserved byte)");
  id->format = h[66] == 1 ? WeightFormat::kInt8 : WeightFormat::kFp;
  id->dtype = h[64] == 1 ? DType::kF16 : DType::kF32;
  id->layout = h[65] == 1 ? Layout::kNHWC : Layout::kNCHW;
  return Status();
}

// The blob table of header `h` (`count` entries) in a file of `size` bytes: each blob
// exactly where the format puts it, inside the file, the last one ending the file.
// Appends every blob's size to id->blob_bytes.
Status read_blob_table(const std::string& path, const unsigned char* h, uint32_t count, int64_t size,
                       std::vector<PreparedBlob>* blobs, PreparedIdentity* id) {
  int64_t at = header_bytes_for(count);
  blobs->resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const unsigned char* e = h + kFixedHeader + kEntryBytes * int64_t(i);
    PreparedBlob& b = (*blobs)[i];
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
    const uint32_t first = get_u32(e + 24), filters = get_u32(e + 28);
    if (!range_ok(first, filters))
      return parse_error(where + ": filter range " + std::to_string(first) + " + " + std::to_string(filters) +
                         " is out of range");
    const uint32_t channel = get_u32(e + 32), channels = get_u32(e + 36);
    if (!range_ok(channel, channels))
      return parse_error(where + ": channel range " + std::to_string(channel) + " + " + std::to_string(channels) +
                         " is out of range");
    b.filter_begin = int(first);
    b.filters = int(filters);
    b.channel_begin = int(channel);
    b.channels = int(channels);
    id->blob_bytes.push_back(b.bytes);
    at = align_up(b.offset + b.bytes, kPreparedAlign);
  }
  if (at != size)
    return parse_error(path + ": the blobs end at " + std::to_string(at) + " (aligned), the file has " +
                       std::to_string(size) + " bytes");
  return Status();
}

// The file (header `h`, identity `id`, `blobs`) against the plan: layout, blob count,
// and each blob's dtype, layer and size.
Status check_plan(const std::string& path, const unsigned char* h, const PreparedIdentity& id,
                  const std::vector<PreparedBlob>& blobs, const ExecutionPlan& plan) {
  const std::string made = path + ": prepared weight file made for ";
  if (id.layout != plan.options.layout)
    return invalid_argument(made + "layout " + layout_code_name(h[65]) + ", the run uses " +
                            layout_name(plan.options.layout) +
                            " (set the run's layout to the file's, or prepare it again with this run's device, "
                            "precision and layout)");
  if (plan.options.weight_format != id.format)
    return invalid_argument(made + "weight format " + weight_format_name(id.format) + ", the run uses " +
                            weight_format_name(plan.options.weight_format) +
                            " (prepare it again with this run's weight_format)");
  if (blobs.size() != plan.weights.size()) {
    bool sliced = false;  // either side runs layers in slices: the slot may be what differs
    for (const PreparedBlob& b : blobs) sliced = sliced || b.filters > 0 || b.channels > 0;
    for (const WeightBlob& w : plan.weights) sliced = sliced || w.filters > 0 || w.channels > 0;
    return invalid_argument(made + (sliced ? "other slices or another model: " : "another model: ") +
                            std::to_string(blobs.size()) + " weight blobs, the plan has " +
                            std::to_string(plan.weights.size()) +
                            (sliced ? " (prepare it again with this run's slot_bytes)" : ""));
  }
  for (size_t i = 0; i < blobs.size(); ++i) {
    const WeightBlob& w = plan.weights[i];
    const PreparedBlob& b = blobs[i];
    if (w.dtype != id.dtype)
      return invalid_argument(made + "dtype " + dtype_code_name(h[64]) + ", the run uses " + dtype_name(w.dtype) +
                              " (prepare it again with this run's precision)");
    if (b.layer != w.layer || b.bytes != w.bytes)
      return invalid_argument(made + "another model: blob " + std::to_string(i) + " is layer " +
                              std::to_string(b.layer) + ", " + std::to_string(b.bytes) + " bytes; the plan has layer " +
                              std::to_string(w.layer) + ", " + std::to_string(w.bytes) + " bytes");
    if (b.filter_begin != w.filter_begin || b.filters != w.filters || b.channel_begin != w.channel_begin ||
        b.channels != w.channels)
      return invalid_argument(made + "other slices: blob " + std::to_string(i) + " (layer " + std::to_string(b.layer) +
                              ") holds " + slice_text(b.filter_begin, b.filters, b.channel_begin, b.channels) +
                              ", the plan " + slice_text(w.filter_begin, w.filters, w.channel_begin, w.channels) +
                              " (prepare it again with this run's slot_bytes and slice_by)");
  }
  return Status();
}

// The stored identity `id` against the one the caller expects (PreparedFile::open).
Status check_expected(const std::string& path, const PreparedIdentity& id, const PreparedIdentity& expect) {
  const std::string made = path + ": prepared weight file made for ";
  if (expect.dtype != id.dtype || expect.layout != id.layout || expect.format != id.format ||
      expect.blob_bytes != id.blob_bytes)
    return invalid_argument(made +
                            "another plan (dtype, layout, weight format or blob sizes differ from the identity expected)");
  if (expect.cfg_hash != id.cfg_hash)
    return invalid_argument(made + "another cfg (cfg hash " + hex(id.cfg_hash, 16) + ", " +
                            (expect.cfg_path.empty() ? std::string("expected ") : expect.cfg_path + " has ") +
                            hex(expect.cfg_hash, 16) + ")");
  if (expect.weights_size != id.weights_size)
    return invalid_argument(made + "another .weights file (" + std::to_string(id.weights_size) + " bytes, " +
                            (expect.weights_path.empty() ? std::string("expected ") : expect.weights_path + " has ") +
                            std::to_string(expect.weights_size) + ")");
  if (expect.weights_hash != 0 && expect.weights_hash != id.weights_hash)
    return invalid_argument(made + "another .weights file (content hash " + hex(id.weights_hash, 16) + ", " +
                            (expect.weights_path.empty() ? std::string("expected ") : expect.weights_path + " has ") +
                            hex(expect.weights_hash, 16) + ")");
  if (expect.weights_hash == 0 && expect.weights_mtime_ns != id.weights_mtime_ns)
    return invalid_argument(made + "another version of " +
                            (expect.weights_path.empty() ? std::string("the .weights file") : expect.weights_path) +
                            " (modified at " + std::to_string(id.weights_mtime_ns) + " ns, now " +
                            std::to_string(expect.weights_mtime_ns) + " ns)");
  return Status();
}

}  // namespace

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
  DLR_ASSIGN_OR_RETURN(const std::vector<unsigned char> header, read_header(fd.get(), path, size));
  const unsigned char* h = header.data();
  PreparedFile f;
  f.m_path = path;
  f.m_file_bytes = size;
  f.m_header_bytes = int64_t(header.size());
  DLR_RETURN_IF_ERROR(read_identity(path, h, &f.m_identity));
  DLR_RETURN_IF_ERROR(read_blob_table(path, h, get_u32(h + 68), size, &f.m_blobs, &f.m_identity));
  DLR_RETURN_IF_ERROR(check_plan(path, h, f.m_identity, f.m_blobs, plan));
  if (expect) DLR_RETURN_IF_ERROR(check_expected(path, f.m_identity, *expect));
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
      m_by_slice.push_back({m_blobs[i].layer, m_blobs[i].filter_begin, m_blobs[i].filters, m_blobs[i].channel_begin,
                            m_blobs[i].channels, int(i)});
      m_file.offsets.push_back(m_blobs[i].offset);
      m_file.crc32c.push_back(m_blobs[i].crc32c);
    }
  }
  const BlobFile* blob_file() const override { return &m_file; }

  Status prepare(const WeightBlob& blob, Layout layout, void* dst) override {
    int index = -1;
    for (const Slice& s : m_by_slice)
      if (s.layer == blob.layer && s.filter_begin == blob.filter_begin && s.filters == blob.filters &&
          s.channel_begin == blob.channel_begin && s.channels == blob.channels) {
        index = s.index;
        break;
      }
    if (index < 0)
      return invalid_argument(m_path + ": no prepared blob for layer " + std::to_string(blob.layer) +
                              (blob.filters > 0 || blob.channels > 0
                                   ? " " + slice_text(blob.filter_begin, blob.filters, blob.channel_begin, blob.channels)
                                   : ""));
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
  struct Slice {
    int layer, filter_begin, filters, channel_begin, channels, index;
  };
  std::vector<Slice> m_by_slice;  // per blob of the file: what it holds
  BlobFile m_file;
};

}  // namespace

Expected<std::unique_ptr<WeightSource>> prepared_file_source(const PreparedFile& file) {
  Fd fd(::open(file.path().c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return io_error(file.path() + ": cannot open the prepared weight file: " + errno_text());
  lock_whole_file(fd.get(), false, true);  // in use while the source lives: never evicted (prepared_cache.h)
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || int64_t(st.st_size) != file.file_bytes())
    return io_error(file.path() + ": the prepared weight file changed since it was opened (size)");
  return std::unique_ptr<WeightSource>(std::make_unique<PreparedSource>(file, std::move(fd)));
}

}  // namespace dlr
