// Progress bar and closing summary of a dlrun run, both for stderr. The bar is
// drawn only when asked (dlrun: when stderr is a terminal, or --progress always)
// and redrawn at most every 100 ms; lines end in '\r', and finish() ends the line.
// Other lines on the same terminal (detections on stdout, error lines) go between
// hide(), which erases the bar, and the next update(), which draws it again, so the
// bar stays on the last line and never runs into them.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace dlr::tools {

// One bar line, without '\r': "[#####.....]  45/100  12.3 frames/s  ETA 0:04",
// or "45 frames  12.3 frames/s" when total < 0 (cameras, unknown video length).
std::string progress_line(int64_t done, int64_t total, double elapsed_s, int bar_width = 30);

class ProgressBar {
 public:
  ProgressBar(std::FILE* out, bool enabled, int64_t total);
  void set_total(int64_t total) { m_total = total; }
  void update(int64_t done);  // draws when enabled and 100 ms passed since the last draw, or when hidden
  void hide();                // erases the drawn bar (cursor back at column 0) until the next update()
  void finish();              // last draw and a newline (if anything was drawn)

 private:
  using Clock = std::chrono::steady_clock;
  std::FILE* m_out;
  bool m_enabled;
  int64_t m_total;
  int64_t m_done = 0;
  Clock::time_point m_start = Clock::now();
  Clock::time_point m_last{};
  bool m_drawn = false;
  bool m_hidden = false;
  size_t m_last_len = 0;
  void draw();
};

// Nearest-rank percentile (p in 0..100) of `v`; 0 for an empty vector.
double percentile(std::vector<double> v, double p);
// Peak resident set size of this process (getrusage), bytes.
int64_t peak_host_rss_bytes();
// This process's resident set now and its peak (VmRSS, VmHWM of /proc/self/status), bytes; -1 when unknown.
struct HostMemory {
  int64_t rss = -1;
  int64_t hwm = -1;
};
HostMemory host_memory();

struct RunSummary {
  int inputs = 0;            // input items (images, videos, cameras)
  int64_t frames = 0;        // images + video/camera frames processed
  int64_t inferences = 0;    // network runs (batches)
  int batch = 1;
  double wall_s = 0;         // first frame read to last result written
  std::vector<double> latency_ms;  // per inference: pre-processing + network + post-processing
  int64_t peak_rss_bytes = 0;
  std::string device;        // "cpu" or the GPU
  int64_t device_bytes = 0;  // device memory the engine holds (weights/pool, activations, workspace, staging)
  int64_t weight_bytes = 0;  // of which weights (the stream pool in stream mode)
  int failed = 0;            // inputs that failed to read (each reported, the run went on)
  bool interrupted = false;  // SIGINT ended the frame loop early
  int models = 1;            // dlrun --model: models run on every frame (latency: all of them)
  std::string runtime_memory;  // dlrun --model: the runtime's RuntimeMemory::to_text(); "" otherwise
  int64_t device_used_bytes = -1;  // GPU: drop of cudaMemGetInfo's free memory across open (CUDA context
                                   // and cuDNN included); -1: not measured (CPU)
};

// The closing summary: a few lines, each starting with "summary:".
std::string summary_text(const RunSummary& s);

}  // namespace dlr::tools
