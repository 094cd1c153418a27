// WeightSource: where an engine gets the prepared bytes of a plan's weight blobs
// (BN folded, in the blob's dtype and the plan's layout). Engines see only this
// interface, never the network description or the file format behind it.
#pragma once

#include <memory>
#include <string>

#include "runtime/core/status.h"
#include "runtime/core/types.h"
#include "runtime/plan.h"

namespace dlr {

class WeightsFile;

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // Writes the prepared blob `blob` (blob.bytes bytes, padding zeroed) into dst.
  // Not thread-safe (keeps scratch memory).
  virtual Status prepare(const WeightBlob& blob, Layout layout, void* dst) = 0;
  virtual const std::string& name() const = 0;  // for messages (the weights file path)
};

// A Darknet .weights file already checked against `net` (WeightsFile::open).
// Both are referenced, not copied: they must outlive the source.
std::unique_ptr<WeightSource> weights_file_source(const NetworkDesc& net, const WeightsFile& file);

}  // namespace dlr
