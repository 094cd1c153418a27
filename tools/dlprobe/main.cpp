// dlprobe: measure the current GPU's host-to-device copy engine (bandwidth by copy
// size, host call time, copy-queue depth behind a busy stream) and the disk the
// weights are read from (O_DIRECT bandwidth by block size and queue depth, buffered
// reads), and write a copy profile for `dlrun --copy-profile`. `--storage-only`
// measures the disk alone (no GPU needed, also in a CPU-only build). `dlprobe --show
// NAME|FILE` prints a built-in or saved profile (no GPU needed). `--storage-only
// --storage-passes N` reads one file N times with streaming's reader and prints the
// spread of the pass times (tools/dlprobe/storage_spread.h). Tables on stdout,
// progress and errors on stderr. Exit: 0 ok, 1 error (one line on stderr), 2 usage error.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include <unistd.h>

#include "runtime/core/log.h"
#include "runtime/streaming/copy_profile.h"
#include "runtime/options_text.h"
#include "tools/common/command_line.h"
#include "tools/common/result_formats.h"  // write_text_file
#include "tools/common/session_flags.h"
#include "tools/common/tool_support.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/copy_probe.h"
#endif
#include "tools/dlprobe/storage_probe.h"
#include "tools/dlprobe/storage_spread.h"

