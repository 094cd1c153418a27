// WeightSource: where an engine gets the prepared bytes of a plan's weight blobs
// (BN folded, in the blob's dtype and the plan's layout). Engines see only this
// interface, never the network description or the file format behind it.
#pragma once

#include <memory>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/types.h"
#include "runtime/compile/plan.h"

namespace dlr {

class WeightsFile;

// Where each prepared blob lies in a file (a prepared weight file): the blobs a
// storage plan reads each inference come from here (runtime/storage/read_pipeline.h).
struct BlobFile {
  std::string path;
  std::vector<int64_t> offsets;  // per plan.weights blob: its file offset (multiple of 4096)
  std::vector<uint32_t> crc32c;  // per blob: CRC32C of its bytes, checked as they are read (empty: none)
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // Writes the prepared blob `blob` (blob.bytes bytes, padding zeroed) into dst.
  // Thread-safe for distinct blobs only where concurrent() says so.
  virtual Status prepare(const WeightBlob& blob, Layout layout, void* dst) = 0;
  // True when prepare() may run on several threads at once (distinct blobs and dsts).
  virtual bool concurrent() const { return false; }
  // The filters [begin, end) of blob (its own numbering: 0 .. blob_filters(blob)) into
  // dst, the blob's start: their weights and their bias entries, and the blob's
  // padding with the part that ends at its last filter. Only where splits() says so;
  // distinct parts of one blob may then be prepared on several threads at once.
  virtual Status prepare_filters(const WeightBlob& blob, Layout layout, void* dst, int begin, int end);
  // True when prepare_filters() works on parts (else only prepare() of whole blobs).
  virtual bool splits() const { return false; }
  virtual const std::string& name() const = 0;  // for messages (the weights file path)
  // The prepared blobs as a file readable with direct I/O, or nullptr (a .weights
  // source, whose blobs need preparing).
  virtual const BlobFile* blob_file() const { return nullptr; }
};

// The filters a blob holds (a filter slice's own; every filter of its layer otherwise).
int blob_filters(const WeightBlob& blob, int layer_filters);

// A Darknet .weights file already checked against `net` (WeightsFile::open).
// Both are referenced, not copied: they must outlive the source.
std::unique_ptr<WeightSource> weights_file_source(const NetworkDesc& net, const WeightsFile& file);

}  // namespace dlr
