// Copy calibration: the cost of a host-to-device weight copy as measured inside
// streamed inferences (per-copy CUDA events, Engine::copy_timings()), fitted and
// turned into a CopyProfile that the simulator and the planner use in place of the
// profile probed on an idle GPU (dlprobe, runtime/cuda/copy_probe.h). Plain C++ (no
// CUDA); docs/streaming.md section 6 has the reasoning and what the data say.
//
// The model of one copy of b bytes inside an inference:
//   occupancy(b) = overhead + b / bandwidth + gap
// where overhead + b / bandwidth is the event-timed duration (least squares over the
// copies) and gap the idle time of the copy engine between two back-to-back copies
// (the median of the short gaps between consecutive copies; the simulator starts a
// queued copy when the previous one ends, so the gap belongs to every copy's cost).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/report.h"
#include "runtime/streaming/copy_profile.h"

namespace dlr {

struct CopyCalibrationOptions {
  int min_copies = 8;            // fewer usable copies: an error (nothing is fitted from a handful)
  // Largest / smallest copy size at least this: overhead and bandwidth are fitted
  // (two parameters); below it they are not separable, and the probed curve's shape is
  // kept with one measured scale factor.
  double min_size_spread = 2.0;
  double max_gap_us = 5.0;       // gaps between consecutive copies up to this are back-to-back
  int min_gaps = 3;              // fewer back-to-back gaps: gap 0
  // The calibrated time of the median-size copy at most this many times the probed
  // one: slower is not a copy engine but broken timing (a preempted or contended
  // device), and is refused.
  double max_slowdown = 4.0;
};

struct CopyCalibration {
  CopyProfile profile;          // the calibrated profile (name: the probed one's + "+calibrated")
  int copies = 0;               // points fitted: one per unit (its median over the runs), after dropping outliers
  int dropped = 0;              // unusable (no bytes, end <= start, not finite) or outliers
  bool linear = false;          // true: overhead and bandwidth fitted; false: a scale of the probed curve
  double overhead_us = 0;       // fitted duration intercept, >= 0 (linear)
  double gbps = 0;              // fitted bandwidth, 1e9 B/s (linear)
  double scale = 0;             // measured / probed duration (scale fit)
  double gap_us = 0;            // back-to-back idle time added to every copy
  int gaps = 0;                 // back-to-back gaps seen
  int64_t median_bytes = 0;     // the median copy size
  double probed_gbps_at_median = 0, calibrated_gbps_at_median = 0;
  bool floored = false;         // the fit was faster than the probe somewhere: the probe kept there
  std::string to_text() const;  // one line for the log and --print-plan
};

// Fits the copies (from one or several inferences, each inference's copies in issue
// order; a copy that starts before the previous one ends begins a new inference, so
// no gap is taken across runs) and returns `probed` with its pinned curve replaced.
// Rules:
//  - usable copies: bytes > 0, finite times, end > start; the others are dropped;
//    fewer than min_copies usable: an error;
//  - the fit: ordinary least squares of duration on bytes when the sizes spread by
//    min_size_spread or more; a negative intercept refits through the origin; a slope
//    <= 0 (time not growing with bytes) is an error; one pass then drops copies whose
//    residual exceeds max(3 x the median absolute residual, 2 us) (a copy delayed by
//    something else) and fits again. Sizes spread less: one scale factor on the probed
//    durations (sum measured / sum probed) up to the largest copied size; above it the
//    probed time plus the extra time the scale gives the largest copied size (a
//    per-copy cost: nothing measured a bandwidth there);
//  - gap: the median of the gaps in [0, max_gap_us] between consecutive copies of a
//    run, 0 with fewer than min_gaps of them;
//  - floor: a calibrated copy is never faster than the probed one of the same size
//    (the probe measured the copy engine alone: faster in an inference is timing
//    noise, not physics), so calibration can only slow the curve;
//  - the curve: pinned points at the probed sizes and every power of two between the
//    smallest probed size and the largest of the probed and copied sizes, bandwidth
//    b / time(b); queue, call cost, chunk, minimal unit, pageable curve and storage are
//    the probed profile's;
//  - an error when the median-size copy comes out more than max_slowdown x the probe,
//    or when `probed` has no pinned curve;
//  - tail copies (CopyTiming::next_inference) are left out.
Expected<CopyCalibration> calibrate_profile(const CopyProfile& probed, const std::vector<CopyTiming>& copies,
                                            const CopyCalibrationOptions& options = {});

}  // namespace dlr
