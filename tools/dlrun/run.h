// dlrun's work once the command line is parsed: inputs -> session -> frames ->
// detections -> outputs, then the summary. Returns the exit code (0, 1, 2 or 130).
#pragma once

#include "tools/dlrun/options.h"

namespace dlr::tools {

int run_dlrun(const Args& args);

}  // namespace dlr::tools
