// Darknet .weights: header, per-layer blob index, payload access without
// reading the whole file (mmap, read-only). No CUDA.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "runtime/core/status.h"

namespace dlr {

struct WeightsHeader {
  int32_t major = 0;
  int32_t minor = 2;
  int32_t revision = 5;
  uint64_t seen = 0;
  // 20 when major*10+minor >= 2 (64-bit seen), else 16.
  uint32_t header_bytes() const { return (major * 10 + minor >= 2) ? 20u : 16u; }
};

enum class BlobRole : uint8_t { kBias, kScale, kMean, kVariance, kWeights };
const char* blob_role_name(BlobRole r);

struct BlobRef {
  uint64_t offset = 0;  // byte offset in the file
  uint64_t count = 0;   // float32 elements
  BlobRole role = BlobRole::kBias;
};

// Blobs of one layer in file order; empty for layers without weights.
struct LayerBlobs {
  int layer = 0;
  std::vector<BlobRef> blobs;
  uint64_t bytes() const;
  const BlobRef* find(BlobRole role) const;  // nullptr when absent
};

struct WeightsIndex {
  WeightsHeader header;
  std::vector<LayerBlobs> layers;  // one entry per layer of the network, same index
  uint64_t payload_end = 0;        // header + all blobs = expected file size
};

// Checks every conv layer's float counts against limits::kLayerWeights and the
// total against limits::kNetworkWeights (the parser guarantees both; this also
// covers a NetworkDesc built by hand). `name` prefixes the message.
Status check_weight_counts(const NetworkDesc& net, const std::string& name);

// Computes the index from the network alone (reads no file). Requires
// check_weight_counts(net) to pass (else byte offsets could wrap).
WeightsIndex build_weights_index(const NetworkDesc& net, const WeightsHeader& header);

// An open, mapped .weights file checked against a network. Move-only.
class WeightsFile {
 public:
  // Opens `path`, parses the header, builds the index and checks that the file
  // size equals the index exactly. Errors name the file and, for a short file,
  // the first layer (index and cfg line) that does not fit with expected vs
  // actual bytes; for a long file, the surplus.
  static Expected<WeightsFile> open(const std::string& path, const NetworkDesc& net);

  WeightsFile(WeightsFile&&) noexcept;
  WeightsFile& operator=(WeightsFile&&) noexcept;
  WeightsFile(const WeightsFile&) = delete;
  WeightsFile& operator=(const WeightsFile&) = delete;
  ~WeightsFile();

  const std::string& path() const { return m_path; }
  const WeightsIndex& index() const { return m_index; }
  uint64_t file_bytes() const { return m_size; }
  // Read-only view of a blob inside the mapping (valid while this object lives).
  const float* data(const BlobRef& blob) const;
  // Copies a blob into caller memory with pread (for O_DIRECT-free streaming paths).
  Status read(const BlobRef& blob, float* dst) const;

 private:
  WeightsFile() = default;
  std::string m_path;
  WeightsIndex m_index;
  int m_fd = -1;
  uint64_t m_size = 0;
  const unsigned char* m_map = nullptr;
};

// Serialises a header + payload in Darknet's format (used by the synthetic generator and tests).
Status write_weights_header(std::FILE* f, const WeightsHeader& header);

}  // namespace dlr
