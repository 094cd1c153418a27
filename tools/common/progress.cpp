#include "tools/common/progress.h"

#include <cstdlib>
#include <fstream>

#include <sys/resource.h>

#include <algorithm>
#include <cmath>

namespace dlr::tools {

std::string progress_line(int64_t done, int64_t total, double elapsed_s, int bar_width) {
  const double rate = elapsed_s > 0 ? double(done) / elapsed_s : 0;
  char buf[256];
  if (total <= 0) {
    std::snprintf(buf, sizeof(buf), "%lld frames  %.1f frames/s", (long long)done, rate);
    return buf;
  }
  const double frac = std::min(1.0, double(done) / double(total));
  const int fill = int(frac * bar_width);
  std::string bar = "[" + std::string(size_t(fill), '#') + std::string(size_t(bar_width - fill), '.') + "]";
  std::string eta = "--:--";
  if (rate > 0 && done <= total) {
    const long long s = (long long)std::ceil(double(total - done) / rate);
    char e[48];
    if (s >= 3600)
      std::snprintf(e, sizeof(e), "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
    else
      std::snprintf(e, sizeof(e), "%lld:%02lld", s / 60, s % 60);
    eta = e;
  }
  std::snprintf(buf, sizeof(buf), "%s %lld/%lld  %.1f frames/s  ETA %s", bar.c_str(), (long long)done,
                (long long)total, rate, eta.c_str());
  return buf;
}

ProgressBar::ProgressBar(std::FILE* out, bool enabled, int64_t total) : m_out(out), m_enabled(enabled), m_total(total) {}

void ProgressBar::draw() {
  const double elapsed = std::chrono::duration<double>(Clock::now() - m_start).count();
  std::string line = progress_line(m_done, m_total, elapsed);
  const size_t len = line.size();
  if (len < m_last_len) line.append(m_last_len - len, ' ');  // erase the tail of a longer previous line
  m_last_len = len;
  std::fprintf(m_out, "\r%s", line.c_str());
  std::fflush(m_out);
  m_drawn = true;
  m_hidden = false;
  m_last = Clock::now();
}

void ProgressBar::update(int64_t done) {
  m_done = done;
  if (!m_enabled) return;
  if (m_drawn && !m_hidden && Clock::now() - m_last < std::chrono::milliseconds(100)) return;
  draw();
}

void ProgressBar::hide() {
  if (!m_enabled || !m_drawn || m_hidden) return;
  std::fprintf(m_out, "\r%s\r", std::string(m_last_len, ' ').c_str());
  std::fflush(m_out);
  m_hidden = true;
}

void ProgressBar::finish() {
  if (!m_enabled) return;
  draw();
  std::fputc('\n', m_out);
  std::fflush(m_out);
  m_enabled = false;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(p / 100.0 * double(v.size()));
  const size_t i = size_t(std::clamp(rank, 1.0, double(v.size()))) - 1;
  return v[i];
}

int64_t peak_host_rss_bytes() {
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return int64_t(ru.ru_maxrss) * 1024;  // Linux: KiB
}

HostMemory host_memory() {
  HostMemory m;
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) m.rss = int64_t(std::atoll(line.c_str() + 6)) * 1024;
    if (line.rfind("VmHWM:", 0) == 0) m.hwm = int64_t(std::atoll(line.c_str() + 6)) * 1024;
  }
  return m;
}

std::string summary_text(const RunSummary& s) {
  const double mib = 1024.0 * 1024.0;
  char buf[512];
  std::string out;
  std::snprintf(buf, sizeof(buf), "summary: %d input%s, %lld frame%s, %lld inference%s (batch %d) in %.2f s: %.2f frames/s\n",
                s.inputs, s.inputs == 1 ? "" : "s", (long long)s.frames, s.frames == 1 ? "" : "s",
                (long long)s.inferences, s.inferences == 1 ? "" : "s", s.batch, s.wall_s,
                s.wall_s > 0 ? double(s.frames) / s.wall_s : 0.0);
  out += buf;
  if (s.failed > 0) {
    std::snprintf(buf, sizeof(buf), "summary: %d input%s failed to read (reported above, skipped)\n", s.failed,
                  s.failed == 1 ? "" : "s");
    out += buf;
  }
  const std::string of_models = s.models > 1 ? " of all " + std::to_string(s.models) + " models" : "";
  std::snprintf(buf, sizeof(buf), "summary: latency per inference%s p50 %.2f ms, p90 %.2f ms, p99 %.2f ms (%zu runs)\n",
                of_models.c_str(), percentile(s.latency_ms, 50), percentile(s.latency_ms, 90), percentile(s.latency_ms, 99),
                s.latency_ms.size());
  out += buf;
  std::snprintf(buf, sizeof(buf), "summary: peak host RSS %.1f MiB; %s memory held by the engine %.1f MiB (weights %.1f MiB)\n",
                double(s.peak_rss_bytes) / mib, s.device.c_str(), double(s.device_bytes) / mib,
                double(s.weight_bytes) / mib);
  out += buf;
  if (!s.runtime_memory.empty()) {  // its lines, each as a summary line
    std::string line;
    for (char c : s.runtime_memory + "\n") {
      if (c != '\n') {
        line += c;
        continue;
      }
      out += "summary: runtime " + line + "\n";
      line.clear();
    }
  }
  if (s.device_used_bytes >= 0) {
    std::snprintf(buf, sizeof(buf), "summary: device memory taken by opening the session (cudaMemGetInfo) %.1f MiB\n",
                  double(s.device_used_bytes) / mib);
    out += buf;
  }
  return out;
}

}  // namespace dlr::tools
