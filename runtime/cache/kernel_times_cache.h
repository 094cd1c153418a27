// Kernel times measured at open (Engine::measure_layer_ms), kept per GPU and model in
// the user's cache directory (runtime/cache/cache_dir.h), so that a later open of the
// same model on the same GPU skips the measurement (several captured replays of the
// network): what is measured once per GPU and model is kept. The key hashes the
// execution plan's text (every step's op, shapes, layouts, dtypes), the precision, the
// cuDNN algorithm policy and workspace limit, and the device description (GPU name, SM
// count, driver, cuDNN version). A file that does not parse or does not fit the plan is
// ignored (and overwritten by the next measurement).
//
// The same file keeps the copy profile calibrated inside an inference
// (runtime/streaming/copy_calibration.h) beside the times: measured once per GPU and
// model too. It is tied to the probed profile it was calibrated from (a profile probed
// again, or another --copy-profile, misses) and is dropped when the kernel times are
// measured and saved again.
//
// The file of the plan cut by input channels (SliceBy::kAuto's first plan on a GPU)
// also keeps the slicing axis chosen per layer from the times of both variants
// (runtime/compile/slice_choice.h), so a later open compiles the chosen plan at once.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/compile/compile.h"
#include "runtime/core/status.h"

namespace dlr {

// The cache file of `model` (user_cache_dir()/kernel-times/<model>-<16 hex>.json).
Expected<std::string> kernel_times_path(const CompiledModel& model);
// The cached times of `model`, or an empty vector when there are none that fit.
// expand_ms (may be null): the part of them that expanded int8 weights, as kept beside
// (Engine::measure_layer_ms; empty where none is kept or it does not fit).
std::vector<double> load_kernel_times(const CompiledModel& model, std::vector<double>* expand_ms = nullptr);
// Writes the times and their expansions' part (empty: none) atomically (temporary file,
// rename). Errors name the file.
Status save_kernel_times(const CompiledModel& model, const std::vector<double>& layer_ms,
                         const std::vector<double>& expand_ms = {});
// The copy profile calibrated from `probed` kept beside the kernel times of `model`;
// false when there is none that fits (no file, other kernel-times key, calibrated from
// another probed profile, a profile that does not validate).
bool load_calibrated_profile(const CompiledModel& model, const CopyProfile& probed, CopyProfile* calibrated);
// Adds `calibrated` (from `probed`) to the file of `model`, which must hold its kernel
// times (save_kernel_times first); atomically, like save_kernel_times.
Status save_calibrated_profile(const CompiledModel& model, const CopyProfile& probed, const CopyProfile& calibrated);

// The slicing axes kept beside the kernel times of `model`; false when there are none
// that fit (no file, other key, a value that does not parse).
bool load_slice_axes(const CompiledModel& model, std::map<int, SliceAxis>* axes);
// Adds `axes` to the file of `model`, which must hold its kernel times (save_kernel_times first).
Status save_slice_axes(const CompiledModel& model, const std::map<int, SliceAxis>& axes);

}  // namespace dlr