namespace {

using namespace dlr;
using namespace dlr::tools;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

struct Args {
  std::string show;
  std::string out = "copy_profile.json";
  std::string name;
  bool quick = false;
  bool brief = false;
  int max_mb = 256;
  int device = 0;
  std::string log_level = "warn";
  // Storage phase.
  bool no_storage = false;
  bool storage_only = false;
  std::string storage_file;
  int storage_mib = 512;
  bool storage_mib_given = false;
  std::string base;  // --storage-only: the copy part of the profile written
  // Disk spread (--storage-passes): passes, JSON file, and dlrun's read flags.
  int storage_passes = 0;
  std::string json;
  SessionFlagTexts read_flags{FlagTool::kDlrun};
};

const std::vector<std::string> kReadFlags = {"--read-depth", "--read-block", "--reader"};
const char* const kReadOptions[] = {"read_depth", "read_block_bytes", "reader"};

std::string size_text(int64_t b) {
  if (b >= kMiB && b % kMiB == 0) return std::to_string(b / kMiB) + " MiB";
  if (b >= kKiB && b % kKiB == 0) return std::to_string(b / kKiB) + " KiB";
  return std::to_string(b) + " B";
}

const BandwidthPoint* point_at(const std::vector<BandwidthPoint>& pts, int64_t bytes) {
  for (const BandwidthPoint& p : pts)
    if (p.bytes == bytes) return &p;
  return nullptr;
}

std::string gbps_cell(const BandwidthPoint* p) {
  char buf[32];
  if (!p) return "-";
  std::snprintf(buf, sizeof buf, "%.2f", p->gbps);
  return buf;
}

// The profile as a table: measured points, predicted pinned copy time, queue depth.
void print_profile(const CopyProfile& p) {
  std::printf("copy profile '%s'%s%s\n", p.name.c_str(), p.device.empty() ? "" : " measured on ",
              p.device.c_str());
  std::printf("  peak pinned %.2f GB/s, host call %.1f us, chunk %s, min unit %s\n", p.peak_gbps(), p.call_us,
              size_text(p.chunk_bytes).c_str(), size_text(p.min_unit_bytes).c_str());
  std::set<int64_t> sizes;
  for (const BandwidthPoint& b : p.pinned) sizes.insert(b.bytes);
  for (const BandwidthPoint& b : p.pageable) sizes.insert(b.bytes);
  std::printf("  %10s %12s %14s %12s %12s\n", "size", "pinned GB/s", "pageable GB/s", "pinned ms", "queue depth");
  for (int64_t s : sizes)
    std::printf("  %10s %12s %14s %12.4f %12d\n", size_text(s).c_str(), gbps_cell(point_at(p.pinned, s)).c_str(),
                gbps_cell(point_at(p.pageable, s)).c_str(), p.copy_ms(s), p.queue_depth(s));
  std::printf("  queue classes:");
  for (size_t i = 0; i < p.queue.size(); ++i) {
    const QueueClass& q = p.queue[i];
    const bool last = i + 1 == p.queue.size();
    const std::string label = !last ? "<= " + size_text(q.max_bytes) : i == 0 ? "any size" : "larger";
    std::printf(" %s: %d%s%s", label.c_str(), q.depth, q.depth == 0 ? " (blocks)" : "", last ? "\n" : ";");
  }
  if (p.queue.empty()) std::printf(" none\n");
  std::printf("  YOLOv4's largest fp32 layer (18.9 MB): %.3f ms pinned\n", p.copy_ms(18'900'000));
  const StorageProfile& st = p.storage;
  if (st.empty()) {
    std::printf("  storage: none in this profile (streaming assumes the default, a conservative NVMe disk)\n");
    return;
  }
  std::printf("  storage%s%s, reader %s: buffered %.2f GB/s uncached, %.2f GB/s cached (0: unknown)\n",
              st.device.empty() ? "" : " ", st.device.c_str(), st.reader.empty() ? "any" : st.reader.c_str(),
              st.buffered_gbps, st.cached_gbps);
  std::set<int64_t> blocks;
  std::set<int> depths;
  for (const StoragePoint& sp : st.direct) {
    blocks.insert(sp.block_bytes);
    depths.insert(sp.queue_depth);
  }
  std::printf("  O_DIRECT GB/s %10s", "block");
  for (int d : depths) std::printf(" %7s", ("qd " + std::to_string(d)).c_str());
  std::printf("\n");
  for (int64_t b : blocks) {
    std::printf("  %14s%10s", "", size_text(b).c_str());
    for (int d : depths) {
      const StoragePoint* hit = nullptr;
      for (const StoragePoint& sp : st.direct)
        if (sp.block_bytes == b && sp.queue_depth == d) hit = &sp;
      if (hit)
        std::printf(" %7.2f", hit->gbps);
      else
        std::printf(" %7s", "-");
    }
    std::printf("\n");
  }
  std::printf("  reading YOLOv4's weights (258 MB) in 4 MiB blocks: %.0f ms at depth 1, %.0f ms at depth 8\n",
              st.read_ms(258'000'000, 4 * kMiB, 1), st.read_ms(258'000'000, 4 * kMiB, 8));
}

// The storage phase's measurements: both reader kinds side by side.
void print_storage(const probe::StorageResult& r) {
  std::printf("\nStorage: %s, %lld MiB%s; O_DIRECT sequential reads (GB/s, wall time, page cache dropped "
              "before each run)\n",
              r.device.c_str(), (long long)(r.file_bytes >> 20), r.temporary ? " (created and removed)" : "");
  std::printf("%10s %6s %12s %12s %16s %16s\n", "block", "depth", "uring GB/s", "threads GB/s", "uring CPU ms/GB",
              "threads CPU ms/GB");
  std::set<std::pair<int, int64_t>> keys;
  for (const probe::StorageRun& x : r.direct) keys.insert({x.depth, x.block});
  for (const auto& [depth, block] : keys) {
    double g[2] = {-1, -1}, c[2] = {-1, -1};
    for (const probe::StorageRun& x : r.direct)
      if (x.depth == depth && x.block == block) {
        g[x.kind == ReaderKind::kUring ? 0 : 1] = x.gbps;
        c[x.kind == ReaderKind::kUring ? 0 : 1] = x.cpu_ms_per_gb;
      }
    char cell[4][16] = {"-", "-", "-", "-"};
    for (int k = 0; k < 2; ++k) {
      if (g[k] >= 0) std::snprintf(cell[k], sizeof cell[k], "%.3f", g[k]);
      if (c[k] >= 0) std::snprintf(cell[2 + k], sizeof cell[2 + k], "%.0f", c[k]);
    }
    std::printf("%10s %6d %12s %12s %16s %16s\n", size_text(block).c_str(), depth, cell[0], cell[1], cell[2], cell[3]);
  }
  std::printf("buffered 1 MiB reads, %lld MiB: %.3f GB/s uncached (after POSIX_FADV_DONTNEED), %.3f GB/s cached\n",
              (long long)(r.buffered_bytes >> 20), r.buffered_gbps, r.cached_gbps);
  if (r.cached_after_direct >= 0)
    std::printf("page cache held %lld KiB of the file after the O_DIRECT runs\n",
                (long long)(r.cached_after_direct / kKiB));
  std::printf("best reader: %s (geometric mean of the uring/threads ratios); %.1f s\n", reader_kind_name(r.best),
              r.seconds);
}

// Runs the storage phase and puts its figures into `p` (validated like a loaded file).
Status measure_storage(const Args& a, CopyProfile* p) {
  probe::StorageOptions o;
  o.file = a.storage_file;
  o.file_bytes = int64_t(a.storage_mib) * kMiB;
  o.quick = a.quick;
  DLR_ASSIGN_OR_RETURN(probe::StorageResult r, probe::run_storage_probe(o));
  print_storage(r);
  p->storage = probe::storage_profile_from(r);
  DLR_ASSIGN_OR_RETURN(*p, CopyProfile::from_json_text(p->to_json_text(), "measured profile '" + p->name + "'"));
  return Status();
}

// Fails before measuring, not after, when the profile cannot be written.
Status check_out_dir(const std::string& out) {
  const std::filesystem::path dir = std::filesystem::path(out).parent_path();
  const std::string dir_text = dir.empty() ? "." : dir.string();
  if (::access(dir_text.c_str(), W_OK) != 0)
    return invalid_argument("cannot write --out " + out + ": directory '" + dir_text + "' is not writable or missing");
  return Status();
}

Status save_profile(const CopyProfile& p, const std::string& out) {
  std::printf("\n");
  print_profile(p);
  std::fflush(stdout);
  DLR_RETURN_IF_ERROR(p.save(out));
  std::printf("wrote %s\n", out.c_str());
  return Status();
}

// --storage-only: the copy part comes from --base, else from the --out file when it
// is a valid profile (its storage is replaced), else the built-in "discrete".
int storage_main(const Args& a) {
  Status st = check_out_dir(a.out);
  if (!st.ok()) return fail("dlprobe", st);
  std::string base = a.base;
  if (base.empty()) base = std::filesystem::exists(a.out) ? a.out : "discrete";
  if (base == a.out && !CopyProfile::check_name(base).ok()) base = "./" + base;  // a file name without '/' or .json
  auto p = CopyProfile::resolve(base);
  if (!p.ok()) return fail("dlprobe", "--storage-only: the copy part of the profile: " + p.status().message());
  std::fprintf(stderr, "dlprobe: storage only; copy figures from '%s'\n", base.c_str());
  if (!a.name.empty()) p->name = a.name;
  st = measure_storage(a, &*p);
  if (st.ok()) st = save_profile(*p, a.out);
  return st.ok() ? kExitOk : fail("dlprobe", st);
}

// --storage-only --storage-passes N: the disk's own spread over N passes of the same bytes,
// read as dlrun reads them (its read flags, their defaults and checks).
int spread_main(const Args& a) {
  SessionOptions so;
  so.weights_from = WeightsFrom::kStorage;
  for (const char* option : kReadOptions) {
    const Status st = set_session_flag(FlagTool::kDlrun, option, a.read_flags.text(option), &so);
    if (!st.ok()) return fail("dlprobe", st), kExitUsage;
  }
  if (Status st = validate_options(so); !st.ok()) return fail("dlprobe", st), kExitUsage;
  probe::SpreadOptions o;
  o.file = a.storage_file;
  o.temp_bytes = int64_t(a.storage_mib) * kMiB;
  o.pass_bytes = a.storage_file.empty() || !a.storage_mib_given ? 0 : int64_t(a.storage_mib) * kMiB;
  o.passes = a.storage_passes;
  o.depth = so.read_depth;
  o.block = so.read_block_bytes;
  o.reader = so.reader;
  auto r = probe::run_spread_probe(o);
  if (!r.ok()) return fail("dlprobe", r.status());
  probe::print_spread(*r);
  if (!a.json.empty()) {
    if (Status st = write_text_file(a.json, probe::spread_json(*r)); !st.ok()) return fail("dlprobe", st);
    std::printf("wrote %s\n", a.json.c_str());
  }
  return kExitOk;
}

int show(const std::string& what) {
  auto p = CopyProfile::resolve(what);
  if (!p.ok()) return fail("dlprobe", p.status());
  print_profile(*p);
  return kExitOk;
}

#ifdef DLR_HAVE_CUDA

void print_measurements(const probe::ProbeResult& r) {
  std::printf("dlprobe on %s\n", r.device.c_str());
  if (r.integrated) std::printf("note: integrated GPU: H2D copies are DRAM-to-DRAM; mapped pinned memory avoids them\n");
  std::printf("\nH2D cudaMemcpyAsync: device time by CUDA events (median per copy; small copies in batches;\n"
              "pinned batches queued behind a short kernel), host call time (median per call)\n");
  std::printf("%10s %6s %5s %12s %10s %14s %12s\n", "size", "batch", "reps", "pinned GB/s", "call us",
              "pageable GB/s", "call us");
  for (const probe::SizeResult& s : r.sizes)
    std::printf("%10s %6d %5d %12.2f %10.1f %14.2f %12.1f\n", size_text(s.bytes).c_str(), s.copies_per_rep, s.reps,
                s.pinned_gbps, s.pinned_call_us, s.pageable_gbps, s.pageable_call_us);
  std::printf("\nConcurrent pinned H2D copies (the same bytes on one stream or split over two, queued behind a "
              "kernel)\n%10s %8s %10s\n", "size", "streams", "GB/s");
  for (const probe::ConcurrentResult& c : r.concurrent)
    std::printf("%10s %8d %10.2f\n", size_text(c.bytes).c_str(), c.streams, c.gbps);
  if (!r.modes.empty()) {
    std::printf("\nPinned H2D copies as streaming issues them (64 MiB of back-to-back copies per batch): on a "
                "stream,\ncaptured in a CUDA graph, and on a stream while a 1 GiB memset loop keeps device memory "
                "busy\n%10s %12s %12s %14s\n",
                "size", "stream GB/s", "graph GB/s", "loaded GB/s");
    for (const probe::ModeResult& m : r.modes)
      std::printf("%10s %12.2f %12.2f %14.2f\n", size_text(m.bytes).c_str(), m.stream_gbps, m.graph_gbps,
                  m.loaded_gbps);
  }
  std::printf("\nCopy queue: stream held by a %.0f ms kernel (check: a 50 ms spin took %.1f ms); copies enqueued\n"
              "until a call blocks the host > %.0f ms (at most %d)\n",
              r.spin_ms, r.spin_check_ms, r.block_threshold_ms, r.queue_cap);
  std::printf("%10s %9s %8s %14s %14s %9s %9s  %s\n", "size", "memory", "queued", "blocking call", "slowest other",
              "spin ms", "held ms", "result");
  for (const probe::QueueResult& q : r.queue) {
    std::string result;
    if (q.blocked)
      result = q.queued == 0 ? "blocks at once (depth 0)" : "depth " + std::to_string(q.queued);
    else if (q.inconclusive)
      result = "kernel time ran out: depth >= " + std::to_string(q.queued);
    else
      result = "no block within the cap: depth >= " + std::to_string(q.queued);
    char block[32] = "-";
    if (q.blocked) std::snprintf(block, sizeof block, "%.1f ms", q.block_ms);
    std::printf("%10s %9s %8d %14s %11.1f us %9.0f %9.1f  %s\n", size_text(q.bytes).c_str(),
                q.pinned ? "pinned" : "pageable", q.queued, block, q.max_call_us, q.spin_ms, q.held_ms, result.c_str());
  }
}

int probe_main(const Args& a) {
  probe::ProbeOptions o;
  o.device = a.device;
  o.quick = a.quick;
  o.brief = a.brief;
  o.max_bytes = int64_t(a.max_mb) * kMiB;
  Status st = check_out_dir(a.out);
  if (!st.ok()) return fail("dlprobe", st);
  auto r = probe::run_probe(o);
  if (!r.ok()) return fail("dlprobe", r.status());
  print_measurements(*r);
  auto p = probe::profile_from_probe(*r, a.name);
  if (!p.ok()) return fail("dlprobe", p.status());
  std::printf("\nprofile JSON of the copy measurements (%.1f s): %s\n", r->seconds, p->to_json_text().c_str());
  if (!a.no_storage) {
    st = measure_storage(a, &*p);
    if (!st.ok()) return fail("dlprobe", st);
  }
  st = save_profile(*p, a.out);
  return st.ok() ? kExitOk : fail("dlprobe", st);
}

#endif  // DLR_HAVE_CUDA

}  // namespace

