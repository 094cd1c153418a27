// dlprobe: measure the current GPU's host-to-device copy engine (bandwidth by copy
// size, host call time, copy-queue depth behind a busy stream) and write a copy
// profile for `dlrun --copy-profile`. `dlprobe --show NAME|FILE` prints a built-in
// or saved profile (no GPU needed). Tables on stdout, progress and errors on stderr.
// Exit: 0 ok, 1 error (one line on stderr), 2 usage error.
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
#include "tools/common/tool_support.h"
#include "runtime/cuda/copy_probe.h"

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
};

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
  // Fail before measuring, not after, when the profile cannot be written.
  const std::filesystem::path dir = std::filesystem::path(a.out).parent_path();
  const std::string dir_text = dir.empty() ? "." : dir.string();
  if (::access(dir_text.c_str(), W_OK) != 0)
    return fail("dlprobe", "cannot write --out " + a.out + ": directory '" + dir_text + "' is not writable or missing");
  auto r = probe::run_probe(o);
  if (!r.ok()) return fail("dlprobe", r.status());
  print_measurements(*r);
  auto p = probe::profile_from_probe(*r, a.name);
  if (!p.ok()) return fail("dlprobe", p.status());
  std::printf("\n");
  print_profile(*p);
  std::printf("\nprofile JSON (%.1f s of measurement): %s\n", r->seconds, p->to_json_text().c_str());
  std::fflush(stdout);
  Status st = p->save(a.out);
  if (!st.ok()) return fail("dlprobe", st);
  std::printf("wrote %s\n", a.out.c_str());
  return kExitOk;
}

#endif  // DLR_HAVE_CUDA

}  // namespace

namespace {

int tool_main(int argc, char** argv) {
  dlr::init_logging();
  Args a;
  CLI::App app{"dlprobe: measure the GPU's host-to-device copy engine and write a copy profile", "dlprobe"};
  app.add_option("--show", a.show, "print a copy profile (built-in name or JSON file) and exit; needs no GPU");
  app.add_option("--out", a.out, "write the measured profile here (default copy_profile.json)");
  app.add_option("--name", a.name, "profile name (default: probe-<device name>)");
  app.add_flag("--quick", a.quick, "fewer sizes, repetitions and queue tests");
  app.add_flag("--brief", a.brief,
               "only what the streaming planner reads (pinned 64 KiB..16 MiB, three short queue tests): the probe "
               "that --copy-profile auto runs on a GPU's first use");
  app.add_option("--max-mb", a.max_mb, "largest copy size in MiB (default 256)")->check(CLI::Range(1, 4096));
  app.add_option("--device", a.device, "CUDA device index (default 0)")->check(CLI::NonNegativeNumber);
  app.add_option("--log-level", a.log_level, "trace, debug, info, warn, error or off (stderr)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  dlr::set_log_level(a.log_level);
  if (!a.show.empty()) return show(a.show);
#ifdef DLR_HAVE_CUDA
  return probe_main(a);
#else
  return fail("dlprobe", "this build has no CUDA backend");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  return dlr::tools::guarded_main("dlprobe", [&] { return tool_main(argc, argv); });
}
