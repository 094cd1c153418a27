// Copy calibration (runtime/streaming/copy_calibration.h) on synthetic copy timings:
// it recovers a known overhead, bandwidth and back-to-back gap, refuses too few or
// degenerate samples and implausible timings, never comes out faster than the probe,
// and ignores an outlier.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/streaming/copy_calibration.h"
#include "runtime/streaming/lower_bound.h"
#include "runtime/streaming/simulator.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

constexpr int64_t kMiB = 1 << 20;

// A probe much faster than the synthetic copies, so the fit is never floored.
CopyProfile fast_probe() {
  CopyProfile p;
  p.name = "probe";
  p.pinned = {{64 << 10, 40.0}, {kMiB, 90.0}, {4 * kMiB, 100.0}, {16 * kMiB, 100.0}};
  p.queue = {{16 * kMiB, 1000}};
  return p;
}

// Copies of the given sizes, `runs` times, each taking overhead + bytes / gbps, `gap_us` apart.
std::vector<CopyTiming> synthetic(const std::vector<int64_t>& sizes, double overhead_us, double gbps, double gap_us,
                                  int runs = 1) {
  std::vector<CopyTiming> v;
  for (int r = 0; r < runs; ++r) {
    double t = 0.01;
    for (size_t i = 0; i < sizes.size(); ++i) {
      CopyTiming c;
      c.unit = int(i);
      c.bytes = sizes[i];
      c.start_ms = t;
      c.end_ms = t + overhead_us * 1e-3 + double(sizes[i]) / (gbps * 1e6);
      t = c.end_ms + gap_us * 1e-3;
      v.push_back(c);
    }
  }
  return v;
}

const std::vector<int64_t> kMixed = {kMiB, 4 * kMiB, 3 * kMiB, 4 * kMiB, kMiB / 2, 4 * kMiB,
                                     kMiB, 2 * kMiB, 4 * kMiB, 3 * kMiB, kMiB,     4 * kMiB};

TEST(CopyCalibration, RecoversOverheadBandwidthAndGap) {
  const auto r = calibrate_profile(fast_probe(), synthetic(kMixed, 5.0, 50.0, 1.3, 3));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->linear);
  EXPECT_NEAR(r->overhead_us, 5.0, 0.01);
  EXPECT_NEAR(r->gbps, 50.0, 0.01);
  EXPECT_NEAR(r->gap_us, 1.3, 0.01);
  EXPECT_EQ(r->copies, int(kMixed.size())) << "one point per unit: its median over the 3 runs";
  EXPECT_EQ(r->dropped, 0);
  EXPECT_FALSE(r->floored);
  // The profile charges every copy overhead + bytes / bandwidth + gap (at its points
  // exactly, between them by the profile's log interpolation, within 1 %).
  for (int64_t b : {kMiB, 4 * kMiB, 16 * kMiB, 3 * kMiB}) {
    const double want = (5.0 + 1.3) * 1e-3 + double(b) / 50e6;
    EXPECT_NEAR(r->profile.copy_ms(b), want, want * 0.01) << b;
  }
  EXPECT_EQ(r->profile.name, "probe+calibrated");
  EXPECT_EQ(r->profile.queue.size(), 1u);
  EXPECT_EQ(r->profile.chunk_bytes, fast_probe().chunk_bytes);
  EXPECT_LT(r->profile.peak_gbps(), 50.0);
  EXPECT_NE(r->to_text().find("t = 5.00 us + bytes / 50.0 GB/s"), std::string::npos) << r->to_text();
  // The calibrated profile is a valid profile (its JSON loads back).
  const auto back = CopyProfile::from_json_text(r->profile.to_json_text(), "calibrated");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->pinned.size(), r->profile.pinned.size());
}

TEST(CopyCalibration, TailCopiesAreLeftOut) {
  const std::vector<CopyTiming> own = synthetic(kMixed, 5.0, 50.0, 1.3, 1);
  std::vector<CopyTiming> with_tail = own;
  for (int k = 0; k < 3; ++k) {  // units 0-2 again, late and 3x slower: the next inference's, behind a layer
    CopyTiming c = own[size_t(k)];
    c.start_ms = own.back().end_ms + 0.002 + k;
    c.end_ms = c.start_ms + 3 * (own[size_t(k)].end_ms - own[size_t(k)].start_ms);
    c.next_inference = true;
    with_tail.push_back(c);
  }
  const auto a = calibrate_profile(fast_probe(), own);
  const auto b = calibrate_profile(fast_probe(), with_tail);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_DOUBLE_EQ(b->overhead_us, a->overhead_us);
  EXPECT_DOUBLE_EQ(b->gbps, a->gbps);
  EXPECT_DOUBLE_EQ(b->gap_us, a->gap_us);
  EXPECT_EQ(b->copies, a->copies);
  EXPECT_EQ(b->dropped, a->dropped);
}