namespace {

int tool_main(int argc, char** argv) {
  dlr::init_logging();
  Args a;
  CLI::App app{"dlprobe: measure the GPU's host-to-device copy engine and the disk, and write a copy profile",
               "dlprobe"};
  app.add_option("--show", a.show, "print a copy profile (built-in name or JSON file) and exit; needs no GPU");
  app.add_option("--out", a.out, "write the measured profile here (default copy_profile.json)");
  app.add_option("--name", a.name, "profile name (default: probe-<device name>)");
  app.add_flag("--quick", a.quick, "fewer sizes, repetitions and queue tests");
  app.add_flag("--brief", a.brief,
               "only what the streaming planner reads (pinned 64 KiB..16 MiB, three short queue tests): the probe "
               "that --copy-profile auto runs on a GPU's first use");
  app.add_option("--max-mb", a.max_mb, "largest copy size in MiB (default 256)")->check(CLI::Range(1, 4096));
  app.add_option("--device", a.device, "CUDA device index (default 0)")->check(CLI::NonNegativeNumber);
  app.add_flag("--no-storage", a.no_storage, "skip the storage phase (the profile then has no storage section)");
  app.add_flag("--storage-only", a.storage_only,
               "measure only the disk (no GPU needed); the copy part comes from --base, else the --out file if it "
               "exists, else the built-in 'discrete'");
  app.add_option("--storage-file", a.storage_file,
                 "measure reads of this existing file (kept); default: a temporary file of --storage-mib MiB in "
                 "$TMPDIR or the current directory, removed afterwards");
  app.add_option("--storage-mib", a.storage_mib,
                 "size of the temporary storage test file in MiB (default 512); with --storage-passes and "
                 "--storage-file: the MiB read per pass from the file's start (default: the whole file)")
      ->check(CLI::Range(4, 1 << 20));
  app.add_option("--storage-passes", a.storage_passes,
                 "--storage-only: the disk's own spread instead of the bandwidth table: read the same bytes N times, "
                 "pass after pass, with streaming's block reader (O_DIRECT, io_uring or pread threads) at dlrun's "
                 "--read-depth, --read-block and --reader, and print the pass times' p50, p90, p99, p99.9, max and "
                 "p99/p50 (no profile written)")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--json", a.json, "--storage-passes: also write the results, every pass's ms and MB/s, as JSON here");
  add_session_flags(app, &a.read_flags, kReadFlags, "Disk spread (--storage-passes), as dlrun reads");
  app.add_option("--base", a.base, "--storage-only: built-in name or profile file for the copy part");
  app.add_option("--log-level", a.log_level, "trace, debug, info, warn, error or off (stderr)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  if (const int rc = dlr::tools::parse_command_line(app, argc, argv, "dlprobe"); rc >= 0) return rc;
  a.storage_mib_given = app.count("--storage-mib") > 0;
  dlr::set_log_level(a.log_level);
  if (!a.show.empty()) return show(a.show);
  if (a.storage_only && a.no_storage) {
    std::fprintf(stderr, "dlprobe: --storage-only and --no-storage exclude each other\n");
    return kExitUsage;
  }
  if (!a.base.empty() && !a.storage_only) {
    std::fprintf(stderr, "dlprobe: --base is for --storage-only\n");
    return kExitUsage;
  }
  bool read_flag_given = false;
  for (const char* option : kReadOptions) read_flag_given = read_flag_given || a.read_flags.changed(option);
  if (a.storage_passes > 0 && (!a.storage_only || !a.base.empty())) {
    std::fprintf(stderr, "dlprobe: --storage-passes needs --storage-only and writes no profile (no --base)\n");
    return kExitUsage;
  }
  if (a.storage_passes == 0 && (!a.json.empty() || read_flag_given)) {
    std::fprintf(stderr, "dlprobe: --json, --read-depth, --read-block and --reader are for --storage-passes\n");
    return kExitUsage;
  }
  if (a.storage_passes > 0) return spread_main(a);
  if (a.storage_only) return storage_main(a);
#ifdef DLR_HAVE_CUDA
  return probe_main(a);
#else
  return fail("dlprobe", "this build has no CUDA backend: --storage-only measures the disk alone");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  return dlr::tools::guarded_main("dlprobe", [&] { return tool_main(argc, argv); });
}
