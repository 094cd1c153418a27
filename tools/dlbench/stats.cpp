#include "tools/dlbench/stats.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/core/clock.h"

namespace dlr::tools {

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  s.p90 = v[std::min(v.size() - 1, size_t(0.9 * double(v.size() - 1) + 0.5))];
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  return s;
}

double median(std::vector<double> v) { return stats_of(std::move(v)).median; }

nlohmann::json stats_json(const Stats& s) {
  return {{"median_ms", s.median}, {"min_ms", s.min}, {"p90_ms", s.p90}, {"mean_ms", s.mean}};
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

namespace {
double g_process_start_ms = -1;
}  // namespace

double steady_clock_ms() {
  return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
}

void note_process_start() { g_process_start_ms = steady_clock_ms(); }

void wait_for_frame(double from_ms, double period_ms, int frame) {
  if (period_ms <= 0) return;
  const std::chrono::duration<double, std::milli> at(from_ms + period_ms * frame);
  std::this_thread::sleep_until(Clock::time_point(std::chrono::duration_cast<Clock::duration>(at)));
}

bool write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream f(path);
  if (j.is_object()) {
    nlohmann::json out = j;
    out["process_clock"] = {{"main_ms", g_process_start_ms}, {"written_ms", steady_clock_ms()}};
    f << out.dump(2) << "\n";
  } else {
    f << j.dump(2) << "\n";
  }
  return bool(f);
}

}  // namespace dlr::tools
