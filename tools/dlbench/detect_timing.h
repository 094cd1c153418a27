// dlbench --detect N: the whole detection path of a configuration's session, as an
// application calls it (Session::detect_batch: 8-bit images letterboxed or resized and
// uploaded, the network, decode and NMS), timed N times after the network rows.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/image.h"
#include "runtime/core/status.h"
#include "runtime/session.h"

namespace dlr::tools {

// A 640x480 8-bit BGR image of noise, deterministic for a seed; `pixels` holds its data.
ImageU8 bench_image(std::vector<uint8_t>* pixels, int seed);

// `iters` timed detect_batch calls over `batch` bench images (one untimed first): the host
// clock of each call and the medians of its parts (Session::last_timing), as JSON.
Expected<nlohmann::json> time_detect(Session& s, int batch, int iters, uint64_t seed);

}  // namespace dlr::tools
