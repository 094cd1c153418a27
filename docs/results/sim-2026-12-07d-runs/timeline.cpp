// Scratch: the simulated timeline of a compiled stream plan (units' copies and stalls).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/streaming/copy_profile_json.h"
#include "runtime/streaming/simulator.h"
using namespace dlr;
int main(int argc, char** argv) {
  // cfg size kernel_json profile_json budget format(fp|int8) runs(0|1)
  CfgOptions co; co.width = co.height = atoi(argv[2]);
  auto net = parse_network_cfg(argv[1], co);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(argv[3]));
  std::vector<double> ms = j["results"][0]["stream"]["kernel_ms_at_open"].get<std::vector<double>>();
  nlohmann::json pj = nlohmann::json::parse(std::ifstream(argv[4]));
  auto prof = copy_profile_from_json(pj, "p");
  if (!prof.ok()) { std::printf("%s\n", prof.status().to_string().c_str()); return 1; }
  Target t; t.device = DeviceKind::kCUDA; t.name = "sim"; t.map_granularity = 2 << 20; t.copy_profile = *prof;
  SessionOptions o; o.device = DeviceKind::kCUDA; o.mode = WeightMode::kStream; o.precision = Precision::kFP16;
  o.weight_format = std::string(argv[6]) == "int8" ? WeightFormat::kInt8 : WeightFormat::kFp;
  o.width = o.height = co.width; o.weight_budget = *WeightBudget::parse(argv[5]); o.staging_runs = atoi(argv[7]);
  auto m = compile(*net, t, o, ms);
  if (!m.ok()) { std::printf("%s\n", m.status().to_string().c_str()); return 1; }
  SimOptions so; so.check = true;
  SimResult r = simulate(m->plan, m->stream, *prof, ms, so);
  std::printf("latency %.3f stall %.3f violations %zu\n", r.latency_ms, r.stall_ms, r.violations.size());
  double busy = 0, prev_end = 0;
  for (const TransferUnit& u : m->stream.units) {
    double s = r.copy_start_ms[u.index], e = r.copy_end_ms[u.index];
    busy += e - s;
    std::printf("unit %2d %s %6.2f MiB blobs %3d-%3d first layer %3d: %.3f-%.3f (gap %.3f) %.1f GB/s\n", u.index,
                u.in_arena ? "arena" : "ring ", u.bytes / 1048576.0, u.first_blob, u.last_blob, u.first_layer, s, e,
                s - prev_end, u.bytes / (e - s) / 1e6);
    prev_end = e;
  }
  std::printf("copy busy %.3f ms\n", busy);
  double stall = 0, prev = 0;
  for (size_t l = 0; l < ms.size(); ++l) {
    double g = r.layer_start_ms[l] - prev;
    if (g > 0.005) std::printf("layer %3zu waits %.3f ms at %.3f\n", l, g, prev);
    if (r.layer_end_ms[l] > prev) prev = r.layer_end_ms[l];
  }
}
