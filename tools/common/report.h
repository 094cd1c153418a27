// Per-layer timing reports of the last inference (table, csv, json) and a
// Chrome/Perfetto trace with a compute lane and a copy lane. Read after the
// inference from events recorded during it (the schedule is not changed).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/engine.h"
#include "loaders/network_desc.h"

namespace dlr::tools {

struct ReportTotals {
  double latency_ms = 0;      // network time of the run
  double stall_ms = 0;        // compute waiting for weights
  int64_t copied_bytes = 0;
  double copy_busy_ms = 0;    // union of copy intervals
  double copy_gbps = 0;       // copied bytes / copy busy time
  double overlap = 0;         // fraction of copy busy time during which compute was busy
  double compute_busy_ms = 0;
  int64_t read_bytes = 0;     // weights from storage: bytes read
  double read_busy_ms = 0;    // union of read intervals (host clock)
  double read_gbps = 0;       // read bytes / read busy time
};

ReportTotals report_totals(const Engine& e);
// format: "table", "csv" or "json"; the text ends with a newline.
std::string layer_report(const NetworkDesc& net, const Engine& e, const std::string& format);
nlohmann::json layer_report_json(const NetworkDesc& net, const Engine& e);
// Chrome trace JSON ("traceEvents"), pid 1, lanes "compute", "copy (H2D)" and, with
// weights from storage, "read (storage)" (host clock: when the reader submitted a
// unit's first request and saw its last land).
nlohmann::json chrome_trace(const NetworkDesc& net, const Engine& e);

}  // namespace dlr::tools
