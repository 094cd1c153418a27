// dlprobe's disk-spread mode: see storage_spread.h. Plain C++ (every build).
#include "tools/dlprobe/storage_spread.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>

#include <nlohmann/json.hpp>

#include "runtime/storage/block_reader.h"
#include "tools/common/progress.h"  // percentile
#include "tools/dlprobe/storage_probe.h"

namespace dlr::probe {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kMiB = 1024 * 1024;

// One pass: [0, bytes) in requests of `block` (the last one shorter), `depth` in flight,
// each in its slot of `buf` until it has landed.
Status read_pass(BlockReader& reader, int64_t bytes, int64_t block, int depth, char* buf,
                 std::vector<int64_t>* tickets) {
  std::fill(tickets->begin(), tickets->end(), -1);
  int64_t reads = 0;
  for (int64_t off = 0; off < bytes; off += block, ++reads) {
    int64_t& slot = (*tickets)[size_t(reads % depth)];
    if (slot >= 0) DLR_RETURN_IF_ERROR(reader.wait(slot));
    const int64_t n = std::min(block, bytes - off);
    DLR_ASSIGN_OR_RETURN(slot, reader.submit({off, n, buf + (reads % depth) * block}));
  }
  return reader.wait_all();
}

double mbps(int64_t bytes, double ms) { return ms > 0 ? double(bytes) / (ms * 1e3) : 0; }

}  // namespace

SpreadStats spread_stats(const std::vector<double>& ms) {
  SpreadStats s;
  if (ms.empty()) return s;
  s.min = *std::min_element(ms.begin(), ms.end());
  s.max = *std::max_element(ms.begin(), ms.end());
  s.p50 = tools::percentile(ms, 50);
  s.p90 = tools::percentile(ms, 90);
  s.p99 = tools::percentile(ms, 99);
  s.p99_9 = tools::percentile(ms, 99.9);
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / double(ms.size());
  s.p99_over_p50 = s.p50 > 0 ? s.p99 / s.p50 : 0;
  return s;
}

Expected<SpreadResult> run_spread_probe(const SpreadOptions& o) {
  const Clock::time_point t0 = Clock::now();
  if (o.passes < 1) return invalid_argument("storage passes: " + std::to_string(o.passes) + " (at least 1)");
  if (o.block < BlockReader::kDirectAlign || o.block % BlockReader::kDirectAlign != 0)
    return invalid_argument("storage passes: a read block of " + std::to_string(o.block) +
                            " bytes is not a positive multiple of 4096");
  ProbeFile pf;
  DLR_RETURN_IF_ERROR(open_probe_file(o.file, o.dir, o.temp_bytes, &pf));
  SpreadResult r;
  r.file = pf.path;
  r.device = pf.device;
  r.temporary = pf.temporary;
  r.file_bytes = pf.bytes;
  const int64_t align = BlockReader::kDirectAlign;
  if (o.pass_bytes > r.file_bytes)
    return invalid_argument("storage passes: " + std::to_string(o.pass_bytes >> 20) + " MiB per pass, but '" +
                            r.file + "' has " + std::to_string(r.file_bytes) + " bytes");
  r.pass_bytes = (o.pass_bytes > 0 ? o.pass_bytes : r.file_bytes) / align * align;
  r.depth = o.depth;
  r.block = o.block;
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<BlockReader> reader,
                       BlockReader::open(r.file, o.reader, o.depth, /*direct=*/true));
  r.reader = reader->kind();
  DLR_ASSIGN_OR_RETURN(AlignedBuffer buf, aligned_buffer(o.block * o.depth));
  std::vector<int64_t> tickets(size_t(o.depth), -1);
  std::fprintf(stderr, "dlprobe storage: %d passes of %.2f MiB, %s reader, depth %d, blocks of %lld KiB\n", o.passes,
               double(r.pass_bytes) / double(kMiB), reader_kind_name(r.reader), r.depth, (long long)(r.block >> 10));
  r.pass_ms.reserve(size_t(o.passes));
  for (int p = 0; p < o.passes; ++p) {
    const Clock::time_point s = Clock::now();
    DLR_RETURN_IF_ERROR(read_pass(*reader, r.pass_bytes, r.block, r.depth, buf.get(), &tickets));
    r.pass_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
  }
  r.stats = spread_stats(r.pass_ms);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

void print_spread(const SpreadResult& r) {
  std::printf("\nDisk spread: %s%s\n%.2f MiB per pass (of %.2f MiB), %zu passes back to back, O_DIRECT, %s reader, "
              "depth %d, blocks of %lld KiB\n",
              r.device.c_str(), r.temporary ? " (created and removed)" : "", double(r.pass_bytes) / double(kMiB),
              double(r.file_bytes) / double(kMiB), r.pass_ms.size(), reader_kind_name(r.reader), r.depth,
              (long long)(r.block >> 10));
  std::printf("%10s %10s %10s\n", "pass", "ms", "MB/s");
  const SpreadStats& s = r.stats;
  const std::pair<const char*, double> rows[] = {{"min", s.min}, {"p50", s.p50},     {"p90", s.p90}, {"p99", s.p99},
                                                 {"p99.9", s.p99_9}, {"max", s.max}, {"mean", s.mean}};
  for (const auto& [name, ms] : rows) std::printf("%10s %10.2f %10.1f\n", name, ms, mbps(r.pass_bytes, ms));
  std::printf("p99/p50 %.3f\n", s.p99_over_p50);
  std::vector<size_t> order(r.pass_ms.size());
  std::iota(order.begin(), order.end(), size_t(0));
  const size_t shown = std::min<size_t>(5, order.size());
  std::partial_sort(order.begin(), order.begin() + long(shown), order.end(),
                    [&](size_t a, size_t b) { return r.pass_ms[a] > r.pass_ms[b]; });
  std::printf("slowest passes:");
  for (size_t i = 0; i < shown; ++i) std::printf(" #%zu %.2f ms", order[i], r.pass_ms[order[i]]);
  std::printf("\n%.1f s\n", r.seconds);
}

std::string spread_json(const SpreadResult& r) {
  const SpreadStats& s = r.stats;
  std::vector<double> pass_mbps;
  for (double ms : r.pass_ms) pass_mbps.push_back(mbps(r.pass_bytes, ms));
  const nlohmann::json j = {{"file", r.file},
                            {"device", r.device},
                            {"temporary", r.temporary},
                            {"file_bytes", r.file_bytes},
                            {"pass_bytes", r.pass_bytes},
                            {"passes", r.pass_ms.size()},
                            {"reader", reader_kind_name(r.reader)},
                            {"read_depth", r.depth},
                            {"read_block_bytes", r.block},
                            {"min_ms", s.min},
                            {"p50_ms", s.p50},
                            {"p90_ms", s.p90},
                            {"p99_ms", s.p99},
                            {"p99_9_ms", s.p99_9},
                            {"max_ms", s.max},
                            {"mean_ms", s.mean},
                            {"p99_over_p50", s.p99_over_p50},
                            {"mbps_at_p50", mbps(r.pass_bytes, s.p50)},
                            {"seconds", r.seconds},
                            {"pass_ms", r.pass_ms},
                            {"pass_mbps", pass_mbps}};
  return j.dump(1) + "\n";
}

}  // namespace dlr::probe
