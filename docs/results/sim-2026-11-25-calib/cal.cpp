// Fits the copies of a trace (one "bytes start_ms end_ms" line per copy) with
// calibrate_profile and writes the calibrated profile. A record of how cal_*.json were
// made: g++ -std=c++17 -I. docs/results/sim-2026-11-25-calib/cal.cpp build-cpu/runtime/libdlr_runtime.a
// build-cpu/runtime/core/libdlr_core.a -o cal; ./cal PROBE.json COPIES.txt OUT.json
#include <cstdio>
#include <fstream>
#include "runtime/streaming/copy_calibration.h"
using namespace dlr;
int main(int argc, char** argv) {
  auto probed = CopyProfile::load(argv[1]);
  if (!probed.ok()) { std::printf("%s\n", probed.status().message().c_str()); return 1; }
  std::vector<CopyTiming> v; std::ifstream f(argv[2]); CopyTiming c;
  while (f >> c.bytes >> c.start_ms >> c.end_ms) v.push_back(c);
  auto r = calibrate_profile(*probed, v);
  if (!r.ok()) { std::printf("%s\n", r.status().message().c_str()); return 1; }
  std::printf("%s\n", r->to_text().c_str());
  for (auto& p : r->profile.pinned) std::printf("  %lld %.2f (probe %.2f)\n", (long long)p.bytes, p.gbps, p.bytes / (probed->copy_ms(p.bytes) * 1e6));
  return r->profile.save(argv[3]).ok() ? 0 : 1;
}
