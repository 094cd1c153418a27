// Fixtures for tests of prepared weights and plans: a small network with synthetic
// weights opened as a WeightsFile, and a hand-made GPU target for compiling without a GPU.
#pragma once

#include <string>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "runtime/compile/compile.h"
#include "runtime/core/status.h"

namespace dlr::test {

struct OpenedWeights {
  NetworkDesc net;
  Expected<WeightsFile> file = invalid_argument("not opened");
};

// yolov4-tiny @256 with synthetic weights written to temp_dir()/`name`; false (with the
// failures recorded) when the shared cfg is absent or a step fails.
bool open_tiny_weights(OpenedWeights* m, const std::string& name);

// Options for a CUDA plan of `precision`, `layout` (-1 auto, 0 NCHW, 1 NHWC), slot and
// slicing axis, with weights in `format`.
SessionOptions cuda_plan_options(Precision precision, int layout, int64_t slot, SliceBy by,
                                 WeightFormat format = WeightFormat::kFp);

// plan_for_prepare(net, o), or an empty plan with the failure recorded.
ExecutionPlan prepared_plan(const NetworkDesc& net, const SessionOptions& o);

// An H100-like CUDA target (80 GiB, 2 MiB mapping, the built-in h100 copy profile).
Target h100_like_target();

}  // namespace dlr::test
