// The prepared weight file: a plan's weight blobs exactly as an engine consumes
// them (BN folded, in the plan's dtype and layout, WeightSource::prepare's bytes),
// each at a 4096-aligned offset, so storage mode can read any blob, or any
// 4096-aligned range of one, with O_DIRECT straight into a staging buffer.
// docs/streaming.md, "Prepared weight file", says how it is used and cached.
//
// Format, version 4 (version 1 had no slices: 24-byte entries; version 2 only filter slices:
// 32-byte entries without the channel range; version 3's int8 files held every blob int8). Every integer little-endian, fixed width.
//
//   header region, [0, header_bytes), header_bytes = align_up(72 + 40 * blob_count, 4096):
//     0   char[8]  magic "DLRWPREP"
//     8   u32      format version (kPreparedFormatVersion)
//     12  u32      CRC32C of the whole header region, computed with these 4 bytes zero
//     16  u64      header_bytes
//     24  u64      file_bytes: the file's exact size
//     32  u64      cfg hash: XXH3-64 of the cfg file's bytes
//     40  u64      weights hash: XXH3-64 of the .weights file's bytes
//     48  i64      .weights size, bytes
//     56  i64      .weights modification time, ns since the epoch (when prepared)
//     64  u8       dtype of the weights (0 f32, 1 f16; biases are always f32)
//     65  u8       layout (0 NCHW: filters OIHW; 1 NHWC: filters OHWI)
//     66  u8       weight format (0 fp: weights of the dtype; 1 int8: the blobs of filters of
//                   at least kInt8MinFilterWeights weights int8 with one f32 scale per
//                   filter, WeightBlob::scale_offset, the others of the dtype,
//                   runtime/compile/blob_layout.h conv_weight_format)
//     67  u8       zero
//     68  u32      blob_count (1 .. kPreparedMaxBlobs)
//     72  blob_count x 40 bytes, in ExecutionPlan::weights order:
//           u64 offset, u64 bytes, u32 CRC32C of the blob's `bytes` bytes, i32 layer index,
//           u32 first filter, u32 filters (0: every filter; else a slice of its output
//           channels, WeightBlob::filter_begin/filters), u32 first input channel,
//           u32 input channels (0: every one; else a slice of its input channels,
//           WeightBlob::channel_begin/channels)
//     then zeros up to header_bytes
//   blobs: blob 0 at header_bytes, blob i+1 at align_up(end of blob i, 4096); zeros
//   between blobs and after the last one up to file_bytes = align_up(end of last, 4096).
//
// So [offset, offset + align_up(bytes, 4096)) of every blob lies inside the file.
// Everything read from a file is checked before it is trusted: magic, version (before
// anything else), header CRC, blob count bound, header size, the file's size (exact, and a multiple of 4096), each
// offset (exactly where the rule above puts it: aligned, in order, no overlap, inside
// the file), and each blob's size, dtype, layer, filter and channel range against the plan.
//
// Identity: the cfg's bytes (hash), the .weights file (content hash, size, mtime),
// dtype, layout, weight format and the plan's blob sizes. A cache lookup compares the cheap identity
// (cfg hash, .weights size and mtime, dtype, layout, blob sizes: no read of the
// .weights file); the content hash is computed when a file is written and compared
// whenever the caller computed it too (hash_weights_content), e.g. for a file that was
// copied to another machine with its .weights.
//
// CRC32C (runtime/storage/crc32c.h) of every blob: checked by verify_all() and by
// prepared_file_source() on every read; a streaming reader checks it per blob
// (chaining crc32c over the pieces it reads, in order).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/types.h"
#include "runtime/options.h"
#include "runtime/compile/plan.h"
#include "runtime/storage/prepared_cache.h"
#include "runtime/weight_source.h"

