// Scratch: the simulated timeline of int8 yolov4 at the minimum pool from a dlbench row
// (kernel_ms_at_open, expand_ms_at_open, stream.copy_profile), one line per step.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/streaming/copy_profile_json.h"
#include "runtime/streaming/simulator.h"
using namespace dlr;
int main(int argc, char** argv) {
  // cfg row_json stage(0|1) budget
  CfgOptions co; co.width = co.height = 608;
  auto net = parse_network_cfg(argv[1], co);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(argv[2]));
  const auto& st = j["results"][0]["stream"];
  CompileInputs in;
  in.layer_ms = st["kernel_ms_at_open"].get<std::vector<double>>();
  in.expand_ms = st["expand_ms_at_open"].get<std::vector<double>>();
  auto prof = copy_profile_from_json(st["copy_profile"], "p");
  Target t; t.device = DeviceKind::kCUDA; t.name = "sim"; t.map_granularity = 2 << 20; t.copy_profile = *prof;
  SessionOptions o; o.device = DeviceKind::kCUDA; o.mode = WeightMode::kStream; o.precision = Precision::kFP16;
  o.weight_format = WeightFormat::kInt8; o.width = o.height = 608; o.weight_budget = *WeightBudget::parse(argv[4]);
  o.expansion_stage = atoi(argv[3]);
  auto m = compile(*net, t, o, in);
  if (!m.ok()) { std::printf("%s\n", m.status().to_string().c_str()); return 1; }
  SimOptions so; so.expand_ms = o.expansion_stage ? in.expand_ms : std::vector<double>();
  SimResult r = simulate(m->plan, m->stream, *prof, in.layer_ms, so);
  std::printf("# latency %.4f predicted %.4f units %zu violations %zu\n", r.latency_ms, m->predicted_ms,
              m->stream.units.size(), r.violations.size());
  for (const Step& s : m->plan.steps) {
    int u = s.weight >= 0 ? m->stream.blob_last_unit[s.weight] : -1;
    std::printf("%d %d %.4f %.4f %.4f %.4f %d %.4f %.4f\n", s.index, s.layer, r.layer_start_ms[s.index],
                r.layer_end_ms[s.index], so.expand_ms.empty() ? 0.0 : r.expand_end_ms[s.index],
                u >= 0 ? r.copy_end_ms[u] : 0.0, u, in.layer_ms[s.index], in.expand_ms[s.index]);
  }
}
