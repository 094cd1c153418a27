// dlbench's table on stdout: a line per configuration (measure.h's rows), and with
// --report the top layers of each profiled run.
#pragma once

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"

namespace dlr::tools {

void print_table_header();

// One row: latency and memory, then what the row holds of stream, storage and startup
// figures; flushed.
void print_row(const nlohmann::json& row);

// --report table: for every row with a profile, its ten layers of the most kernel time
// and, when it streamed, the stall, copy bandwidth and overlap.
void print_top_layers(const nlohmann::json& rows, const NetworkDesc& net);

}  // namespace dlr::tools