namespace dlr {

struct NetworkDesc;

constexpr uint32_t kPreparedFormatVersion = 4;
constexpr int64_t kPreparedAlign = 4096;      // of the header region, every blob offset, the file size
constexpr uint32_t kPreparedMaxBlobs = 65536;  // more than any network the cfg parser accepts has convs

struct PreparedBlob {
  int64_t offset = 0;   // bytes from the file start, multiple of kPreparedAlign
  int64_t bytes = 0;    // == the plan's WeightBlob::bytes
  uint32_t crc32c = 0;  // of the `bytes` bytes at offset
  int layer = 0;        // the plan's WeightBlob::layer
  int filter_begin = 0;  // and filter range (filters 0: every filter)
  int filters = 0;
  int channel_begin = 0;  // and input-channel range (channels 0: every one)
  int channels = 0;
};

struct PreparedIdentity {
  std::string cfg_path;      // as given (messages); not stored in the file
  std::string weights_path;  // realpath of the .weights file (cache key, content hash); not stored
  uint64_t cfg_hash = 0;     // XXH3-64 of the cfg bytes
  uint64_t weights_hash = 0; // XXH3-64 of the .weights bytes; 0: not computed (cheap identity)
  int64_t weights_size = 0;
  int64_t weights_mtime_ns = 0;
  DType dtype = DType::kF32;
  Layout layout = Layout::kNCHW;
  WeightFormat format = WeightFormat::kFp;
  std::vector<int64_t> blob_bytes;  // the plan's, in plan order
};

// The cheap identity: hashes the cfg file, stats the .weights file (realpath, size,
// mtime); weights_hash stays 0. dtype/layout/blob sizes come from the plan (which
// must have at least one weight blob).
Expected<PreparedIdentity> prepared_identity(const std::string& cfg_path, const std::string& weights_path,
                                             const ExecutionPlan& plan);
// Reads the whole .weights file (id->weights_path) and sets id->weights_hash; fails
// when its size differs from id->weights_size (the file changed).
Status hash_weights_content(PreparedIdentity* id);

// Writes the prepared file for `plan` to `path` atomically: a temporary file in the
// same directory (mkstemp), blob by blob through one reusable 4096-aligned buffer of
// the largest blob, fsync, rename over `path`, fsync of the directory. Computes the
// weights content hash first when id.weights_hash is 0. `source` prepares the blobs
// (weights_file_source: BN fold from the .weights). On failure nothing is left at
// `path` (an existing file there is untouched) and the temporary file is removed.
// The temporary is write-locked while it exists (prepared_cache.h); temporaries of
// dead writers for the same `path` are removed first.
// Each blob is prepared on up to `threads` threads (prepare_blobs, where the source
// splits blobs); the bytes do not depend on it.
Status write_prepared_file(const std::string& path, const ExecutionPlan& plan, WeightSource& source,
                           const PreparedIdentity& id, int threads = 1);

// An opened, validated prepared file: its path and blob table (no file descriptor is
// kept). Copyable plain data.
// Whether `path` starts with the prepared weight file's magic "DLRWPREP" (nothing else
// is checked: PreparedFile::open does that). A file that cannot be opened or is shorter
// than the magic is not one (false, no error): the caller then opens it as a .weights
// file, whose error names the problem.
bool has_prepared_magic(const std::string& path);

class PreparedFile {
 public:
  // Reads and checks the header (see the format above) against `plan`. `expect`:
  // also require this identity (cfg hash, .weights size, and the content hash when
  // expect->weights_hash != 0, else the .weights mtime); nullptr: any identity whose
  // dtype, layout and blob sizes fit the plan. Errors are one line naming the file,
  // the field or blob, and what was expected.
  static Expected<PreparedFile> open(const std::string& path, const ExecutionPlan& plan,
                                     const PreparedIdentity* expect);

  const std::string& path() const { return m_path; }
  const std::vector<PreparedBlob>& blobs() const { return m_blobs; }
  int64_t file_bytes() const { return m_file_bytes; }
  int64_t header_bytes() const { return m_header_bytes; }
  // As stored (cfg_path and weights_path empty).
  const PreparedIdentity& identity() const { return m_identity; }

  // Reads every blob and checks its CRC32C (a reusable 8 MiB buffer, pread). The
  // first mismatch fails with the blob index, layer, offset and both CRCs.
  Status verify_all() const;

 private:
  std::string m_path;
  std::vector<PreparedBlob> m_blobs;
  int64_t m_file_bytes = 0;
  int64_t m_header_bytes = 0;
  PreparedIdentity m_identity;
};

// A WeightSource that reads prepared blobs from the file (pread straight into dst;
// checks each blob's CRC32C as it reads it): preload and the host store start from a
// prepared file with no BN fold. prepare() refuses a blob whose layer, size, dtype or
// layout differ from the file's. Keeps the file open (RAII) until destroyed; copies
// what it needs from `file`.
Expected<std::unique_ptr<WeightSource>> prepared_file_source(const PreparedFile& file);

// Where the cache keeps the prepared file of `id`:
//   user_cache_dir()/prepared/<cfg file stem>-<16 hex digits>.dlrw
// the hex digits an XXH3-64 of (cfg hash, .weights realpath, size and mtime, dtype,
// layout, blob sizes): a changed .weights file gets a new name. Creates the
// directory. Errors name the directory and the fix.
Expected<std::string> prepared_cache_path(const PreparedIdentity& id);

enum class PreparedCheck {
  kHeader,  // reuse a cached file after open() (header, table, identity); blob CRCs are checked as blobs are read
  kFull,    // also verify_all() before reuse (reads the whole file)
};

// The cache's side of ensure_prepared (prepared_cache.h).
struct PreparedCacheUse {
  int64_t max_bytes = -1;        // the bound: SessionOptions::cache_max_bytes (cache_bound_bytes)
  PreparedUse* hold = nullptr;   // when given: receives the returned file's read lock
  int threads = 1;               // threads preparing each blob when the file is written
};

// First use of storage mode: the path of a valid prepared file for (id, plan),
// building it through `source` when it is absent, stale (another format version or
// identity) or corrupt (a failed check); a rebuilt one is reported by a one-line
// warning naming the file and why (also in *why_rebuilt when given). *built: whether
// this call wrote the file. A valid file in a read-only cache is used as it is. When
// the file must be written and cannot be (read-only media, a cache directory that
// cannot be created): an error naming the directory and both fixes (DLR_CACHE_DIR
// to a writable directory; dlrun --prepare OUT on writable storage). The caller
// refuses storage mode then; it does not fall back to folding from the .weights.
// Cache hygiene, every call: temporaries of dead writers in the cache are removed
// first; the file used is marked used (access time) and, after it, the least recently
// used files not in use are evicted until the cache is within its bound (the returned
// file is never evicted). A bad DLR_CACHE_MAX_BYTES is an error naming it.
Expected<std::string> ensure_prepared(const PreparedIdentity& id, const ExecutionPlan& plan, WeightSource& source,
                                      bool* built, PreparedCheck check = PreparedCheck::kHeader,
                                      std::string* why_rebuilt = nullptr, const PreparedCacheUse& cache = {});

}  // namespace dlr
