// calibrate_profile(): the fit of copy_calibration.h.
#include "runtime/streaming/copy_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace dlr {
namespace {

struct Sample {
  double bytes = 0;
  double ms = 0;
};

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Least squares of ms on bytes: ms = a + s * bytes. A negative intercept refits
// through the origin (a = 0). Returns false when the slope is not positive.
bool fit_line(const std::vector<Sample>& xs, double* a, double* s) {
  const double n = double(xs.size());
  double mb = 0, mt = 0;
  for (const Sample& x : xs) {
    mb += x.bytes;
    mt += x.ms;
  }
  mb /= n;
  mt /= n;
  double sbb = 0, sbt = 0;
  for (const Sample& x : xs) {
    sbb += (x.bytes - mb) * (x.bytes - mb);
    sbt += (x.bytes - mb) * (x.ms - mt);
  }
  if (!(sbb > 0)) return false;
  *s = sbt / sbb;
  *a = mt - *s * mb;
  if (*a < 0) {  // through the origin
    double bb = 0, bt = 0;
    for (const Sample& x : xs) {
      bb += x.bytes * x.bytes;
      bt += x.bytes * x.ms;
    }
    *a = 0;
    *s = bt / bb;
  }
  return *s > 0 && std::isfinite(*s);
}

std::string gb(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::string CopyCalibration::to_text() const {
  char fit[160];
  if (linear)
    std::snprintf(fit, sizeof fit, "t = %.2f us + bytes / %.1f GB/s", overhead_us, gbps);
  else
    std::snprintf(fit, sizeof fit, "t = %.3f x the probed time (sizes too alike to separate overhead and bandwidth)",
                  scale);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "copy calibration: %d units fitted (median over the runs; %d dropped), %s, %.2f us between back-to-back copies (%d gaps); "
                "at %.2f MiB %s GB/s probed -> %s GB/s calibrated%s",
                copies, dropped, fit, gap_us, gaps, double(median_bytes) / (1 << 20),
                gb(probed_gbps_at_median).c_str(), gb(calibrated_gbps_at_median).c_str(),
                floored ? " (kept at the probe where the fit was faster)" : "");
  return buf;
}

Expected<CopyCalibration> calibrate_profile(const CopyProfile& probed, const std::vector<CopyTiming>& copies,
                                            const CopyCalibrationOptions& options) {
  if (probed.pinned.empty())
    return invalid_argument("copy calibration: copy profile '" + probed.name + "' has no pinned curve");
  CopyCalibration c;
  std::vector<Sample> xs;
  std::vector<double> gaps;
  const CopyTiming* prev = nullptr;
  for (const CopyTiming& t : copies) {
    const bool usable = t.bytes > 0 && std::isfinite(t.start_ms) && std::isfinite(t.end_ms) && t.end_ms > t.start_ms;
    if (!usable) {
      ++c.dropped;
      prev = nullptr;
      continue;
    }
    xs.push_back({double(t.bytes), t.end_ms - t.start_ms});
    if (prev && t.start_ms >= prev->end_ms) {  // same run, in issue order
      const double gap_us = (t.start_ms - prev->end_ms) * 1e3;
      if (gap_us <= options.max_gap_us) gaps.push_back(gap_us);
    }
    prev = &t;
  }
  if (int(xs.size()) < std::max(options.min_copies, 2))
    return invalid_argument("copy calibration: " + std::to_string(xs.size()) + " usable copies, at least " +
                            std::to_string(std::max(options.min_copies, 2)) + " needed");
  // The same unit copied in several runs: its median duration, so that a run disturbed
  // as a whole (the host zeroing pages of a freshly exited process, measured on the H100:
  // 3 inferences timed in 86-94 ms instead of ~30, every copy ~1.5-2 x slower) counts
  // once per unit and is outvoted by the others.
  {
    std::map<std::pair<int, int64_t>, std::vector<double>> by_unit;
    for (const CopyTiming& t : copies)
      if (t.bytes > 0 && std::isfinite(t.start_ms) && std::isfinite(t.end_ms) && t.end_ms > t.start_ms)
        by_unit[{t.unit, t.bytes}].push_back(t.end_ms - t.start_ms);
    if (by_unit.size() < xs.size()) {
      xs.clear();
      for (const auto& [key, ms] : by_unit) xs.push_back({double(key.second), median_of(ms)});
    }
  }
  double lo = xs[0].bytes, hi = xs[0].bytes;
  for (const Sample& x : xs) {
    lo = std::min(lo, x.bytes);
    hi = std::max(hi, x.bytes);
  }
  c.linear = hi >= options.min_size_spread * lo;
  double a = 0, s = 0;  // ms = a + s * bytes (linear)
  // The scale fit measured copies up to `hi` bytes only: above it, the extra time of the
  // largest copied size is charged as a per-copy cost (the probe's bandwidth is kept)
  // rather than scaling a bandwidth nothing measured.
  auto model_ms = [&](double bytes) {
    if (c.linear) return a + s * bytes;
    if (bytes <= hi) return c.scale * probed.copy_ms(int64_t(bytes));
    return probed.copy_ms(int64_t(bytes)) + (c.scale - 1) * probed.copy_ms(int64_t(hi));
  };
  auto fit = [&](const std::vector<Sample>& v) -> Status {
    if (c.linear) {
      if (!fit_line(v, &a, &s))
        return invalid_argument("copy calibration: the copy time does not grow with the bytes copied (degenerate "
                                "timings)");
    } else {
      double m = 0, p = 0;
      for (const Sample& x : v) {
        m += x.ms;
        p += probed.copy_ms(int64_t(x.bytes));
      }
      if (!(p > 0 && m > 0)) return invalid_argument("copy calibration: degenerate timings");
      c.scale = m / p;
    }
    return Status();
  };
  DLR_RETURN_IF_ERROR(fit(xs));
  // One pass against outliers: copies far off the fit were delayed by something else.
  std::vector<double> res;
  for (const Sample& x : xs) res.push_back(std::fabs(x.ms - model_ms(x.bytes)));
  const double limit = std::max(3 * median_of(res), 2e-3);
  std::vector<Sample> kept;
  for (size_t i = 0; i < xs.size(); ++i)
    if (res[i] <= limit) kept.push_back(xs[i]);
  if (kept.size() < xs.size() && int(kept.size()) >= std::max(options.min_copies, 2)) {
    c.dropped += int(xs.size() - kept.size());
    xs = std::move(kept);
    DLR_RETURN_IF_ERROR(fit(xs));
  }
  c.copies = int(xs.size());
  if (c.linear) {
    c.overhead_us = a * 1e3;
    c.gbps = 1.0 / (s * 1e6);
  }
  c.gaps = int(gaps.size());
  c.gap_us = c.gaps >= options.min_gaps ? median_of(gaps) : 0.0;

  // The calibrated time of a copy, never below the probe's.
  auto calibrated_ms = [&](int64_t bytes, bool* floored) {
    const double p = probed.copy_ms(bytes);
    const double m = model_ms(double(bytes)) + c.gap_us * 1e-3;
    if (m < p && floored) *floored = true;
    return std::max(p, m);
  };
  std::vector<double> sizes;
  for (const Sample& x : xs) sizes.push_back(x.bytes);
  c.median_bytes = int64_t(median_of(sizes));
  const double probed_median_ms = probed.copy_ms(c.median_bytes);
  const double calibrated_median_ms = calibrated_ms(c.median_bytes, nullptr);
  c.probed_gbps_at_median = double(c.median_bytes) / (probed_median_ms * 1e6);
  c.calibrated_gbps_at_median = double(c.median_bytes) / (calibrated_median_ms * 1e6);
  if (calibrated_median_ms > options.max_slowdown * probed_median_ms) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "copy calibration: a %.2f MiB copy measured %.1f x slower than probed (at most %.1f x is "
                  "plausible): the timings are not trusted",
                  double(c.median_bytes) / (1 << 20), calibrated_median_ms / probed_median_ms, options.max_slowdown);
    return invalid_argument(buf);
  }

  std::vector<int64_t> points;
  for (const BandwidthPoint& p : probed.pinned) points.push_back(p.bytes);
  const int64_t top = std::max<int64_t>(probed.pinned.back().bytes, int64_t(hi));
  for (int64_t b = 1; b <= top; b *= 2)
    if (b >= probed.pinned.front().bytes) points.push_back(b);
  if (points.back() < top) points.push_back(top);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());

  c.profile = probed;
  c.profile.name = probed.name + "+calibrated";
  c.profile.pinned.clear();
  for (int64_t b : points)
    c.profile.pinned.push_back({b, double(b) / (calibrated_ms(b, &c.floored) * 1e6)});
  return c;
}

}  // namespace dlr
