// An engine's outputs as the detection post-processing reads them (runtime/detect/
// detection.h, HeadOutput): a [yolo] head's candidates where the device picked them all
// (Engine::output_rows), else the whole output (Engine::output).
#pragma once

#include <vector>

#include "runtime/detect/detection.h"
#include "runtime/engine.h"

namespace dlr {

// After run(), before threads read the outputs of images [0, n): every output layer of
// `outputs` whose candidates the device picked but, for some image, found more of than its
// rows hold, downloaded whole (Engine::download_output). Errors: the download's.
Status download_overflowed_outputs(const Engine& e, const std::vector<int>& outputs, int n);

// Output layer `l`'s result for image `image`: the device's rows where they are complete,
// else the whole output (download_overflowed_outputs first, where rows overflowed).
HeadOutput engine_head(const Engine& e, const LayerDesc& l, int image);

}  // namespace dlr