TEST(CopyCalibration, NeverFasterThanTheProbe) {
  CopyProfile slow = fast_probe();
  for (BandwidthPoint& p : slow.pinned) p.gbps /= 4;  // 25 GB/s at the top: the copies (50 GB/s) look faster
  const auto r = calibrate_profile(slow, synthetic(kMixed, 5.0, 50.0, 1.3));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->floored);
  for (int64_t b = 4096; b <= 256 * kMiB; b *= 2) EXPECT_GE(r->profile.copy_ms(b), slow.copy_ms(b) * (1 - 1e-9)) << b;
  EXPECT_NEAR(r->profile.peak_gbps(), slow.peak_gbps(), 1e-9);
}

TEST(CopyCalibration, EqualSizesScaleTheProbedCurve) {
  const std::vector<int64_t> same(10, 4 * kMiB);
  const CopyProfile p = fast_probe();  // 100 GB/s at 4 MiB; the copies run at half that
  const auto r = calibrate_profile(p, synthetic(same, 0.0, 50.0, 0.0));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->linear);
  EXPECT_NEAR(r->scale, 2.0, 1e-6);
  EXPECT_NEAR(r->profile.copy_ms(4 * kMiB), 2 * p.copy_ms(4 * kMiB), 1e-9);
  EXPECT_NEAR(r->profile.copy_ms(kMiB), 2 * p.copy_ms(kMiB), 1e-9);
  // Above the copied sizes: the probe's bandwidth plus the extra time seen at 4 MiB.
  EXPECT_NEAR(r->profile.copy_ms(16 * kMiB), p.copy_ms(16 * kMiB) + p.copy_ms(4 * kMiB), 1e-9);
  EXPECT_EQ(r->gap_us, 0.0);  // gaps of 0 us: median 0
}

TEST(CopyCalibration, RefusesTooFewAndDegenerateSamples) {
  const CopyProfile p = fast_probe();
  auto few = calibrate_profile(p, synthetic({kMiB, 4 * kMiB, 2 * kMiB}, 5.0, 50.0, 1.0));
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("3 usable copies, at least 8"), std::string::npos) << few.status().message();
  // Unusable copies do not count: zero bytes, end before start, NaN.
  std::vector<CopyTiming> bad = synthetic(kMixed, 5.0, 50.0, 1.0);
  for (size_t i = 0; i < 6; ++i) {
    if (i % 3 == 0) bad[i].bytes = 0;
    if (i % 3 == 1) bad[i].end_ms = bad[i].start_ms - 0.001;
    if (i % 3 == 2) bad[i].end_ms = std::nan("");
  }
  auto r = calibrate_profile(p, bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("6 usable copies"), std::string::npos) << r.status().message();
  // Time falling with size.
  std::vector<CopyTiming> falling = synthetic(kMixed, 5.0, 50.0, 1.0);
  for (CopyTiming& c : falling) c.end_ms = c.start_ms + 1.0 / double(c.bytes / 1024);
  r = calibrate_profile(p, falling);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not grow"), std::string::npos) << r.status().message();
  // A profile without a pinned curve.
  CopyProfile empty = p;
  empty.pinned.clear();
  EXPECT_FALSE(calibrate_profile(empty, synthetic(kMixed, 5.0, 50.0, 1.0)).ok());
}

TEST(CopyCalibration, RefusesImplausiblySlowCopies) {
  // 5 GB/s against a 100 GB/s probe: 20 x slower is no copy engine.
  const auto r = calibrate_profile(fast_probe(), synthetic(kMixed, 5.0, 5.0, 1.0));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not trusted"), std::string::npos) << r.status().message();
}

TEST(CopyCalibration, DropsAnOutlierAndGapsAcrossRuns) {
  std::vector<CopyTiming> v = synthetic(kMixed, 5.0, 50.0, 1.3, 2);
  // One copy delayed by 200 us (shifted later copies of its run do not matter for durations).
  v[3].end_ms += 0.2;
  const auto r = calibrate_profile(fast_probe(), v);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->dropped, 1);
  EXPECT_NEAR(r->gbps, 50.0, 0.01);
  EXPECT_NEAR(r->overhead_us, 5.0, 0.01);
  // The second run starts before the first ends (times restart): no gap across it;
  // gaps longer than max_gap_us (a copy waiting for a layer) are not back-to-back.
  std::vector<CopyTiming> w = synthetic(kMixed, 5.0, 50.0, 20.0, 2);
  const auto g = calibrate_profile(fast_probe(), w);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->gaps, 0);
  EXPECT_EQ(g->gap_us, 0.0);
}

