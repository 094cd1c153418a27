// Preparation: raw Darknet blobs of one conv layer -> inference weights.
// Batch norm is folded in double precision with eps 1e-5 exactly as Darknet's
// fuse_conv_batchnorm does (Darknet src/network.c). Works per layer so that the
// streaming engine can prepare layer by layer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"

namespace dlr {

// Prepared conv layer in fp32: weights OIHW [filters][c/groups][k][k], then bias [filters].
struct PreparedSizes {
  int64_t weights = 0;
  int64_t bias = 0;
  int64_t total() const { return weights + bias; }
};
PreparedSizes prepared_sizes(const LayerDesc& layer);  // zeros for non-conv layers

// Magnitude above which prepared (folded) fp32 values are warned about: real
// models stay below 1e3 (docs/reliability.md); the warning does not refuse.
constexpr float kWarnWeightMagnitude = 1e6f;
// Largest finite fp16 value: an fp16 run refuses prepared weights above it.
constexpr float kMaxHalf = 65504.0f;

// Fills weights_out (PreparedSizes::weights floats) and bias_out (::bias floats)
// from the raw blobs of `layer` in `file`, then checks the values in one pass
// (docs/reliability.md, refused vs warned):
// - refused (an error naming the file, layer, cfg line, blob role and element):
//   NaN or Inf in any blob, a batch-norm variance <= -0.00001 (Darknet's fold takes
//   sqrt(variance + 0.00001)), and a fold whose result overflows float;
// - warned: a variance in (-0.00001, 0), and prepared values above
//   kWarnWeightMagnitude. Warnings are appended to `warnings`, or logged
//   (DLR_LOG_WARN) when it is null.
// Non-conv layers: error.
Status prepare_conv(const LayerDesc& layer, const WeightsFile& file, float* weights_out, float* bias_out,
                    std::vector<std::string>* warnings = nullptr);

// A part of a conv layer's prepared weights, what one thread prepares at a time:
// filters [first, first + count), each restricted to its input channels
// [channel, channel + channels) (of c/groups; a whole filter: 0 and c/groups).
struct FilterRange {
  int64_t first = 0;
  int64_t count = 0;
  int64_t channel = 0;
  int64_t channels = 0;
};

// What a fold saw that is warned, not refused (fold_warnings() words it).
struct FoldCheck {
  float max_abs = 0.0f;             // largest prepared magnitude, weights or biases
  const char* max_role = "weights";  // which of the two holds it
  float max_weight = 0.0f;          // largest prepared weight magnitude (the fp16 range check)
  int64_t negative_variance = -1;   // first filter with a variance in (-0.00001, 0), or -1
  float negative_value = 0.0f;      // its variance
};

// Folds `range` of `layer` exactly as prepare_conv does: row after row of channels*k*k
// floats (OIHW within a row) to weights_out, the range's biases to bias_out (null: the
// biases are neither written nor checked). The same refusals as prepare_conv, naming
// elements by their index in the layer; what is only warned goes to *check. Reads the
// mapped file only: distinct ranges may be folded on several threads at once.
Status fold_conv_range(const LayerDesc& layer, const WeightsFile& file, const FilterRange& range, float* weights_out,
                       float* bias_out, FoldCheck* check);

// The warnings a fold's check calls for, worded as prepare_conv words them.
std::vector<std::string> fold_warnings(const LayerDesc& layer, const std::string& file, const FoldCheck& check);

// check_fp16_range over rows that fold_conv_range wrote for `range`: the first weight
// above kMaxHalf named by its index in the layer's OIHW weights.
Status check_fp16_rows(const LayerDesc& layer, const std::string& file, const FilterRange& range, const float* rows);

// For fp16 runs: an error naming the layer and the first prepared weight whose
// magnitude exceeds kMaxHalf (it would become Inf). `weights` are the prepared
// fp32 weights (PreparedSizes::weights floats); `file` names the weights file.
Status check_fp16_range(const LayerDesc& layer, const std::string& file, const float* weights);

// The same from raw arrays (bias, optional scale/mean/var, weights), for tests
// and for weight sources other than a mapped file. scale/mean/var may be null
// when the layer has no batch norm.
void fold_batchnorm(const LayerDesc& layer, const float* bias, const float* scale, const float* mean,
                    const float* var, const float* weights, float* weights_out, float* bias_out);

}  // namespace dlr
