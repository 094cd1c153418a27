// dlrun --prepare: the prepared weight file of a cfg and .weights, written ahead of the
// storage runs that read it (docs/streaming.md, "Weights from storage"). The plan comes
// from the compile step (plan_for_prepare); runtime/storage writes the file.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/core/status.h"
#include "runtime/core/types.h"
#include "runtime/options.h"

namespace dlr {

struct PrepareReport {
  std::string path;
  int64_t file_bytes = 0;
  int blobs = 0;
  DType dtype = DType::kF32;
  Layout layout = Layout::kNCHW;
  double seconds = 0;  // the whole call: parse, fold, write, fsync
};

// Parses the cfg, opens the .weights against it, plans the blobs a storage run with
// `options` reads (plan_for_prepare) and writes their prepared file to `out`.
Expected<PrepareReport> prepare_weights(const std::string& cfg_path, const std::string& weights_path,
                                        const SessionOptions& options, const std::string& out);

}  // namespace dlr
