// dlprobe --storage-only --storage-passes N (all builds, no GPU needed): the disk's own
// spread. Reads the same bytes of one file N times, pass after pass, with the block
// reader that streaming from storage uses (runtime/storage/block_reader.h: O_DIRECT,
// io_uring or pread threads, one reader kept open across passes as ReadPipeline keeps
// it across inferences) at dlrun's read depth and block, and times every pass (first
// submit to last completion). Nothing is dropped from the page cache: O_DIRECT reads
// bypass it. A storage inference that is read-bound (yolov4 @608 fp16 on a virtio disk:
// ~65 ms of reads against ~2 ms of kernels) has this spread under its own
// (docs/streaming.md, "The disk's own spread").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/core/types.h"  // ReaderKind

namespace dlr::probe {

struct SpreadOptions {
  std::string file;           // the file read (kept); "" = a temporary file of temp_bytes
  std::string dir;            // where the temporary file goes ("" = $TMPDIR, else the current directory)
  int64_t temp_bytes = 0;     // size of the temporary file
  int64_t pass_bytes = 0;     // bytes per pass from offset 0 (rounded down to 4 KiB); 0: the whole file
  int passes = 0;             // >= 1
  int depth = 8;              // reads in flight (dlrun's --read-depth)
  int64_t block = 1 << 20;    // bytes per read request (dlrun's --read-block; a multiple of 4 KiB)
  ReaderKind reader = ReaderKind::kAuto;
};

// Order statistics of per-pass times (ms): nearest rank, as dlrun's summary computes them.
struct SpreadStats {
  double min = 0, p50 = 0, p90 = 0, p99 = 0, p99_9 = 0, max = 0, mean = 0;
  double p99_over_p50 = 0;  // 0 when p50 is 0
};
SpreadStats spread_stats(const std::vector<double>& ms);

struct SpreadResult {
  std::string file;
  std::string device;             // describe_storage()
  bool temporary = false;
  int64_t file_bytes = 0;
  int64_t pass_bytes = 0;         // read in every pass
  int depth = 0;
  int64_t block = 0;
  ReaderKind reader = ReaderKind::kAuto;  // the backend used (never kAuto)
  std::vector<double> pass_ms;    // in pass order
  SpreadStats stats;
  double seconds = 0;             // wall time, file creation included
};

// Progress on stderr; every failure is a one-line Status (a temporary file is removed on
// every path).
Expected<SpreadResult> run_spread_probe(const SpreadOptions& options);

// The table on stdout: the statistics, MB/s at each, the slowest passes.
void print_spread(const SpreadResult& r);
// JSON text: the settings, pass_ms and pass_mbps (per pass), p50_ms ... max_ms, p99_over_p50.
std::string spread_json(const SpreadResult& r);

}  // namespace dlr::probe
