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

bool usable(const CopyTiming& t) {
  return t.bytes > 0 && std::isfinite(t.start_ms) && std::isfinite(t.end_ms) && t.end_ms > t.start_ms;
}

// The usable copies as samples, and the back-to-back gaps (us) between consecutive
// usable copies of a run; *dropped counts the unusable ones.
void collect(const std::vector<CopyTiming>& copies, const CopyCalibrationOptions& options, std::vector<Sample>* xs,
             std::vector<double>* gaps, int* dropped) {
  const CopyTiming* prev = nullptr;
  for (const CopyTiming& t : copies) {
    if (!usable(t)) {
      ++*dropped;
      prev = nullptr;
      continue;
    }
    xs->push_back({double(t.bytes), t.end_ms - t.start_ms});
    if (prev && t.start_ms >= prev->end_ms) {  // same run, in issue order
      const double gap_us = (t.start_ms - prev->end_ms) * 1e3;
      if (gap_us <= options.max_gap_us) gaps->push_back(gap_us);
    }
    prev = &t;
  }
}

// The same unit copied in several runs: its median duration, so that a run disturbed
// as a whole (every copy of it slower, e.g. while the host zeroes the pages of a
// process that just exited) counts once per unit and is outvoted by the others.
// Leaves *xs alone when every usable copy is a unit of its own.
void unit_medians(const std::vector<CopyTiming>& copies, std::vector<Sample>* xs) {
  std::map<std::pair<int, int64_t>, std::vector<double>> by_unit;
  for (const CopyTiming& t : copies)
    if (usable(t)) by_unit[{t.unit, t.bytes}].push_back(t.end_ms - t.start_ms);
  if (by_unit.size() >= xs->size()) return;
  xs->clear();
  for (const auto& [key, ms] : by_unit) xs->push_back({double(key.second), median_of(ms)});
}

// The model of a copy's duration (ms) fitted to samples: linear (a + s * bytes) or a
// scale of the probed curve up to `hi`, the largest copied size (above it, the extra
// time of the largest copied size is charged as a per-copy cost and the probe's
// bandwidth kept, rather than scaling a bandwidth nothing measured).
struct CopyModel {
  const CopyProfile& probed;
  bool linear = false;
  double hi = 0;
  double a = 0, s = 0;  // linear
  double scale = 0;     // scale fit

  Status fit(const std::vector<Sample>& v) {
    if (linear) {
      if (!fit_line(v, &a, &s))
        return invalid_argument("copy calibration: the copy time does not grow with the bytes copied (degenerate "
                                "timings)");
      return Status();
    }
    double m = 0, p = 0;
    for (const Sample& x : v) {
      m += x.ms;
      p += probed.copy_ms(int64_t(x.bytes));
    }
    if (!(p > 0 && m > 0)) return invalid_argument("copy calibration: degenerate timings");
    scale = m / p;
    return Status();
  }
  double ms(double bytes) const {
    if (linear) return a + s * bytes;
    if (bytes <= hi) return scale * probed.copy_ms(int64_t(bytes));
    return probed.copy_ms(int64_t(bytes)) + (scale - 1) * probed.copy_ms(int64_t(hi));
  }
};

// One pass against outliers: copies far off the fit were delayed by something else.
// Refits without them when enough copies stay; adds the dropped ones to *dropped.
Status drop_outliers(const CopyCalibrationOptions& options, CopyModel* model, std::vector<Sample>* xs, int* dropped) {
  std::vector<double> res;
  for (const Sample& x : *xs) res.push_back(std::fabs(x.ms - model->ms(x.bytes)));
  const double limit = std::max(3 * median_of(res), 2e-3);
  std::vector<Sample> kept;
  for (size_t i = 0; i < xs->size(); ++i)
    if (res[i] <= limit) kept.push_back((*xs)[i]);
  if (kept.size() < xs->size() && int(kept.size()) >= std::max(options.min_copies, 2)) {
    *dropped += int(xs->size() - kept.size());
    *xs = std::move(kept);
    DLR_RETURN_IF_ERROR(model->fit(*xs));
  }
  return Status();
}

// The calibrated curve's sizes: the probed ones and every power of two from the
// smallest probed size to the largest of the probed and copied (`hi`) sizes.
std::vector<int64_t> curve_sizes(const CopyProfile& probed, double hi) {
  std::vector<int64_t> points;
  for (const BandwidthPoint& p : probed.pinned) points.push_back(p.bytes);
  const int64_t top = std::max<int64_t>(probed.pinned.back().bytes, int64_t(hi));
  for (int64_t b = 1; b <= top; b *= 2)
    if (b >= probed.pinned.front().bytes) points.push_back(b);
  if (points.back() < top) points.push_back(top);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  return points;
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

Expected<CopyCalibration> calibrate_profile(const CopyProfile& probed, const std::vector<CopyTiming>& all,
                                            const CopyCalibrationOptions& options) {
  if (probed.pinned.empty())
    return invalid_argument("copy calibration: copy profile '" + probed.name + "' has no pinned curve");
  // The inferences' own copies: a tail copy (the next inference's unit) waits for a layer
  // and shares its unit number with a copy of the inference.
  std::vector<CopyTiming> copies;
  for (const CopyTiming& t : all)
    if (!t.next_inference) copies.push_back(t);
  CopyCalibration c;
  std::vector<Sample> xs;
  std::vector<double> gaps;
  collect(copies, options, &xs, &gaps, &c.dropped);
  if (int(xs.size()) < std::max(options.min_copies, 2))
    return invalid_argument("copy calibration: " + std::to_string(xs.size()) + " usable copies, at least " +
                            std::to_string(std::max(options.min_copies, 2)) + " needed");
  unit_medians(copies, &xs);
  double lo = xs[0].bytes, hi = xs[0].bytes;
  for (const Sample& x : xs) {
    lo = std::min(lo, x.bytes);
    hi = std::max(hi, x.bytes);
  }
  CopyModel model{probed};
  model.linear = c.linear = hi >= options.min_size_spread * lo;
  model.hi = hi;
  DLR_RETURN_IF_ERROR(model.fit(xs));
  DLR_RETURN_IF_ERROR(drop_outliers(options, &model, &xs, &c.dropped));
  c.copies = int(xs.size());
  c.scale = model.scale;
  if (c.linear) {
    c.overhead_us = model.a * 1e3;
    c.gbps = 1.0 / (model.s * 1e6);
  }
  c.gaps = int(gaps.size());
  c.gap_us = c.gaps >= options.min_gaps ? median_of(gaps) : 0.0;

  // The calibrated time of a copy, never below the probe's.
  auto calibrated_ms = [&](int64_t bytes, bool* floored) {
    const double p = probed.copy_ms(bytes);
    const double m = model.ms(double(bytes)) + c.gap_us * 1e-3;
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
  c.profile = probed;
  c.profile.name = probed.name + "+calibrated";
  c.profile.pinned.clear();
  for (int64_t b : curve_sizes(probed, hi))
    c.profile.pinned.push_back({b, double(b) / (calibrated_ms(b, &c.floored) * 1e6)});
  return c;
}

}  // namespace dlr