TEST(CopyCalibration, RunsDisturbedAsAWholeAreOutvotedPerUnit) {
  // Five runs of the same units; two of them with every copy twice as slow (the host
  // busy elsewhere): the per-unit medians are the three clean runs' values.
  std::vector<CopyTiming> v = synthetic(kMixed, 5.0, 50.0, 1.3, 5);
  for (size_t i = 0; i < v.size(); ++i)
    if (i / kMixed.size() == 1 || i / kMixed.size() == 3) v[i].end_ms += v[i].end_ms - v[i].start_ms;
  const auto r = calibrate_profile(fast_probe(), v);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_NEAR(r->gbps, 50.0, 0.01);
  EXPECT_NEAR(r->overhead_us, 5.0, 0.01);
  EXPECT_EQ(r->copies, int(kMixed.size())) << "one sample per unit";
  // Without the repeated units (every copy its own unit) the slow runs pull the fit.
  for (size_t i = 0; i < v.size(); ++i) v[i].unit = int(i);
  const auto pooled = calibrate_profile(fast_probe(), v);
  ASSERT_TRUE(pooled.ok()) << pooled.status().to_string();
  EXPECT_LT(pooled->gbps, 45.0);
}

// The compile step with a calibrated profile (what Session::calibrate_copies does):
// deterministic, within the budget, the plan passes the simulator's checks under the
// calibrated cost; the lower bound stays the probed profile's and the calibrated bound
// is reported beside it; JSON round trip keeps both profiles.
TEST(CopyCalibration, CompileWithACalibratedProfile) {
  Expected<NetworkDesc> net = parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  Target probed;
  probed.device = DeviceKind::kCUDA;
  probed.name = "hand-made H100-like target";
  probed.map_granularity = int64_t(2) << 20;
  probed.copy_profile = *CopyProfile::builtin("h100");
  // In-inference copies 20 % slower than the probe's peak, 6 us per copy.
  const auto cal = calibrate_profile(probed.copy_profile, synthetic(kMixed, 6.0, 44.0, 1.3, 2));
  ASSERT_TRUE(cal.ok()) << cal.status().to_string();
  Target calibrated = probed;
  calibrated.probed_copy_profile = probed.copy_profile;
  calibrated.copy_profile = cal->profile;
  ASSERT_TRUE(calibrated.copy_calibrated());
  ASSERT_FALSE(probed.copy_calibrated());

  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.mode = WeightMode::kStream;
  const auto first = compile(*net, probed, o);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const std::vector<double> ms = model_layer_ms(*net, first->plan, 80000.0, 1500.0, 3.0);
  for (const char* budget : {"min", "75%", "90%", "auto"}) {
    o.weight_budget = *WeightBudget::parse(budget);
    const auto a = compile(*net, calibrated, o, ms);
    const auto b = compile(*net, calibrated, o, ms);
    const auto p = compile(*net, probed, o, ms);
    ASSERT_TRUE(a.ok()) << budget << ": " << a.status().to_string();
    ASSERT_TRUE(b.ok() && p.ok()) << budget;
    EXPECT_EQ(compiled_model_to_json(*a), compiled_model_to_json(*b)) << budget << ": not deterministic";
    if (a->budget_bytes > 0) {
      EXPECT_LE(a->device_weight_bytes(), a->budget_bytes) << budget;
    }
    const SimResult sim = simulate(a->plan, a->stream, cal->profile, ms);
    EXPECT_TRUE(sim.violations.empty()) << budget << ": " << (sim.violations.empty() ? "" : sim.violations[0]);
    EXPECT_DOUBLE_EQ(sim.latency_ms, a->predicted_ms) << budget;
    if (a->stream.resident) continue;
    // The bound: the probed profile's (a true bound), the calibrated one beside it.
    const int64_t budget_bytes = std::max(a->budget_bytes, a->stream.device_bytes());
    const auto lb = latency_lower_bound(a->plan, ms, probed.copy_profile, budget_bytes, probed.map_granularity);
    ASSERT_TRUE(lb.ok());
    EXPECT_DOUBLE_EQ(a->lower_bound_ms, lb->ms) << budget;
    EXPECT_GE(a->lower_bound_calibrated_ms, a->lower_bound_ms) << budget;
    EXPECT_GE(a->predicted_ms + 1e-9, a->lower_bound_calibrated_ms) << budget;
    EXPECT_EQ(p->lower_bound_calibrated_ms, 0.0) << budget;
    EXPECT_NE(a->to_text().find("lower bound, calibrated copies"), std::string::npos) << budget;
    const std::string json = compiled_model_to_json(*a);
    const auto back = compiled_model_from_json(json, "calibrated.json");
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(compiled_model_to_json(*back), json);
    EXPECT_TRUE(back->target.copy_calibrated());
    EXPECT_EQ(back->target.probed_copy_profile.to_json_text(), probed.copy_profile.to_json_text());
    EXPECT_EQ(back->lower_bound_calibrated_ms, a->lower_bound_calibrated_ms);
  }
}

}  // namespace
}  // namespace dlr
