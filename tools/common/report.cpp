#include "tools/common/report.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace dlr::tools {
namespace {

using Interval = std::pair<double, double>;

// Total length of the union of intervals.
double union_ms(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  double total = 0, cur_s = 0, cur_e = -1;
  bool open = false;
  for (const auto& [s, e] : v) {
    if (e <= s) continue;
    if (!open || s > cur_e) {
      if (open) total += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (open) total += cur_e - cur_s;
  return total;
}

// Length of the intersection of two interval unions.
double overlap_ms(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> both = a;
  both.insert(both.end(), b.begin(), b.end());
  return union_ms(a) + union_ms(b) - union_ms(both);
}

}  // namespace

ReportTotals report_totals(const Engine& e) {
  ReportTotals t;
  t.latency_ms = e.last_run_ms();
  std::vector<Interval> compute, copy;
  for (const LayerTiming& l : e.layer_timings()) {
    t.stall_ms += std::max(0.0, l.stall_ms());
    compute.emplace_back(l.ready_ms, l.end_ms);
  }
  for (const CopyTiming& c : e.copy_timings()) {
    t.copied_bytes += c.bytes;
    copy.emplace_back(c.start_ms, c.end_ms);
  }
  std::vector<Interval> read;
  for (const ReadTiming& r : e.read_timings()) {
    t.read_bytes += r.bytes;
    read.emplace_back(r.start_ms, r.end_ms);
  }
  t.read_busy_ms = union_ms(read);
  t.read_gbps = t.read_busy_ms > 0 ? double(t.read_bytes) / (t.read_busy_ms * 1e6) : 0;
  t.compute_busy_ms = union_ms(compute);
  t.copy_busy_ms = union_ms(copy);
  t.copy_gbps = t.copy_busy_ms > 0 ? double(t.copied_bytes) / (t.copy_busy_ms * 1e6) : 0;
  t.overlap = t.copy_busy_ms > 0 ? overlap_ms(copy, compute) / t.copy_busy_ms : 0;
  return t;
}

nlohmann::json layer_report_json(const NetworkDesc& net, const Engine& e) {
  // Copies per step: the units whose first_layer (a step) is this step.
  const size_t n_steps = e.layer_timings().size();
  std::vector<std::pair<double, double>> copy_span(n_steps, {-1, -1});
  for (const CopyTiming& c : e.copy_timings()) {
    if (c.next_inference || c.first_layer < 0 || size_t(c.first_layer) >= n_steps) continue;
    auto& s = copy_span[size_t(c.first_layer)];
    s.first = s.first < 0 ? c.start_ms : std::min(s.first, c.start_ms);
    s.second = std::max(s.second, c.end_ms);
  }
  // Reads per step: the read units whose first_layer (a step) is this step.
  // (Reads made ahead, during the previous inference, have negative times: no -1 marker.)
  std::vector<std::pair<double, double>> read_span(n_steps, {0, 0});
  std::vector<int64_t> read_bytes(n_steps, 0);
  std::vector<char> has_read(n_steps, 0);
  for (const ReadTiming& r : e.read_timings()) {
    if (r.first_layer < 0 || size_t(r.first_layer) >= n_steps) continue;
    auto& s = read_span[size_t(r.first_layer)];
    s.first = has_read[size_t(r.first_layer)] ? std::min(s.first, r.start_ms) : r.start_ms;
    s.second = has_read[size_t(r.first_layer)] ? std::max(s.second, r.end_ms) : r.end_ms;
    has_read[size_t(r.first_layer)] = 1;
    read_bytes[size_t(r.first_layer)] += r.bytes;
  }
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerTiming& l : e.layer_timings()) {
    nlohmann::json j = {{"layer", l.layer},
                        {"type", layer_kind_name(net.layers[size_t(l.layer)].kind)},
                        {"kernel_start_ms", l.ready_ms},
                        {"kernel_end_ms", l.end_ms},
                        {"kernel_ms", l.ms()},
                        {"stall_ms", l.stall_ms()},
                        {"bytes", l.weight_bytes}};
    if (l.slice >= 0) j["slice"] = l.slice;
    const auto& cs = copy_span[size_t(l.step)];
    if (cs.first >= 0) {
      j["copy_start_ms"] = cs.first;
      j["copy_end_ms"] = cs.second;
    }
    const auto& rs = read_span[size_t(l.step)];
    if (has_read[size_t(l.step)]) {
      j["read_start_ms"] = rs.first;
      j["read_end_ms"] = rs.second;
      j["read_bytes"] = read_bytes[size_t(l.step)];
    }
    layers.push_back(j);
  }
  const ReportTotals t = report_totals(e);
  const MemoryReport m = e.memory();
  return {{"layers", layers},
          {"totals",
           {{"latency_ms", t.latency_ms},
            {"stall_ms", t.stall_ms},
            {"copied_bytes", t.copied_bytes},
            {"copy_busy_ms", t.copy_busy_ms},
            {"copy_gbps", t.copy_gbps},
            {"overlap_fraction", t.overlap},
            {"compute_busy_ms", t.compute_busy_ms},
            {"read_bytes", t.read_bytes},
            {"read_busy_ms", t.read_busy_ms},
            {"read_gbps", t.read_gbps}}},
          {"memory",
           {{"weights", m.weights}, {"activations", m.activations}, {"workspace", m.workspace}, {"other", m.other},
            {"host_weights", m.host_weights}, {"read_bytes_per_inference", m.read_bytes}}}};
}

std::string layer_report(const NetworkDesc& net, const Engine& e, const std::string& format) {
  const nlohmann::json j = layer_report_json(net, e);
  if (format == "json") return j.dump() + "\n";
  std::string s;
  char line[256];
  if (format == "csv") {
    s += "layer,type,read_start_ms,read_end_ms,read_bytes,copy_start_ms,copy_end_ms,kernel_start_ms,kernel_end_ms,"
         "stall_ms,bytes\n";
    for (const auto& l : j["layers"]) {
      std::snprintf(line, sizeof(line), "%d,%s,%.4f,%.4f,%lld,%.4f,%.4f,%.4f,%.4f,%.4f,%lld\n", l["layer"].get<int>(),
                    l["type"].get<std::string>().c_str(), l.value("read_start_ms", -1.0), l.value("read_end_ms", -1.0),
                    static_cast<long long>(l.value("read_bytes", int64_t(0))), l.value("copy_start_ms", -1.0),
                    l.value("copy_end_ms", -1.0), l["kernel_start_ms"].get<double>(), l["kernel_end_ms"].get<double>(),
                    l["stall_ms"].get<double>(), static_cast<long long>(l["bytes"].get<int64_t>()));
      s += line;
    }
    return s;
  }
  const bool reads = j["totals"]["read_bytes"].get<int64_t>() > 0;
  s += reads ? "layer type       read_start  read_end   " : "layer type       ";
  s += "copy_start  copy_end   kern_start  kern_end   kernel_ms  stall_ms   MiB\n";
  auto cell = [](const nlohmann::json& l, const char* key) {
    return l.contains(key) ? std::to_string(l[key].get<double>()).substr(0, 8) : std::string("-");
  };
  for (const auto& l : j["layers"]) {
    std::snprintf(line, sizeof(line), "%5d %-9s ", l["layer"].get<int>(), l["type"].get<std::string>().c_str());
    s += line;
    if (reads) {
      std::snprintf(line, sizeof(line), "%10s %10s ", cell(l, "read_start_ms").c_str(), cell(l, "read_end_ms").c_str());
      s += line;
    }
    std::snprintf(line, sizeof(line), "%10s %10s %10.3f %10.3f %9.3f %9.3f %6.2f\n",
                  cell(l, "copy_start_ms").c_str(), cell(l, "copy_end_ms").c_str(),
                  l["kernel_start_ms"].get<double>(), l["kernel_end_ms"].get<double>(), l["kernel_ms"].get<double>(),
                  l["stall_ms"].get<double>(), double(l["bytes"].get<int64_t>()) / (1024.0 * 1024.0));
    s += line;
  }
  const auto& t = j["totals"];
  const auto& m = j["memory"];
  std::snprintf(line, sizeof(line),
                "total: latency %.3f ms, stall %.3f ms, copied %.2f MiB in %.3f ms busy (%.1f GB/s), overlap %.0f%%\n",
                t["latency_ms"].get<double>(), t["stall_ms"].get<double>(),
                double(t["copied_bytes"].get<int64_t>()) / (1024.0 * 1024.0), t["copy_busy_ms"].get<double>(),
                t["copy_gbps"].get<double>(), 100.0 * t["overlap_fraction"].get<double>());
  s += line;
  if (reads) {
    std::snprintf(line, sizeof(line), "read: %.2f MiB in %.3f ms busy (%.2f GB/s, host clock)\n",
                  double(t["read_bytes"].get<int64_t>()) / 1048576.0, t["read_busy_ms"].get<double>(),
                  t["read_gbps"].get<double>());
    s += line;
  }
  std::snprintf(line, sizeof(line), "device memory: weights %.2f MiB, activations %.2f MiB, workspace %.2f MiB\n",
                double(m["weights"].get<int64_t>()) / 1048576.0, double(m["activations"].get<int64_t>()) / 1048576.0,
                double(m["workspace"].get<int64_t>()) / 1048576.0);
  s += line;
  return s;
}

nlohmann::json chrome_trace(const NetworkDesc& net, const Engine& e) {
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "compute"}}}});
  ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 2}, {"args", {{"name", "copy (H2D)"}}}});
  for (const LayerTiming& l : e.layer_timings()) {
    const std::string name = "L" + std::to_string(l.layer) + (l.slice >= 0 ? "/" + std::to_string(l.slice) : "") + " " +
                             layer_kind_name(net.layers[size_t(l.layer)].kind);
    if (l.stall_ms() > 0.0005)
      ev.push_back({{"name", "stall L" + std::to_string(l.layer)},
                    {"ph", "X"},
                    {"pid", 1},
                    {"tid", 1},
                    {"ts", l.start_ms * 1000.0},
                    {"dur", l.stall_ms() * 1000.0},
                    {"cname", "terrible"}});
    ev.push_back({{"name", name},
                  {"ph", "X"},
                  {"pid", 1},
                  {"tid", 1},
                  {"ts", l.ready_ms * 1000.0},
                  {"dur", std::max(0.0, l.ms()) * 1000.0},
                  {"args", {{"layer", l.layer}, {"weight_bytes", l.weight_bytes}}}});
  }
  if (!e.read_timings().empty())
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 3}, {"args", {{"name", "read (storage)"}}}});
  for (const ReadTiming& r : e.read_timings())
    ev.push_back({{"name", "read " + std::to_string(r.unit) + " (L" + std::to_string(r.first_layer) + ")"},
                  {"ph", "X"},
                  {"pid", 1},
                  {"tid", 3},
                  {"ts", r.start_ms * 1000.0},
                  {"dur", (r.end_ms - r.start_ms) * 1000.0},
                  {"args", {{"bytes", r.bytes}, {"first_layer", r.first_layer}}}});
  for (const CopyTiming& c : e.copy_timings())
    ev.push_back({{"name", "unit " + std::to_string(c.unit) + " (L" + std::to_string(c.first_layer) + ")" +
                               (c.next_inference ? " for the next inference" : "")},
                  {"ph", "X"},
                  {"pid", 1},
                  {"tid", 2},
                  {"ts", c.start_ms * 1000.0},
                  {"dur", (c.end_ms - c.start_ms) * 1000.0},
                  {"args", {{"bytes", c.bytes}, {"first_layer", c.first_layer}}}});
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

}  // namespace dlr::tools
